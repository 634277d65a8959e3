// Token -> block hash -> canonical sequence hash (spec hashing-ckf-cbi1.md §1). Pure C++, no N-API.
#pragma once
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include "xxhash.h"

namespace kvrelay {
namespace hashing {

constexpr uint64_t kXxh3Seed = 1337;  // XXH3_SEED / CHAIN_XXH3_SEED
constexpr uint64_t kNamespaceSaltSeed = 1;
constexpr uint32_t kMmPadShiftValue = 1000000;
constexpr uint64_t kMmPadHashMask = (uint64_t{1} << 30) - 1;

inline uint64_t Xxh3(const void* data, size_t len, uint64_t seed) {
  return static_cast<uint64_t>(XXH3_64bits_withSeed(data, len, seed));
}

// Upstream hashes the little-endian bytes; this code reinterprets memory, so it needs a LE host.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian host required");

// compute_salt_hash(cache_namespace, lora_name): empty strings count as absent.
inline uint64_t SaltSeed(std::string_view cacheNamespace, std::string_view loraName) {
  uint64_t seed = kXxh3Seed;
  if (!loraName.empty()) seed += Xxh3(loraName.data(), loraName.size(), 0);
  if (!cacheNamespace.empty()) seed += Xxh3(cacheNamespace.data(), cacheNamespace.size(), kNamespaceSaltSeed);
  return seed;
}

// Number of complete blocks (standard: len / bs; Eagle: (len - 1) / bs, saturating).
inline size_t CompleteBlockCount(size_t tokenCount, uint32_t kvBlockSize, bool eagle) {
  if (kvBlockSize == 0) return 0;
  if (eagle) return tokenCount == 0 ? 0 : (tokenCount - 1) / kvBlockSize;
  return tokenCount / kvBlockSize;
}

// Calls f(i, hash of block i's window) for `blocks` consecutive blocks. XXH3 picks its code path from
// the length at run time; for the common window sizes (16/32/64-token blocks) the length is a
// compile-time constant here, which folds that choice out of the loop: the chained sequence hashes
// then keep up with raw block hashing (measured: 0.67 -> ~0.8 of raw XXH3 at 16-token blocks).
template <typename F>
inline void ForEachWindowHash(const uint32_t* tokens, size_t blocks, uint32_t kvBlockSize, size_t windowBytes,
                              uint64_t seed, F&& f) {
  auto run = [&](auto bytes) {
    for (size_t i = 0; i < blocks; ++i) f(i, Xxh3(tokens + i * kvBlockSize, bytes, seed));
  };
  switch (windowBytes) {
    case 64: return run(std::integral_constant<size_t, 64>{});
    case 128: return run(std::integral_constant<size_t, 128>{});
    case 256: return run(std::integral_constant<size_t, 256>{});
    default: return run(windowBytes);
  }
}

// seq[i] = xxh3(LE64(parent) ++ LE64(block), 1337).
inline uint64_t NextSequenceHash(uint64_t parent, uint64_t block) {
  uint64_t input[2] = {parent, block};
  return Xxh3(input, sizeof(input), kXxh3Seed);
}

// Per-block multimodal hashes: an absent entry (or index past the end) means plain token hashing.
struct BlockMm {
  bool present = false;
  std::vector<uint64_t> mmHashes;
};

// One block's hash with multimodal content: its token window followed by its mm hashes sorted
// ascending (LE64 each); no mm hashes = the plain window hash. Sorts `mm` in place.
inline uint64_t BlockHashWithMm(const uint32_t* window, size_t windowBytes, uint64_t* mm, size_t mmCount, uint64_t seed,
                                std::vector<uint8_t>* scratch) {
  if (mmCount == 0) return Xxh3(window, windowBytes, seed);
  std::sort(mm, mm + mmCount);
  scratch->resize(windowBytes + mmCount * 8);
  std::memcpy(scratch->data(), window, windowBytes);
  std::memcpy(scratch->data() + windowBytes, mm, mmCount * 8);
  return Xxh3(scratch->data(), scratch->size(), seed);
}

// Writes CompleteBlockCount(...) block hashes to `out`. `mm` may be null.
inline void BlockHashes(const uint32_t* tokens, size_t tokenCount, uint32_t kvBlockSize, bool eagle, uint64_t seed,
                        const std::vector<BlockMm>* mm, uint64_t* out) {
  const size_t blocks = CompleteBlockCount(tokenCount, kvBlockSize, eagle);
  const size_t window = static_cast<size_t>(kvBlockSize) + (eagle ? 1 : 0);
  if (mm == nullptr) {
    ForEachWindowHash(tokens, blocks, kvBlockSize, window * 4, seed, [out](size_t i, uint64_t h) { out[i] = h; });
    return;
  }
  std::vector<uint8_t> scratch;
  std::vector<uint64_t> sorted;
  for (size_t i = 0; i < blocks; ++i) {
    const uint32_t* chunk = tokens + i * kvBlockSize;
    if (i < mm->size() && (*mm)[i].present) {
      sorted = (*mm)[i].mmHashes;
      out[i] = BlockHashWithMm(chunk, window * 4, sorted.data(), sorted.size(), seed, &scratch);
    } else {
      out[i] = Xxh3(chunk, window * 4, seed);
    }
  }
}

// Plain-token sequence hashes in one loop: the next (independent) block hash overlaps the current
// (serial) chain step in the CPU, which a hash-all-then-chain pass cannot do.
inline void SequenceHashesPlain(const uint32_t* tokens, size_t tokenCount, uint32_t kvBlockSize, bool eagle,
                                uint64_t seed, uint64_t* out) {
  const size_t blocks = CompleteBlockCount(tokenCount, kvBlockSize, eagle);
  const size_t windowBytes = (static_cast<size_t>(kvBlockSize) + (eagle ? 1 : 0)) * 4;
  uint64_t previous = 0;
  ForEachWindowHash(tokens, blocks, kvBlockSize, windowBytes, seed, [&](size_t i, uint64_t block) {
    previous = i == 0 ? block : NextSequenceHash(previous, block);
    out[i] = previous;
  });
}

// Plain-token sequence hashes of two prompts in one loop. Each chain step waits on the one before;
// the other prompt's independent chain fills those waits.
struct PromptSpan {
  const uint32_t* tokens;
  size_t tokenCount;
  uint64_t* out;
};
inline void SequenceHashesPlainPair(const PromptSpan& p0, const PromptSpan& p1, uint32_t kvBlockSize, bool eagle,
                                    uint64_t seed) {
  const size_t n0 = CompleteBlockCount(p0.tokenCount, kvBlockSize, eagle);
  const size_t n1 = CompleteBlockCount(p1.tokenCount, kvBlockSize, eagle);
  const size_t common = std::min(n0, n1);
  const size_t windowBytes = (static_cast<size_t>(kvBlockSize) + (eagle ? 1 : 0)) * 4;
  auto run = [&](auto bytes) {
    uint64_t prev0 = 0, prev1 = 0;
    for (size_t i = 0; i < common; ++i) {
      const uint64_t b0 = Xxh3(p0.tokens + i * kvBlockSize, bytes, seed);
      const uint64_t b1 = Xxh3(p1.tokens + i * kvBlockSize, bytes, seed);
      prev0 = i == 0 ? b0 : NextSequenceHash(prev0, b0);
      prev1 = i == 0 ? b1 : NextSequenceHash(prev1, b1);
      p0.out[i] = prev0;
      p1.out[i] = prev1;
    }
    const PromptSpan& longer = n0 > n1 ? p0 : p1;
    uint64_t prev = n0 > n1 ? prev0 : prev1;
    for (size_t i = common; i < std::max(n0, n1); ++i) {
      const uint64_t b = Xxh3(longer.tokens + i * kvBlockSize, bytes, seed);
      prev = i == 0 ? b : NextSequenceHash(prev, b);
      longer.out[i] = prev;
    }
  };
  switch (windowBytes) {
    case 64: return run(std::integral_constant<size_t, 64>{});
    case 128: return run(std::integral_constant<size_t, 128>{});
    case 256: return run(std::integral_constant<size_t, 256>{});
    default: return run(windowBytes);
  }
}

// In place: block hashes -> canonical sequence hashes.
inline void ChainInPlace(uint64_t* hashes, size_t count) {
  for (size_t i = 1; i < count; ++i) hashes[i] = NextSequenceHash(hashes[i - 1], hashes[i]);
}

inline uint32_t PadValueForMmHash(uint64_t mmHash) {
  return static_cast<uint32_t>(kMmPadShiftValue + (mmHash & kMmPadHashMask));
}

// hash_mm_identifier: "" -> absent; 64 hex chars -> first 16 read as hex; else xxh3(utf8, 0).
inline bool HashMmIdentifier(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  if (s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
    *out = std::stoull(s.substr(0, 16), nullptr, 16);
    return true;
  }
  *out = Xxh3(s.data(), s.size(), 0);
  return true;
}

}  // namespace hashing
}  // namespace kvrelay
