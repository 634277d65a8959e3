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

// The two hashes every block costs (a 64-byte window at 16-token blocks, and the 16-byte chain
// step) written out for their one length each: the same arithmetic as xxhash.h's
// XXH3_len_17to128_64b and XXH3_len_9to16_64b, bit for bit (block_hashes.json, and
// test/native/hashing-batch.test.ts against xxhash-addon). Why not XXH3_64bits_withSeed: GCC 12
// moves each 128-bit product of XXH3_mul128_fold64 through the stack (a store and a reload per
// multiply), and the seed's keys are recomputed per call; at 16-token blocks that was ~9 % of a
// block hash, measured with the same compiler flags as the addons.

// XXH3_mul128_fold64: the low and high halves of a 64 x 64 -> 128 product, xor-ed.
inline uint64_t MulFold64(uint64_t a, uint64_t b) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  uint64_t high;
  __asm__("mulq %[b]" : "+a"(a), "=d"(high) : [b] "r"(b) : "cc");
  return a ^ high;
#else
  const __uint128_t product = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
#endif
}

inline uint64_t LoadLE64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// XXH3_avalanche.
inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919E3779F9ULL;
  return h ^ (h >> 32);
}

// XXH3_64bits_withSeed(input, 64, seed), with the seed folded into the secret's first 64 bytes
// once (Window64Keys) instead of per hash.
class Window64Keys {
 public:
  explicit Window64Keys(uint64_t seed) {
    for (size_t i = 0; i < 8; i += 2) {
      keys_[i] = LoadLE64(XXH3_kSecret + 8 * i) + seed;
      keys_[i + 1] = LoadLE64(XXH3_kSecret + 8 * i + 8) - seed;
    }
  }

  uint64_t Hash(const void* window) const {
    const auto* in = static_cast<const uint8_t*>(window);
    // XXH3_len_17to128_64b at len 64: the mix16B pairs (16, 32) and (0, 48) against secret bytes
    // 32..63 and 0..31.
    uint64_t acc = 64 * XXH_PRIME64_1;
    acc += Mix(in + 16, 4);
    acc += Mix(in + 32, 6);
    acc += Mix(in + 0, 0);
    acc += Mix(in + 48, 2);
    return Avalanche(acc);
  }

 private:
  uint64_t Mix(const uint8_t* in, size_t key) const {
    return MulFold64(LoadLE64(in) ^ keys_[key], LoadLE64(in + 8) ^ keys_[key + 1]);
  }

  uint64_t keys_[8];
};

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
// The 64-byte window (16-token blocks, or 15 with Eagle's extra token) has its own hash above.
// Windows above XXH3_MIDSIZE_MAX (240 bytes: 61-token blocks and up) hash with a secret derived
// from the seed; XXH3_64bits_withSeed derives it again for every window, so it is derived once
// here (XXH3_generateSecret_fromSeed + XXH3_64bits_withSecretandSeed: the same hashes, xxhash.h).
template <typename F>
inline void ForEachWindowHash(const uint32_t* tokens, size_t blocks, uint32_t kvBlockSize, size_t windowBytes,
                              uint64_t seed, F&& f) {
  auto run = [&](auto bytes) {
    for (size_t i = 0; i < blocks; ++i) f(i, Xxh3(tokens + i * kvBlockSize, bytes, seed));
  };
  auto runLong = [&](auto bytes) {
    alignas(64) uint8_t secret[XXH3_SECRET_DEFAULT_SIZE];
    XXH3_generateSecret_fromSeed(secret, seed);
    for (size_t i = 0; i < blocks; ++i) {
      f(i, XXH3_64bits_withSecretandSeed(tokens + i * kvBlockSize, bytes, secret, sizeof secret, seed));
    }
  };
  switch (windowBytes) {
    case 64: {
      const Window64Keys keys(seed);
      for (size_t i = 0; i < blocks; ++i) f(i, keys.Hash(tokens + i * kvBlockSize));
      return;
    }
    case 128: return run(std::integral_constant<size_t, 128>{});
    case 256: return runLong(std::integral_constant<size_t, 256>{});
    default: return windowBytes > XXH3_MIDSIZE_MAX ? runLong(windowBytes) : run(windowBytes);
  }
}

// seq[i] = xxh3(LE64(parent) ++ LE64(block), 1337): XXH3_len_9to16_64b at len 16, whose bitflips
// fold to constants.
inline uint64_t NextSequenceHash(uint64_t parent, uint64_t block) {
  const uint64_t low = parent ^ ((LoadLE64(XXH3_kSecret + 24) ^ LoadLE64(XXH3_kSecret + 32)) + kXxh3Seed);
  const uint64_t high = block ^ ((LoadLE64(XXH3_kSecret + 40) ^ LoadLE64(XXH3_kSecret + 48)) - kXxh3Seed);
  return Avalanche(16 + XXH_swap64(low) + high + MulFold64(low, high));
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

// In place: block hashes -> canonical sequence hashes, from block `from` (>= 1) on.
inline void ChainInPlace(uint64_t* hashes, size_t count, size_t from = 1) {
  for (size_t i = from; i < count; ++i) hashes[i] = NextSequenceHash(hashes[i - 1], hashes[i]);
}

// Plain-token sequence hashes of kChainLanes prompts: every block hash first, then the chains
// stepped together, one step of each lane per turn. A chain step waits on the step before it (its
// multiply and avalanche); eight independent chains keep the core busy through those waits, and the
// block hashes, independent of each other, run as fast as alone. Measured against the two-prompt
// fused loop this replaced, same flags as the addons, 512 prompts of 2048 tokens: 0.82 -> 0.91 of
// raw XXH3 at 16-token blocks (with the 64-byte window hash above).
constexpr size_t kChainLanes = 8;
// Prompt k (0 <= k < kChainLanes) is tokens[offsets[k], offsets[k + 1]) and its hashes go to
// out[blockOffsets[k], blockOffsets[k + 1]): kChainLanes prompts of a batch laid out as hashBatch's.
inline void SequenceHashesPlainLanes(const uint32_t* tokens, const uint32_t* offsets, const uint32_t* blockOffsets,
                                     uint32_t kvBlockSize, bool eagle, uint64_t seed, uint64_t* hashes) {
  uint64_t* out[kChainLanes];
  size_t common = SIZE_MAX;
  for (size_t k = 0; k < kChainLanes; ++k) {
    out[k] = hashes + blockOffsets[k];
    BlockHashes(tokens + offsets[k], offsets[k + 1] - offsets[k], kvBlockSize, eagle, seed, nullptr, out[k]);
    common = std::min<size_t>(common, blockOffsets[k + 1] - blockOffsets[k]);
  }
  uint64_t previous[kChainLanes];
  for (size_t k = 0; k < kChainLanes; ++k) previous[k] = common > 0 ? out[k][0] : 0;
  for (size_t i = 1; i < common; ++i) {
#pragma GCC unroll 8
    for (size_t k = 0; k < kChainLanes; ++k) {
      previous[k] = NextSequenceHash(previous[k], out[k][i]);
      out[k][i] = previous[k];
    }
  }
  for (size_t k = 0; k < kChainLanes; ++k) ChainInPlace(out[k], blockOffsets[k + 1] - blockOffsets[k], std::max<size_t>(common, 1));
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
