// Zero-initialised array for the big hot tables (filter words, hash-map slots). Large ones come from
// mmap: zero pages are mapped lazily (a 2^24-bucket filter costs nothing until touched) and are
// madvise'd for transparent huge pages, because random probes over tens of MiB are otherwise
// dominated by TLB misses.
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "core/page_populator.h"

namespace kvrelay {

template <typename T>
class ZeroedBuffer {
 public:
  ZeroedBuffer() = default;
  explicit ZeroedBuffer(size_t count) : count_(count) {
    const size_t bytes = count * sizeof(T);
    if (bytes >= kMmapThreshold) {
      // Over-map by one huge page and trim so the table starts on a 2 MiB boundary. The length is
      // rounded to small pages only: a tail rounded up to a huge page would be faulted in whole.
      mapped_ = (bytes + kSmallPage - 1) / kSmallPage * kSmallPage;
      const pages::AddressSpaceChange change;
      void* raw = mmap(nullptr, mapped_ + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
      const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
      if (aligned > start) munmap(raw, aligned - start);
      munmap(reinterpret_cast<void*>(aligned + mapped_), start + kHugePage - aligned);
      madvise(reinterpret_cast<void*>(aligned), mapped_, MADV_HUGEPAGE);  // advisory: ignored where THP is off
      data_ = reinterpret_cast<T*>(aligned);
    } else if (alignof(T) > alignof(std::max_align_t)) {
      // Cache-line buckets (BucketMap): calloc only guarantees max_align_t.
      const size_t length = ((bytes == 0 ? 1 : bytes) + alignof(T) - 1) / alignof(T) * alignof(T);
      data_ = static_cast<T*>(std::aligned_alloc(alignof(T), length));
      if (data_ == nullptr) throw std::bad_alloc();
      std::memset(static_cast<void*>(data_), 0, length);
    } else {
      data_ = static_cast<T*>(std::calloc(count == 0 ? 1 : count, sizeof(T)));
      if (data_ == nullptr) throw std::bad_alloc();
    }
  }
  ZeroedBuffer(ZeroedBuffer&& other) noexcept { Swap(other); }
  ZeroedBuffer& operator=(ZeroedBuffer&& other) noexcept {
    ZeroedBuffer(std::move(other)).Swap(*this);
    return *this;
  }
  ZeroedBuffer(const ZeroedBuffer&) = delete;
  ZeroedBuffer& operator=(const ZeroedBuffer&) = delete;
  ~ZeroedBuffer() {
    if (data_ == nullptr) return;
    if (mapped_ != 0) {
      if (populating_ != nullptr) {
        // Where the caller unmaps every buffer itself (off its event loop), it waits for the
        // populating thread to let go; elsewhere that thread unmaps the buffer when it is done.
        if (pages::UnmapOnCaller::Active()) {
          pages::Populator::Instance().Withdraw(populating_.get());
        } else if (pages::Populator::Instance().Orphan(populating_.get(), given_)) {
          return;
        }
      }
      if (given_ == mapped_) return;
      const pages::AddressSpaceChange change;
      char* const base = reinterpret_cast<char*>(data_);
      // Off the event loop, a huge page at a time: a munmap holds the address-space lock while it
      // frees the pages (~150 ms for 200 MiB in small pages on the project's VM), and every other
      // thread's mmap (V8's heap, malloc) waits for it; so they wait for one piece at most.
      const size_t piece = pages::UnmapOnCaller::Active() ? kHugePage : mapped_;
      for (size_t at = given_; at < mapped_; at += piece) munmap(base + at, std::min(piece, mapped_ - at));
    } else {
      std::free(data_);
    }
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  // Faults the pages in on a background thread, so that their first touch (zeroing; on the project's
  // VM the host backs each fresh page then, ~1.5 ms per MiB) happens off the caller's thread: a hash
  // table's random insertions touch every page of a fresh table within its first few thousand, so
  // BucketMap asks for this a little before it starts using a new table. Mapped buffers only (a heap
  // one was zeroed when allocated); without the thread the pages fault in on use, as they would anyway.
  void PopulateInBackground() {
    if (mapped_ == 0 || populating_ != nullptr) return;
    auto job = std::make_shared<pages::Populating>();
    job->base = data_;
    job->length = mapped_;
    if (pages::Populator::Instance().Add(job)) populating_ = std::move(job);
  }

  // No page left for PopulateInBackground's thread to fault in (or none asked of it).
  bool Populated() const { return populating_ == nullptr || populating_->done.load(std::memory_order_acquire); }

  // Called before the owner first writes into a buffer it asked to populate: the populating thread may
  // move kept pages (WarmPages) over pages nobody uses yet, and must not once the owner does.
  void Use() {
    if (populating_ != nullptr) pages::Populator::Instance().Use(populating_.get());
  }

  // Bytes the buffer holds: less what ReleaseFront gave back.
  size_t HeldBytes() const { return count_ * sizeof(T) - released_; }

  // The first `count` elements will never be read or written again (a hash table drained into its
  // successor): their whole huge pages leave the buffer now, instead of all at once when it is freed
  // (and the buffer's memory falls as it drains). They go to the populating thread's WarmPages, which
  // moves them into the next buffer it populates or unmaps them after a while; without that thread,
  // back to the kernel. Mapped buffers only; a heap one is under 64 KiB and freed whole. A population
  // of this buffer still running stops at its next huge page.
  void ReleaseFront(size_t count) {
    if (mapped_ == 0) return;
    const size_t bytes = count * sizeof(T) / kHugePage * kHugePage;
    if (bytes <= released_) return;
    if (populating_ != nullptr) pages::Populator::Instance().Cancel(populating_.get());
    char* from = reinterpret_cast<char*>(data_) + released_;
    // Given away only as one run from the start, so that the buffer unmaps the rest in one call.
    if (given_ == released_ && pages::Populator::Instance().Keep(from, bytes - released_)) {
      given_ = bytes;
    } else {
      const pages::AddressSpaceChange change;
      madvise(from, bytes - released_, MADV_DONTNEED);
    }
    released_ = bytes;
  }

 private:
  // Mapped from here up, so that PopulateInBackground covers them: the pool's 64 lineage tables grow
  // in step, and 64 heap tables of a MiB zeroed on allocation were ~90 ms of first touch at once on
  // the project's VM. Smaller ones come from the heap, whose freed chunks are reused warm.
  static constexpr size_t kMmapThreshold = size_t{64} << 10;
  static constexpr size_t kHugePage = pages::kHugePage;
  static constexpr size_t kSmallPage = pages::kSmallPage;

  void Swap(ZeroedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(mapped_, other.mapped_);
    std::swap(released_, other.released_);
    std::swap(given_, other.given_);
    std::swap(populating_, other.populating_);
  }

  T* data_ = nullptr;
  size_t count_ = 0;
  size_t mapped_ = 0;
  size_t released_ = 0;  // bytes from the start given back by ReleaseFront (whole huge pages)
  size_t given_ = 0;     // of those, the ones WarmPages took: no longer mapped by this buffer
  std::shared_ptr<pages::Populating> populating_;  // PopulateInBackground's thread, if one was asked
};

}  // namespace kvrelay
