// A process-wide helper thread started on first use and never joined (its owner is a never-destroyed
// singleton, so the thread outlives static destruction), lowered to nice 10: the page-populating
// thread and the pool releaser do bulk memory work that must not preempt the event loop or an ingest
// thread on a small machine.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <system_error>
#include <thread>
#include <utility>

namespace kvrelay::background {

// Lowers the calling thread's priority (Linux: per thread).
inline void LowerPriority() { setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10); }

// Makes the calling thread SCHED_BATCH (its nice value kept): woken, it waits for the scheduler's tick
// instead of preempting the thread running where it woke up. The pool releaser is woken by the thread
// that called release() (the event loop, or an ingest thread), and the scheduler tends to wake a thread
// on its waker's CPU: at nice 10 alone it still took that CPU at once in 20 releases of 36 on the
// project's 2-core VM, holding the release() call 0.9-5.2 ms (bench/pool-release); as SCHED_BATCH, none
// of 36 above 0.12 ms. Best effort: the policy stays as it was where the call fails.
inline void NoWakeupPreemption() {
  const sched_param param{};
  sched_setscheduler(0, SCHED_BATCH, &param);
}

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
