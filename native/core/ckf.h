// Cuckoo filter (spec hashing-ckf-cbi1.md §2): bucket count, addressing, 16-bit x 4-slot bucket words,
// SplitMix64 relocation with rollback, removal. Pure C++, no N-API.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/block_hash.h"
#include "core/zeroed_buffer.h"

namespace kvrelay {
namespace ckf {

constexpr uint64_t kDefaultSeed = 0x5DEECE66D1B54A33ULL;
constexpr uint64_t kAlternateBucketDomain = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kSplitmixIncrement = 0x9E3779B97F4A7C15ULL;
constexpr uint32_t kDefaultMaxKicks = 500;
constexpr uint32_t kMaxKicks = 4096;
// CBI1 caps the bucket count at 2^24; the pool state refuses larger filters.
constexpr uint64_t kMaxBucketCount = uint64_t{1} << 24;
constexpr uint64_t kSwarOnes = 0x0001000100010001ULL;
constexpr uint64_t kSwarHighs = 0x8000800080008000ULL;

enum class BucketCountError { kNone, kExpectedCapacityZero, kCapacityOverflow };

// bucket_count(n) = next_power_of_two(max((5n + 15) / 16, 2)), with overflow checks.
BucketCountError BucketCountFor(uint64_t expectedBlocks, uint64_t* out);

inline bool IsValidBucketCount(uint64_t n) { return n >= 2 && (n & (n - 1)) == 0; }

// 32-bit buckets (the filter has at most 2^32): plans hold one per block.
struct Prepared {
  uint16_t fp;
  uint32_t a;
  uint32_t b;
};

// XXH3-64 (xxHash 0.8, its 4-8 and 1-3 byte paths) of an 8-byte and of a 2-byte input under one
// seed, with the seed's share of the work done once: Prepare runs for every op, and mixing the seed
// into the secret was about a quarter of its two hashes. Bit-identical to hashing::Xxh3 (the
// addressing vectors and test/native/ckf.test.ts check it against an independent XXH3).
class SeededXxh3 {
 public:
  explicit SeededXxh3(uint64_t seed)
      : key8_((XXH_readLE64(XXH3_kSecret + 8) ^ XXH_readLE64(XXH3_kSecret + 16)) -
              (seed ^ (uint64_t{XXH_swap32(static_cast<uint32_t>(seed))} << 32))),
        key2_(uint64_t{XXH_readLE32(XXH3_kSecret) ^ XXH_readLE32(XXH3_kSecret + 4)} + seed) {}
  // = Xxh3(&x, 8, seed): the input's two 32-bit halves swapped, keyed, rrmxmx.
  uint64_t Of8(uint64_t x) const { return XXH3_rrmxmx(((x << 32) | (x >> 32)) ^ key8_, 8); }
  // = Xxh3(&v, 2, seed): bytes {v1, 0x02, v0, v1} (high to low), keyed, avalanche.
  uint64_t Of2(uint16_t v) const {
    // v << 16 puts v1 and v0 in the top bytes, v >> 8 is v1 alone: ~5 instructions fewer per op than
    // assembling the four bytes one by one.
    const uint32_t x = v;
    const uint32_t combined = (x << 16) | (x >> 8) | (2u << 8);
    return XXH64_avalanche(uint64_t{combined} ^ key2_);
  }

 private:
  uint64_t key8_;
  uint64_t key2_;
};

inline uint16_t SlotOf(uint64_t word, unsigned k) { return static_cast<uint16_t>(word >> (16 * k)); }
inline uint64_t WithSlot(uint64_t word, unsigned k, uint16_t v) {
  const unsigned shift = 16 * k;
  return (word & ~(uint64_t{0xFFFF} << shift)) | (uint64_t{v} << shift);
}
// SWAR: the high bit of every 16-bit lane equal to v. Borrows can also flag a lane above a true
// match, never below one, so the lowest flag is always exact.
inline uint64_t MatchLanes(uint64_t word, uint16_t v) {
  const uint64_t x = word ^ (uint64_t{v} * kSwarOnes);
  return (x - kSwarOnes) & ~x & kSwarHighs;
}
// Lowest slot index holding `v`, or -1.
inline int FirstSlot(uint64_t word, uint16_t v) {
  const uint64_t m = MatchLanes(word, v);
  return m == 0 ? -1 : __builtin_ctzll(m) >> 4;
}
inline bool BucketContains(uint64_t word, uint16_t fp) { return MatchLanes(word, fp) != 0; }
// The bit offset of the lowest lane MatchLanes flagged (lanes != 0).
inline unsigned LaneShift(uint64_t lanes) { return static_cast<unsigned>(__builtin_ctzll(lanes)) & 0x30; }

inline uint64_t SplitmixNext(uint64_t* state) {
  *state += kSplitmixIncrement;
  uint64_t v = *state;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ULL;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBULL;
  return v ^ (v >> 31);
}
inline uint64_t LaneRngSeed(uint64_t seed, uint64_t lane) {
  uint64_t state = seed ^ ((lane + 1) * kSplitmixIncrement);
  return SplitmixNext(&state);
}

// Addressing for one (bucket_count, seed). The alternate-bucket xor is recomputed (a 2-byte XXH3)
// rather than tabulated: a 256 KiB table per pool goes cold between batches and then costs a miss.
class Addressing {
 public:
  // bucketCount: a power of two >= 2.
  Addressing(uint64_t bucketCount, uint64_t seed)
      : seed_(seed), mask_(bucketCount - 1), mix_(seed), alt_(seed ^ kAlternateBucketDomain) {}
  Prepared Prepare(uint64_t hash) const {
    const uint64_t mixed = mix_.Of8(hash);
    uint16_t fp = static_cast<uint16_t>(mixed & 0xFFFF);
    if (fp == 0) fp = 1;
    const uint32_t a = static_cast<uint32_t>((mixed >> 16) & mask_);
    return Prepared{fp, a, a ^ static_cast<uint32_t>(AltDelta(fp))};
  }
  uint32_t Alt(uint32_t bucket, uint16_t fp) const { return bucket ^ static_cast<uint32_t>(AltDelta(fp)); }
  uint64_t bucketCount() const { return mask_ + 1; }
  uint64_t seed() const { return seed_; }

 private:
  uint64_t AltDelta(uint16_t fp) const {
    const uint64_t d = alt_.Of2(fp) & mask_;
    return d == 0 ? 1 : d;
  }

  uint64_t seed_;
  uint64_t mask_;
  SeededXxh3 mix_;
  SeededXxh3 alt_;
};

struct Write {
  uint32_t bucket;
  uint64_t before;
};

// The producer's filter: bucket words, relocation rng and the write log of the last operation.
class Filter {
 public:
  Filter(uint32_t bucketCount, uint64_t seed);

  Prepared Prepare(uint64_t hash) const { return addressing_.Prepare(hash); }
  // Inserts with up to maxKicks relocations and then reports every physical write, in order, to
  // onWrite(bucket, before). false (CapacityExhausted): every write was rolled back and none is
  // reported; the rng stays advanced. Inline up to the relocation: most inserts find an empty slot in
  // a or b, and then write no log (only a relocation needs one, for its rollback): the calls and the
  // log were ~40 % of an insert's instructions (callgrind, raw canonical ops).
  template <typename OnWrite>
  __attribute__((always_inline)) bool Insert(const Prepared& p, uint32_t maxKicks, uint32_t* kicks, OnWrite&& onWrite) {
    *kicks = 0;
    if (PutIntoEmpty(p.a, p.fp, onWrite) || PutIntoEmpty(p.b, p.fp, onWrite)) {
      return true;
    }
    if (!Relocate(p, maxKicks, kicks)) return false;
    for (const Write& w : writes_) onWrite(w.bucket, w.before);
    return true;
  }
  // Clears the first slot equal to fp in bucket a, else b. false: not found (invariant violation).
  __attribute__((always_inline)) bool Remove(const Prepared& p, Write* write) {
    uint32_t bucket = p.a;
    uint64_t word = words_[bucket];
    uint64_t lanes = MatchLanes(word, p.fp);
    if (lanes == 0) {
      bucket = p.b;
      word = words_[bucket];
      lanes = MatchLanes(word, p.fp);
      if (lanes == 0) return false;
    }
    *write = Write{bucket, word};
    words_[bucket] = word & ~(uint64_t{0xFFFF} << LaneShift(lanes));
    return true;
  }
  bool Contains(uint64_t hash) const {
    const Prepared p = addressing_.Prepare(hash);
    return BucketContains(words_[p.a], p.fp) || BucketContains(words_[p.b], p.fp);
  }

  // The words' pages faulted in on the populating thread (ZeroedBuffer::PopulateInBackground), the
  // filter written from now on; Populated: none left to fault in.
  void PopulateInBackground() {
    words_.PopulateInBackground();
    words_.Use();
  }
  bool Populated() const { return words_.Populated(); }

  const Addressing& addressing() const { return addressing_; }
  uint32_t bucketCount() const { return static_cast<uint32_t>(addressing_.bucketCount()); }
  const uint64_t* words() const { return words_.data(); }
  // Into L2, like BucketMap::Prefetch. always_inline: GCC marks a prefetch-only function const and drops
  // the call as dead.
  __attribute__((always_inline)) void Prefetch(const Prepared& p) const {
    __builtin_prefetch(&words_[p.a], 0, 1);
    __builtin_prefetch(&words_[p.b], 0, 1);
  }
  uint64_t word(uint32_t bucket) const { return words_[bucket]; }
  uint64_t rngState() const { return rngState_; }
  uint64_t rngDraws() const { return rngDraws_; }

 private:
  template <typename OnWrite>
  __attribute__((always_inline)) bool PutIntoEmpty(uint32_t bucket, uint16_t fp, OnWrite&& onWrite) {
    const uint64_t word = words_[bucket];
    const uint64_t empty = MatchLanes(word, 0);
    if (empty == 0) return false;
    words_[bucket] = word | (uint64_t{fp} << LaneShift(empty));
    onWrite(bucket, word);
    return true;
  }
  // Relocation's placement: logged, for the rollback.
  bool PutIntoEmptyLogged(uint32_t bucket, uint16_t fp) {
    return PutIntoEmpty(bucket, fp, [this](uint32_t b, uint64_t before) { writes_.push_back(Write{b, before}); });
  }
  // Insert's cuckoo relocation, once both candidate buckets are full.
  bool Relocate(const Prepared& p, uint32_t maxKicks, uint32_t* kicks);
  void Store(uint32_t bucket, uint64_t value) {
    writes_.push_back(Write{bucket, words_[bucket]});
    words_[bucket] = value;
  }
  uint64_t NextRandom() {
    ++rngDraws_;
    return SplitmixNext(&rngState_);
  }

  Addressing addressing_;
  ZeroedBuffer<uint64_t> words_;
  uint64_t rngState_;
  uint64_t rngDraws_ = 0;
  std::vector<Write> writes_;  // the current relocation's writes, for its rollback
};

}  // namespace ckf
}  // namespace kvrelay
