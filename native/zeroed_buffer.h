// Zero-initialised array for the big hot tables (filter words, hash-map slots). Large ones come from
// mmap: zero pages are mapped lazily (a 2^24-bucket filter costs nothing until touched) and are
// madvise'd for transparent huge pages, because random probes over tens of MiB are otherwise
// dominated by TLB misses.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

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
      munmap(data_, mapped_);
    } else {
      std::free(data_);
    }
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  static constexpr size_t kMmapThreshold = size_t{1} << 20;
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kSmallPage = size_t{4} << 10;

  void Swap(ZeroedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(mapped_, other.mapped_);
  }

  T* data_ = nullptr;
  size_t count_ = 0;
  size_t mapped_ = 0;
};

}  // namespace kvrelay
