// The thread that frees released pool states (PoolFilterState.release(), pool_release.cc): one for the
// process, started on first use at the populating thread's lower priority. At the event loop's, the
// munmap's CPU preempted the event loop on the project's busy 2-core VM (the release() call held it
// 2-3 ms in 2 calls of 10, with involuntary context switches only; 0.03-0.16 ms from this thread); it
// is SCHED_BATCH besides, as release()'s caller wakes it (background::NoWakeupPreemption).
// States are freed one after another, each with every table unmapped there (pages::UnmapOnCaller:
// none is left to the populating thread), and each job's owner told once its state is gone. No other
// thread waits for it: a libuv worker that did held one of libuv's 4 threads per pending release.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "pool/pool_filter_state.h"

namespace kvrelay {

class PoolReleaser {
 public:
  // Called on the releaser's thread once the state is freed; the releaser's last use of `arg`.
  using Freed = void (*)(void* arg);

  static PoolReleaser& Instance();
  // Takes `state` to free it on the releaser's thread, then calls freed(arg) there. false, `state`
  // left to the caller: the thread could not be started.
  bool Queue(std::unique_ptr<pool::PoolFilterState>& state, Freed freed, void* arg);
  // Frees `state` on the calling thread, with every table unmapped there.
  static void Unmap(std::unique_ptr<pool::PoolFilterState> state);
  // For tests: while held, the thread frees nothing (queued states wait in the queue).
  void Hold(bool held);

 private:
  struct Job {
    std::unique_ptr<pool::PoolFilterState> state;
    Freed freed;
    void* arg;
  };
  PoolReleaser() = default;
  void Run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool started_ = false;
  bool held_ = false;
};

// For tests: releases whose environment tears down and waits for the releaser to free their state
// (pool_release.cc).
int ReleasesHoldingTeardown();

}  // namespace kvrelay
