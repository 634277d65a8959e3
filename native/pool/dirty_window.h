// The publication window's record of filter writes (spec hashing-ckf-cbi1.md §4.6): buckets written
// since the last drain, in first-touch order, with their value before the first touch, so a drain
// publishes absolute images of the buckets whose word really changed.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace kvrelay {
namespace pool {

class DirtyWindow {
 public:
  struct Entry {
    uint32_t bucket;
    uint64_t original;
  };

  explicit DirtyWindow(uint32_t bucketCount) : bits_((bucketCount + 63) / 64, 0) {}
  // Every filter write passes here: one array of (bucket, original) takes one capacity check per
  // touch instead of two.
  __attribute__((always_inline)) void Touch(uint32_t bucket, uint64_t original) {
    uint64_t& w = bits_[bucket >> 6];
    const uint64_t bit = uint64_t{1} << (bucket & 63);
    if (w & bit) return;
    w |= bit;
    entries_.push_back(Entry{bucket, original});
  }
  size_t size() const { return entries_.size(); }
  size_t MemoryBytes() const { return bits_.capacity() * sizeof(uint64_t) + entries_.capacity() * sizeof(Entry); }
  const std::vector<Entry>& entries() const { return entries_; }
  // Empties the window; `words` are the filter's, read for each bucket's current value:
  // f(bucket, current) for every bucket whose value changed, in first-touch order.
  template <typename F>
  void Drain(const uint64_t* words, F&& f) {
    const size_t n = entries_.size();
    const Entry* e = entries_.data();
    // The window's buckets are spread over the filter: ask for a word a few entries ahead.
    constexpr size_t kAhead = 8;
    size_t i = 0;
    for (; i + kAhead < n; ++i) {
      __builtin_prefetch(words + e[i + kAhead].bucket);
      Visit(words, e[i], f);
    }
    for (; i < n; ++i) Visit(words, e[i], f);
    // A big window clears the bitmap whole (sequential stores) instead of one random word per bucket.
    if (n > bits_.size() / 4) {
      std::fill(bits_.begin(), bits_.end(), 0);
    } else {
      for (size_t k = 0; k < n; ++k) bits_[e[k].bucket >> 6] = 0;
    }
    entries_.clear();
  }

 private:
  template <typename F>
  __attribute__((always_inline)) static void Visit(const uint64_t* words, const Entry& e, F& f) {
    const uint64_t current = words[e.bucket];
    f(e.bucket, current, current != e.original);
  }

  std::vector<uint64_t> bits_;
  std::vector<Entry> entries_;
};

}  // namespace pool
}  // namespace kvrelay
