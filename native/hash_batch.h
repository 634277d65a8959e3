// The prompt-batch arguments of hashBatch / hashBatchAsync (hashing.cc), shared with the test/bench
// addon's raw-XXH3 baseline (testing/hashing_bench.cc).
#pragma once
#include <napi.h>

#include <cstdint>
#include <vector>

namespace kvrelay {

struct BatchInput {
  Napi::Uint32Array tokens;
  // Copied before it is checked: the hashing loop trusts it, and the caller's array may change
  // (another thread writing a SharedArrayBuffer, or the caller after hashBatchAsync returned).
  std::vector<uint32_t> promptOffsets;
  uint32_t kvBlockSize;
  bool eagle;
  uint64_t seed;
  bool sequence;
  Napi::Uint32Array blockOffsets;
  Napi::BigUint64Array hashes;
};

// Checks (tokens, promptOffsets, kvBlockSize, eagle, seed, sequence) and allocates the outputs.
BatchInput ParseBatch(const Napi::CallbackInfo& info);

}  // namespace kvrelay
