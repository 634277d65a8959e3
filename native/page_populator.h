// Faulting a fresh mapping's pages in on a background thread (MADV_POPULATE_WRITE), so that their
// first touch (zeroing; on the project's VM the host backs each fresh page then, ~1.5 ms per MiB) does
// not land on the thread that will use the memory: ZeroedBuffer::PopulateInBackground.
#pragma once
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it, and the pages fault in on use
#endif

namespace kvrelay {
namespace pages {
// A mapping whose pages the populating thread faults in. That thread only calls madvise on it, never
// touches the memory; a buffer freed first hands the munmap to it.
struct Populating {
  std::atomic<bool> done{false};
  bool cancelled = false;  // guarded by Populator::mutex_: stop faulting pages in
  bool orphaned = false;   // and unmap it when done
  void* base = nullptr;
  size_t length = 0;
};

// One thread for every buffer, at a lower priority than the caller's: with a thread per buffer, the
// 64 lineage tables of a pool growing in step ran 64 threads against the event loop on 2 cores and
// starved it (a 4096-block apply took 200 ms). Faults in 2 MiB (a huge page) per madvise, so that the
// caller's own mmap and munmap calls never wait long for the address-space lock.
class Populator {
 public:
  static Populator& Instance() {
    static Populator* instance = new Populator();  // never destroyed: its thread outlives statics
    return *instance;
  }
  // false: no thread could be started (the pages then fault in on use).
  bool Add(const std::shared_ptr<Populating>& job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_) {
      try {
        std::thread([this] { Run(); }).detach();
      } catch (const std::system_error&) {
        return false;
      }
      started_ = true;
    }
    jobs_.push_back(job);
    ready_.notify_one();
    return true;
  }
  // Called by a buffer being freed: true if its job is not done, and the thread now unmaps it.
  bool Orphan(Populating* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (job->done.load(std::memory_order_relaxed)) return false;
    job->cancelled = true;
    job->orphaned = true;
    return true;
  }
  // Called by a buffer giving pages back: the rest of it is not wanted any more.
  void Cancel(Populating* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    job->cancelled = true;
  }

 private:
  static constexpr size_t kChunk = size_t{2} << 20;

  void Run() {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    for (;;) {
      std::shared_ptr<Populating> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      char* base = static_cast<char*>(job->base);
      for (size_t at = 0; at < job->length; at += kChunk) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (job->cancelled) break;
        }
        if (madvise(base + at, std::min(kChunk, job->length - at), MADV_POPULATE_WRITE) != 0) break;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      job->done.store(true, std::memory_order_release);
      if (job->orphaned) munmap(job->base, job->length);
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Populating>> jobs_;
  bool started_ = false;
};
}  // namespace pages
}  // namespace kvrelay
