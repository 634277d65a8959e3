// Faulting a fresh mapping's pages in on a background thread, so that their first touch (zeroing; on
// the project's VM the host backs each fresh page then, ~1.5 ms per MiB) does not land on the thread
// that will use the memory: ZeroedBuffer::PopulateInBackground.
#pragma once
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace kvrelay {
namespace pages {
// A mapping whose pages the populating thread faults in. The mapping stays until that thread is done
// with it: a buffer freed first hands the munmap to it.
struct Populating {
  std::atomic<bool> done{false};
  bool cancelled = false;  // guarded by Populator::mutex_: stop faulting pages in
  bool orphaned = false;   // and unmap it when done
  void* base = nullptr;
  size_t length = 0;
};

// One thread for every buffer, at a lower priority than the caller's: with a thread per buffer, the
// 64 lineage tables of a pool growing in step ran 64 threads against the event loop on 2 cores and
// starved it (a 4096-block apply took 200 ms).
//
// It faults pages in by touching them, not with madvise(MADV_POPULATE_WRITE): that call holds the
// process's address-space lock (mmap_lock) for reading while it faults, and ran back to back it kept
// every other thread's mmap and munmap (V8's heap, malloc's large blocks, ZMQ) waiting 15-50 ms each
// on the project's VM, and the page faults queued behind those: the relay's main, ingest and apply
// threads all stood still for 40-60 ms while one table's successor was populated. A touch faults
// under the mapping's own lock (per-VMA locks, Linux 6.4), so nothing else waits (0.2 ms at most for
// the same mmap/munmap loop).
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
    ready_.notify_all();  // a held thread waiting on this job lets it go
    return true;
  }
  // Called by a buffer giving pages back: the rest of it is not wanted any more.
  void Cancel(Populating* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    job->cancelled = true;
    ready_.notify_all();
  }
  // Around the caller's own mmap, munmap and madvise calls (AddressSpaceChange): where a fault still
  // holds what such a call needs (the address-space lock on kernels without per-VMA locks, or the
  // mapping itself when a new one merges with it), the call waits for a huge page's fault (~4 ms on
  // the project's VM), so the thread starts no new page until they are done. A growth's few buffers
  // so waited ~50 ms in all, one page per call, on the thread that applies the pool's events.
  void Pause() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++pausers_;
  }
  void Resume() {
    std::lock_guard<std::mutex> lock(mutex_);
    --pausers_;
    ready_.notify_all();
  }
  // For tests: while held, the thread faults nothing in (a successor then stays unpopulated, as on a
  // machine whose population lags the inserts).
  void Hold(bool held) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = held;
    ready_.notify_all();
  }
  // For tests: returns once every job added so far is done (not held), or false after `timeout`.
  template <typename Duration>
  bool WaitIdle(Duration timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return idle_.wait_for(lock, timeout, [this] { return jobs_.empty() && !busy_; });
  }

 private:
  static constexpr size_t kChunk = size_t{2} << 20;
  static constexpr size_t kSmallPage = size_t{4} << 10;

  // Faults [base, base + length) in for writing without changing a byte, even where the owner
  // already uses the memory (a table that had to move to its successor before it was populated): a
  // compare-and-swap of 0 for 0 writes only a word that is 0, atomically, and one that is not was
  // written already, so its page is in. A plain read would map the shared zero page instead.
  static void Touch(char* base, size_t length) {
    for (size_t at = 0; at < length; at += kSmallPage) {
      uint64_t expected = 0;
      __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(base + at), &expected, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
  }

  void Run() {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    for (;;) {
      std::shared_ptr<Populating> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !jobs_.empty() && Free(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
        busy_ = true;
      }
      char* base = static_cast<char*>(job->base);
      for (size_t at = 0; at < job->length; at += kChunk) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          ready_.wait(lock, [this, &job] { return Free() || job->cancelled; });
          if (job->cancelled) break;
        }
        Touch(base + at, std::min(kChunk, job->length - at));
      }
      std::lock_guard<std::mutex> lock(mutex_);
      job->done.store(true, std::memory_order_release);
      if (job->orphaned) munmap(job->base, job->length);
      busy_ = false;
      idle_.notify_all();
    }
  }

  // Under mutex_: neither held by a test nor paused around an address-space change.
  bool Free() const { return !held_ && pausers_ == 0; }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::deque<std::shared_ptr<Populating>> jobs_;
  bool started_ = false;
  bool held_ = false;
  bool busy_ = false;  // a job taken from jobs_ and not done yet
  int pausers_ = 0;
};

// Scope of the caller's address-space changes (see Populator::Pause).
class AddressSpaceChange {
 public:
  AddressSpaceChange() { Populator::Instance().Pause(); }
  ~AddressSpaceChange() { Populator::Instance().Resume(); }
  AddressSpaceChange(const AddressSpaceChange&) = delete;
  AddressSpaceChange& operator=(const AddressSpaceChange&) = delete;
};
}  // namespace pages
}  // namespace kvrelay
