// Baseline for bench/hashing.ts and bench/engine-decode.ts (test/bench addon only): raw XXH3 over
// exactly the block windows hashBatch reads, no outputs.
#include <napi.h>

#include "core/block_hash.h"
#include "bindings/core/hash_batch.h"
#include "core/native_limits.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

Napi::Value Xxh3BlocksBaseline(const Napi::CallbackInfo& info) {
  BatchInput in = ParseBatch(info, limits::kMaxAsyncHashInputs);
  const uint32_t* tokens = in.tokens.Data();
  const uint32_t* offsets = in.promptOffsets.data();
  const size_t window = in.kvBlockSize + (in.eagle ? 1 : 0);
  uint64_t acc = 0;
  for (size_t p = 0; p + 1 < in.promptOffsets.size(); ++p) {
    const size_t blocks = hashing::CompleteBlockCount(offsets[p + 1] - offsets[p], in.kvBlockSize, in.eagle);
    for (size_t i = 0; i < blocks; ++i) {
      acc ^= hashing::Xxh3(tokens + offsets[p] + i * in.kvBlockSize, window * 4, in.seed);
    }
  }
  return Napi::BigInt::New(info.Env(), acc);
}

}  // namespace

void InitHashingBench(Napi::Env env, Napi::Object exports) {
  exports.Set("xxh3BlocksBaseline", Napi::Function::New(env, Xxh3BlocksBaseline, "xxh3BlocksBaseline"));
}

}  // namespace testing
}  // namespace kvrelay
