#include "core/ckf.h"

#include <new>

namespace kvrelay {
namespace ckf {

BucketCountError BucketCountFor(uint64_t expectedBlocks, uint64_t* out) {
  if (expectedBlocks == 0) return BucketCountError::kExpectedCapacityZero;
  uint64_t numerator = 0;
  if (__builtin_mul_overflow(expectedBlocks, uint64_t{5}, &numerator) ||
      __builtin_add_overflow(numerator, uint64_t{15}, &numerator)) {
    return BucketCountError::kCapacityOverflow;
  }
  uint64_t required = numerator / 16;
  if (required < 2) required = 2;
  uint64_t power = 1;
  while (power < required) {
    if (power > (UINT64_MAX >> 1)) return BucketCountError::kCapacityOverflow;
    power <<= 1;
  }
  *out = power;
  return BucketCountError::kNone;
}

Filter::Filter(uint32_t bucketCount, uint64_t seed)
    : addressing_(bucketCount, seed),
      words_(bucketCount),
      rngState_(LaneRngSeed(seed, 0)) {
  writes_.reserve(kDefaultMaxKicks + 2);
}

bool Filter::Relocate(const Prepared& p, uint32_t maxKicks, uint32_t* kicks) {
  const uint32_t a = static_cast<uint32_t>(p.a);
  const uint32_t b = static_cast<uint32_t>(p.b);
  writes_.clear();
  uint16_t fp = p.fp;
  uint32_t bucket = (NextRandom() & 1) == 0 ? a : b;
  for (uint32_t i = 0; i < maxKicks; ++i) {
    ++*kicks;
    const uint64_t before = words_[bucket];
    const unsigned slot = static_cast<unsigned>(NextRandom() & 3);
    const uint16_t evicted = SlotOf(before, slot);
    Store(bucket, WithSlot(before, slot, fp));
    fp = evicted;
    bucket = addressing_.Alt(bucket, fp);
    if (PutIntoEmptyLogged(bucket, fp)) return true;
  }
  for (auto it = writes_.rbegin(); it != writes_.rend(); ++it) words_[it->bucket] = it->before;
  writes_.clear();
  return false;
}

}  // namespace ckf
}  // namespace kvrelay
