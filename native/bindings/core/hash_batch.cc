// hashBatch: many prompts (same block size, format and salt) hashed in one call, and the checks of
// its arguments; the same batch on a worker thread is hash_batch_worker.cc.
#include "bindings/core/hash_batch.h"

#include <string>

#include "core/block_hash.h"
#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "core/native_limits.h"

namespace kvrelay {

uint32_t BlockSizeArg(const Napi::Value& v) {
  const uint32_t bs = args::U32(v, "kvBlockSize");
  if (bs == 0) throw Napi::RangeError::New(v.Env(), "kvBlockSize cannot be 0");
  return bs;
}

void HashBatchCore(const uint32_t* tokens, const uint32_t* offsets, const uint32_t* blockOffsets, size_t n,
                   uint32_t bs, bool eagle, uint64_t seed, bool sequence, uint64_t* out) {
  size_t p = 0;
  if (sequence) {
    for (; p + hashing::kChainLanes < n; p += hashing::kChainLanes) {
      hashing::SequenceHashesPlainLanes(tokens, offsets + p, blockOffsets + p, bs, eagle, seed, out);
    }
  }
  for (; p + 1 < n; ++p) {
    uint64_t* dst = out + blockOffsets[p];
    if (sequence) {
      hashing::SequenceHashesPlain(tokens + offsets[p], offsets[p + 1] - offsets[p], bs, eagle, seed, dst);
    } else {
      hashing::BlockHashes(tokens + offsets[p], offsets[p + 1] - offsets[p], bs, eagle, seed, nullptr, dst);
    }
  }
}

BatchInput ParseBatch(const Napi::CallbackInfo& info, size_t maxInputs) {
  Napi::Env env = info.Env();
  auto jsOffsets = args::U32Array(args::Arg(info, 1), "promptOffsets");
  BatchInput in{args::U32Array(args::Arg(info, 0), "tokens"),
                {},
                BlockSizeArg(args::Arg(info, 2)),
                args::Bool(args::Arg(info, 3), "eagle"),
                args::U64(args::Arg(info, 4), "seed"),
                args::Bool(args::Arg(info, 5), "sequence"),
                {},
                {}};
  if (uint64_t{in.tokens.ElementLength()} + jsOffsets.ElementLength() > maxInputs) {
    throw Napi::RangeError::New(env, "prompt batch too large: at most " + std::to_string(maxInputs) +
                                         " tokens and offsets per call");
  }
  in.promptOffsets.assign(jsOffsets.Data(), jsOffsets.Data() + jsOffsets.ElementLength());
  const uint32_t* offsets = in.promptOffsets.data();
  const size_t n = in.promptOffsets.size();
  if (n == 0 || offsets[0] != 0 || offsets[n - 1] != in.tokens.ElementLength()) {
    throw Napi::RangeError::New(env, "promptOffsets must start at 0 and end at tokens.length");
  }
  in.blockOffsets = Napi::Uint32Array::New(env, n);
  uint32_t* blockOffsets = in.blockOffsets.Data();
  uint64_t total = 0;
  blockOffsets[0] = 0;
  for (size_t p = 1; p < n; ++p) {
    if (offsets[p] < offsets[p - 1]) throw Napi::RangeError::New(env, "promptOffsets must be non-decreasing");
    total += hashing::CompleteBlockCount(offsets[p] - offsets[p - 1], in.kvBlockSize, in.eagle);
    blockOffsets[p] = static_cast<uint32_t>(total);
  }
  in.hashes = Napi::BigUint64Array::New(env, total);
  return in;
}

namespace {

Napi::Value HashBatch(const Napi::CallbackInfo& info) {
  BatchInput in = ParseBatch(info, limits::kMaxSyncHashInputs);
  HashBatchCore(in.tokens.Data(), in.promptOffsets.data(), in.blockOffsets.Data(), in.promptOffsets.size(),
                in.kvBlockSize, in.eagle, in.seed, in.sequence, in.hashes.Data());
  Napi::Object result = Napi::Object::New(info.Env());
  result.Set("hashes", in.hashes);
  result.Set("blockOffsets", in.blockOffsets);
  return result;
}

}  // namespace

void InitHashBatch(Napi::Env env, Napi::Object exports) {
  exports.Set("hashBatch", Napi::Function::New(env, HashBatch, "hashBatch"));
  exports.Set("hashBatchAsync", Napi::Function::New(env, HashBatchAsync, "hashBatchAsync"));
}

}  // namespace kvrelay
