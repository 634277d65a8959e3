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
  explicit DirtyWindow(uint32_t bucketCount) : bits_((bucketCount + 63) / 64, 0) {}
  void Touch(uint32_t bucket, uint64_t original) {
    uint64_t& w = bits_[bucket >> 6];
    const uint64_t bit = uint64_t{1} << (bucket & 63);
    if (w & bit) return;
    w |= bit;
    buckets_.push_back(bucket);
    originals_.push_back(original);
  }
  size_t size() const { return buckets_.size(); }
  size_t MemoryBytes() const {
    return bits_.capacity() * sizeof(uint64_t) + buckets_.capacity() * sizeof(uint32_t) +
           originals_.capacity() * sizeof(uint64_t);
  }
  const std::vector<uint32_t>& buckets() const { return buckets_; }
  const std::vector<uint64_t>& originals() const { return originals_; }
  void Reset() {
    for (uint32_t b : buckets_) bits_[b >> 6] = 0;
    buckets_.clear();
    originals_.clear();
  }

 private:
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> buckets_;
  std::vector<uint64_t> originals_;
};

}  // namespace pool
}  // namespace kvrelay
