// A process-wide helper thread started on first use and never joined (its owner is a never-destroyed
// singleton, so the thread outlives static destruction), lowered to nice 10: the page-populating
// thread and the pool releaser do bulk memory work that must not preempt the event loop or an ingest
// thread on a small machine.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <system_error>
#include <thread>
#include <utility>

namespace kvrelay::background {

// Lowers the calling thread's priority (Linux: per thread).
inline void LowerPriority() { setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10); }

// Under its owner's mutex: starts `run` on a detached thread once. false: it could not be started.
template <typename Run>
bool StartOnce(bool& started, Run run) {
  if (started) return true;
  try {
    std::thread(std::move(run)).detach();
  } catch (const std::system_error&) {
    return false;
  }
  started = true;
  return true;
}

}  // namespace kvrelay::background
