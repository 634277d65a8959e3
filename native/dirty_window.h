// The publication window's record of filter writes (spec hashing-ckf-cbi1.md §4.6): buckets written
// since the last drain, in first-touch order, with their value before the first touch, so a drain
// publishes absolute images of the buckets whose word really changed.
#pragma once
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
    for (size_t i = 0; i < n; ++i) {
      // The window's buckets are spread over the filter: ask for a word a few entries ahead.
      __builtin_prefetch(words + e[i + 8 < n ? i + 8 : i].bucket);
      const uint32_t bucket = e[i].bucket;
      bits_[bucket >> 6] = 0;
      const uint64_t current = words[bucket];
      f(bucket, current, current != e[i].original);
    }
    entries_.clear();
  }

 private:
  std::vector<uint64_t> bits_;
  std::vector<Entry> entries_;
};

}  // namespace pool
}  // namespace kvrelay
