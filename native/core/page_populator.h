// Faulting a fresh mapping's pages in on a background thread, so that their first touch (zeroing; on
// the project's VM the host backs each fresh page then, ~1.5 ms per MiB) does not land on the thread
// that will use the memory: ZeroedBuffer::PopulateInBackground. Where a drained table's huge pages are
// still kept (WarmPages), the thread moves them in and zeroes them instead.
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/background_thread.h"
#include "core/warm_pages.h"

namespace kvrelay {
namespace pages {
// A mapping whose pages the populating thread faults in. The mapping stays until that thread is done
// with it: a buffer freed first hands the munmap to it.
struct Populating {
  std::atomic<bool> done{false};
  // Guarded by Populator::mutex_:
  bool cancelled = false;  // stop faulting pages in
  bool orphaned = false;   // and unmap it (from unmapFrom) when done
  bool inUse = false;      // the owner writes into it: no kept page may replace one of its pages now
  bool replacing = false;  // the thread is moving a kept page into it
  size_t unmapFrom = 0;    // bytes at the front no longer the buffer's (given to WarmPages)
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
    if (!Start()) return false;
    jobs_.push_back(job);
    ready_.notify_one();
    return true;
  }
  // Called by a buffer being freed: true if its job is not done, and the thread now unmaps it from
  // `unmapFrom` (what the buffer did not give to Keep).
  bool Orphan(Populating* job, size_t unmapFrom) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (job->done.load(std::memory_order_relaxed)) return false;
    job->cancelled = true;
    job->orphaned = true;
    job->unmapFrom = unmapFrom;
    ready_.notify_all();  // a held thread waiting on this job lets it go
    return true;
  }
  // Called by a buffer being freed by a caller that unmaps it itself (UnmapOnCaller): returns once the
  // thread will not touch the buffer again. A job still queued leaves the queue; one under way stops
  // at its next huge page (a few ms at most), which the caller waits for.
  void Withdraw(Populating* job) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (job->done.load(std::memory_order_relaxed)) return;
    job->cancelled = true;
    const auto queued = std::find_if(jobs_.begin(), jobs_.end(), [job](const std::shared_ptr<Populating>& j) { return j.get() == job; });
    if (queued != jobs_.end()) {
      jobs_.erase(queued);
      job->done.store(true, std::memory_order_release);
      idle_.notify_all();
      return;
    }
    ready_.notify_all();  // a held or paused thread lets it go
    idle_.wait(lock, [job] { return job->done.load(std::memory_order_relaxed); });
  }
  // Called by a buffer giving pages back: the rest of it is not wanted any more. Returns once no kept
  // page is being moved into it.
  void Cancel(Populating* job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job->cancelled = true;
    ready_.notify_all();
    replaced_.wait(lock, [job] { return !job->replacing; });
  }
  // Called by a buffer's owner before it first writes into it: from now on the thread only touches
  // its pages (which keeps every word), and a kept page being moved in is in and zeroed on return.
  void Use(Populating* job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job->inUse = true;
    replaced_.wait(lock, [job] { return !job->replacing; });
  }
  // Takes [base, base + length) (whole huge pages at a huge-page boundary, no longer used by their
  // buffer) into WarmPages: the thread moves them into a later buffer or unmaps them. false: no thread
  // could be started, and the caller still owns the range.
  bool Keep(void* base, size_t length) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!Start()) return false;
    warm_.Keep(static_cast<char*>(base), length, WarmPages::Clock::now());
    ready_.notify_all();  // the thread schedules their expiry
    return true;
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
    Update([&] { held_ = held; });
  }
  // For tests: returns once every job added so far is done (not held), or false after `timeout`.
  template <typename Duration>
  bool WaitIdle(Duration timeout) {
    return WaitFor(timeout, [this] { return jobs_.empty() && !busy_; });
  }
  // Huge pages the thread populated since it started: touched (fresh), replaced by a kept one, and
  // kept ones it unmapped unused.
  struct Counts {
    uint64_t touched = 0;
    uint64_t replaced = 0;
    uint64_t expired = 0;
  };
  Counts GetCounts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }
  // Bytes kept in WarmPages now (the relay's kept-page gauge: RSS that no pool's tables account).
  size_t WarmBytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return warm_.Bytes();
  }
  // For tests and benches: how long a kept page waits for a buffer; and a wait until none is kept
  // (false after `timeout`).
  void SetWarmHold(std::chrono::milliseconds hold) {
    Update([&] { warmHold_ = hold; });
  }
  template <typename Duration>
  bool WaitWarmEmpty(Duration timeout) {
    return WaitFor(timeout, [this] { return warm_.empty() && !unmapping_; });
  }

 private:
  // A huge page at a time: a kept one replaces a chunk whole.
  static constexpr size_t kChunk = WarmPages::kPiece;

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

  // A test hook's change, under mutex_; the thread looks at it again.
  template <typename Change>
  void Update(Change change) {
    std::lock_guard<std::mutex> lock(mutex_);
    change();
    ready_.notify_all();
  }
  // Waits until `done` holds (under mutex_; idle_ is notified whenever it may have changed).
  template <typename Duration, typename Done>
  bool WaitFor(Duration timeout, Done done) {
    std::unique_lock<std::mutex> lock(mutex_);
    return idle_.wait_for(lock, timeout, done);
  }

  // Under mutex_: starts the thread once. false: it could not be started.
  bool Start() { return background::StartOnce(started_, [this] { Run(); }); }

  // Moves a kept huge page over `target` (a huge page of a buffer its owner does not use yet) and
  // zeroes it. A move that fails leaves the target as it was: it is touched instead.
  static void Replace(char* piece, char* target) {
    if (mremap(piece, kChunk, kChunk, MREMAP_MAYMOVE | MREMAP_FIXED, target) == MAP_FAILED) {
      munmap(piece, kChunk);
      Touch(target, kChunk);
      return;
    }
    std::memset(target, 0, kChunk);
  }

  // Under `lock`, the thread free: unmaps the kept pages that expired (the lock released meanwhile).
  void UnmapExpired(std::unique_lock<std::mutex>& lock) {
    std::vector<char*> expired;
    warm_.TakeExpired(WarmPages::Clock::now(), warmHold_, &expired);
    if (expired.empty()) return;
    unmapping_ = true;
    lock.unlock();
    for (char* piece : expired) munmap(piece, kChunk);
    lock.lock();
    unmapping_ = false;
    counts_.expired += expired.size();
    idle_.notify_all();
  }

  // Under `lock`: waits for a job the thread may start, unmapping kept pages as they expire.
  std::shared_ptr<Populating> NextJob(std::unique_lock<std::mutex>& lock) {
    for (;;) {
      if (Free()) {
        UnmapExpired(lock);
        if (!jobs_.empty()) break;
      }
      if (warm_.empty() || !Free()) {
        ready_.wait(lock);  // held or paused: Hold and Resume notify
      } else {
        ready_.wait_until(lock, warm_.NextExpiry(warmHold_));
      }
    }
    std::shared_ptr<Populating> job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    return job;
  }

  void Run() {
    background::LowerPriority();
    for (;;) {
      std::shared_ptr<Populating> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        job = NextJob(lock);
      }
      char* base = static_cast<char*>(job->base);
      for (size_t at = 0; at < job->length; at += kChunk) {
        const size_t length = std::min(kChunk, job->length - at);
        char* piece = nullptr;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          ready_.wait(lock, [this, &job] { return Free() || job->cancelled; });
          if (job->cancelled) break;
          // A buffer starts on a huge-page boundary, so its whole chunks are huge pages.
          if (!job->inUse && length == kChunk) piece = warm_.Take();
          job->replacing = piece != nullptr;
          ++(piece != nullptr ? counts_.replaced : counts_.touched);
        }
        if (piece == nullptr) {
          Touch(base + at, length);
          continue;
        }
        Replace(piece, base + at);
        std::lock_guard<std::mutex> lock(mutex_);
        job->replacing = false;
        replaced_.notify_all();
      }
      std::unique_lock<std::mutex> lock(mutex_);
      job->done.store(true, std::memory_order_release);
      if (job->orphaned && job->unmapFrom < job->length) {
        // Orphaned: the buffer is nobody's but this thread's now. Unmapped outside the lock (a big
        // populated region takes ~10 ms), which a table's thread takes to give pages back and around
        // its own address-space changes, as a scrape does to read the kept bytes.
        lock.unlock();
        munmap(base + job->unmapFrom, job->length - job->unmapFrom);
        lock.lock();
      }
      busy_ = false;
      idle_.notify_all();
    }
  }

  // Under mutex_: neither held by a test nor paused around an address-space change.
  bool Free() const { return !held_ && pausers_ == 0; }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::condition_variable replaced_;
  std::deque<std::shared_ptr<Populating>> jobs_;
  WarmPages warm_;
  bool unmapping_ = false;  // expired kept pages taken out of warm_, not unmapped yet
  Counts counts_;
  std::chrono::milliseconds warmHold_ = WarmPages::kDefaultHold;
  bool started_ = false;
  bool held_ = false;
  bool busy_ = false;  // a job taken from jobs_ and not done yet
  int pausers_ = 0;
};

// Scope in which the buffers freed on this thread are unmapped by it, never handed to the populating
// thread (Populator::Orphan): a pool's tables freed on the releaser's thread (PoolFilterState.release()) are
// all unmapped when the scope ends, so that the pool's next generation maps its own only then.
class UnmapOnCaller {
 public:
  UnmapOnCaller() { active_ = true; }
  ~UnmapOnCaller() { active_ = false; }
  UnmapOnCaller(const UnmapOnCaller&) = delete;
  UnmapOnCaller& operator=(const UnmapOnCaller&) = delete;
  static bool Active() { return active_; }

 private:
  static inline thread_local bool active_ = false;
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
