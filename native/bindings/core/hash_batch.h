// The prompt batch of hashBatch / hashBatchAsync: its arguments (hash_batch.cc), shared with the
// test/bench addon's raw-XXH3 baseline (testing/hashing_bench.cc), the hashing loop both calls run
// and the worker-thread call (hash_batch_worker.cc).
#pragma once
#include <napi.h>

#include <cstddef>
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
// RangeError above `maxInputs` tokens and offsets (a limits:: bound of the calling entry point).
BatchInput ParseBatch(const Napi::CallbackInfo& info, size_t maxInputs);

// Hashes `n - 1` prompts (tokens[offsets[p] .. offsets[p + 1])) into out[blockOffsets[p] ..], block or
// sequence hashes; touches no JavaScript value, so it runs on any thread.
void HashBatchCore(const uint32_t* tokens, const uint32_t* offsets, const uint32_t* blockOffsets, size_t n,
                   uint32_t bs, bool eagle, uint64_t seed, bool sequence, uint64_t* out);

Napi::Value HashBatchAsync(const Napi::CallbackInfo& info);

// kvBlockSize of every hashing call: a u32 above 0.
uint32_t BlockSizeArg(const Napi::Value& v);

}  // namespace kvrelay
