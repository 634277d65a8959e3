// N-API surface of token hashing (§1) and the stateless CKF helpers (§2) consumers use to probe replicas.
#include <napi.h>

#include <string>
#include <utility>
#include <vector>

#include "block_hash.h"
#include "ckf.h"
#include "hash_batch.h"
#include "modules.h"
#include "napi_args.h"
#include "native_limits.h"

namespace kvrelay {
namespace {

using hashing::BlockMm;

Napi::Value Xxh3(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsBigInt()) {
    throw Napi::TypeError::New(env, "xxh3(data: Uint8Array, seed: bigint)");
  }
  auto data = info[0].As<Napi::TypedArray>();
  const uint64_t seed = args::U64(info[1], "seed");
  const auto* bytes = static_cast<const uint8_t*>(data.ArrayBuffer().Data()) + data.ByteOffset();
  return Napi::BigInt::New(env, hashing::Xxh3(bytes, data.ByteLength(), seed));
}

Napi::Value SaltSeed(const Napi::CallbackInfo& info) {
  std::string ns, lora;  // absent stays "", which SaltSeed treats as absent
  args::OptionalString(args::Arg(info, 0), "cacheNamespace", &ns);
  args::OptionalString(args::Arg(info, 1), "loraName", &lora);
  return Napi::BigInt::New(info.Env(), hashing::SaltSeed(ns, lora));
}

uint32_t BlockSizeArg(const Napi::Value& v) {
  const uint32_t bs = args::U32(v, "kvBlockSize");
  if (bs == 0) throw Napi::RangeError::New(v.Env(), "kvBlockSize cannot be 0");
  return bs;
}

// mm: undefined/null, or an array indexed by block whose entries are null/undefined (plain hashing)
// or a BigUint64Array / bigint[] of that block's mm hashes.
bool MmArg(const Napi::Value& v, std::vector<BlockMm>* out) {
  if (v.IsUndefined() || v.IsNull()) return false;
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), "mmHashes must be an array (one entry per block) or null");
  Napi::Array list = v.As<Napi::Array>();
  out->resize(list.Length());
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value entry = list.Get(i);
    BlockMm& block = (*out)[i];
    if (entry.IsUndefined() || entry.IsNull()) continue;
    block.present = true;
    if (entry.IsTypedArray()) {
      auto arr = args::U64Array(entry, "mmHashes entry");
      block.mmHashes.assign(arr.Data(), arr.Data() + arr.ElementLength());
    } else if (entry.IsArray()) {
      Napi::Array hashes = entry.As<Napi::Array>();
      for (uint32_t k = 0; k < hashes.Length(); ++k) block.mmHashes.push_back(args::U64(hashes.Get(k), "mm hash"));
    } else {
      throw Napi::TypeError::New(v.Env(), "mmHashes entry must be null, a BigUint64Array or a bigint[]");
    }
  }
  return true;
}

// (tokens, kvBlockSize, eagle, seed, mmHashes?) -> block hashes; `chain` turns them into sequence hashes.
Napi::Value BlockHashesImpl(const Napi::CallbackInfo& info, bool chain) {
  Napi::Env env = info.Env();
  auto tokens = args::U32Array(args::Arg(info, 0), "tokens");
  const uint32_t bs = BlockSizeArg(args::Arg(info, 1));
  const bool eagle = args::Bool(args::Arg(info, 2), "eagle");
  const uint64_t seed = args::U64(args::Arg(info, 3), "seed");
  std::vector<BlockMm> mm;
  const bool hasMm = MmArg(args::Arg(info, 4), &mm);
  const size_t blocks = hashing::CompleteBlockCount(tokens.ElementLength(), bs, eagle);
  auto out = Napi::BigUint64Array::New(env, blocks);
  if (chain && !hasMm) {
    hashing::SequenceHashesPlain(tokens.Data(), tokens.ElementLength(), bs, eagle, seed, out.Data());
    return out;
  }
  hashing::BlockHashes(tokens.Data(), tokens.ElementLength(), bs, eagle, seed, hasMm ? &mm : nullptr, out.Data());
  if (chain) hashing::ChainInPlace(out.Data(), blocks);
  return out;
}
Napi::Value BlockHashes(const Napi::CallbackInfo& info) { return BlockHashesImpl(info, false); }
Napi::Value SequenceHashes(const Napi::CallbackInfo& info) { return BlockHashesImpl(info, true); }

Napi::Value SequenceHashesFromBlocks(const Napi::CallbackInfo& info) {
  auto blocks = args::U64Array(args::Arg(info, 0), "blockHashes");
  auto out = Napi::BigUint64Array::New(info.Env(), blocks.ElementLength());
  std::copy(blocks.Data(), blocks.Data() + blocks.ElementLength(), out.Data());
  hashing::ChainInPlace(out.Data(), out.ElementLength());
  return out;
}

// ---- batch: many prompts (same block size, format and salt) in one call -------------------------

void HashBatchCore(const uint32_t* tokens, const uint32_t* offsets, const uint32_t* blockOffsets, size_t n,
                   uint32_t bs, bool eagle, uint64_t seed, bool sequence, uint64_t* out) {
  size_t p = 0;
  if (sequence) {
    for (; p + 2 < n; p += 2) {
      hashing::SequenceHashesPlainPair({tokens + offsets[p], offsets[p + 1] - offsets[p], out + blockOffsets[p]},
                                       {tokens + offsets[p + 1], offsets[p + 2] - offsets[p + 1], out + blockOffsets[p + 1]},
                                       bs, eagle, seed);
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

Napi::Value HashBatch(const Napi::CallbackInfo& info) {
  BatchInput in = ParseBatch(info);
  HashBatchCore(in.tokens.Data(), in.promptOffsets.data(), in.blockOffsets.Data(), in.promptOffsets.size(),
                in.kvBlockSize, in.eagle, in.seed, in.sequence, in.hashes.Data());
  Napi::Object result = Napi::Object::New(info.Env());
  result.Set("hashes", in.hashes);
  result.Set("blockOffsets", in.blockOffsets);
  return result;
}

// Runs HashBatchCore on a libuv worker thread over its own copy of the tokens and offsets, so the
// caller's arrays are free once the call returns. The outputs are allocated up front and reach
// JavaScript only when the promise resolves.
class HashBatchWorker : public Napi::AsyncWorker {
 public:
  HashBatchWorker(Napi::Env env, BatchInput in)
      : Napi::AsyncWorker(env, "kvrelay.hashBatchAsync"),
        deferred_(Napi::Promise::Deferred::New(env)),
        tokens_(in.tokens.Data(), in.tokens.Data() + in.tokens.ElementLength()),
        offsets_(std::move(in.promptOffsets)),
        blockOffsetsRef_(Napi::Persistent(in.blockOffsets)),
        hashesRef_(Napi::Persistent(in.hashes)),
        blockOffsets_(in.blockOffsets.Data()),
        out_(in.hashes.Data()),
        kvBlockSize_(in.kvBlockSize),
        eagle_(in.eagle),
        sequence_(in.sequence),
        seed_(in.seed) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    HashBatchCore(tokens_.data(), offsets_.data(), blockOffsets_, offsets_.size(), kvBlockSize_, eagle_, seed_,
                  sequence_, out_);
  }
  void OnOK() override {
    Napi::Object result = Napi::Object::New(Env());
    result.Set("hashes", hashesRef_.Value());
    result.Set("blockOffsets", blockOffsetsRef_.Value());
    deferred_.Resolve(result);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<uint32_t> tokens_;
  std::vector<uint32_t> offsets_;
  Napi::Reference<Napi::Uint32Array> blockOffsetsRef_;
  Napi::Reference<Napi::BigUint64Array> hashesRef_;
  const uint32_t* blockOffsets_;
  uint64_t* out_;
  uint32_t kvBlockSize_;
  bool eagle_;
  bool sequence_;
  uint64_t seed_;
};

Napi::Value HashBatchAsync(const Napi::CallbackInfo& info) {
  auto* worker = new HashBatchWorker(info.Env(), ParseBatch(info));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value PadValueForMmHash(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), hashing::PadValueForMmHash(args::U64(args::Arg(info, 0), "mmHash")));
}

Napi::Value HashMmIdentifier(const Napi::CallbackInfo& info) {
  Napi::Value v = args::Arg(info, 0);
  if (!v.IsString()) throw Napi::TypeError::New(info.Env(), "identifier must be a string");
  uint64_t out = 0;
  if (!hashing::HashMmIdentifier(v.As<Napi::String>().Utf8Value(), &out)) return info.Env().Null();
  return Napi::BigInt::New(info.Env(), out);
}

// ---- CKF helpers ---------------------------------------------------------------------------------

Napi::Value CkfBucketCount(const Napi::CallbackInfo& info) {
  const uint64_t expected = args::U64(args::Arg(info, 0), "expectedBlocks", true);
  uint64_t count = 0;
  switch (ckf::BucketCountFor(expected, &count)) {
    case ckf::BucketCountError::kExpectedCapacityZero:
      args::ThrowCoded(info.Env(), "ExpectedCapacityZero", "expected blocks per DC must be > 0");
    case ckf::BucketCountError::kCapacityOverflow:
      args::ThrowCoded(info.Env(), "CapacityOverflow", "bucket count overflows u64");
    case ckf::BucketCountError::kNone:
      break;
  }
  return Napi::Number::New(info.Env(), static_cast<double>(count));  // a power of two: exact as a double
}

uint64_t BucketCountArg(const Napi::Value& v) {
  const uint64_t n = args::U64(v, "bucketCount", true);
  if (!ckf::IsValidBucketCount(n) || n > (uint64_t{1} << 32)) {
    throw Napi::RangeError::New(v.Env(), "bucketCount must be a power of two in [2, 2^32]");
  }
  return n;
}

Napi::Value CkfPrepare(const Napi::CallbackInfo& info) {
  const uint64_t hash = args::U64(args::Arg(info, 0), "hash");
  const uint64_t bucketCount = BucketCountArg(args::Arg(info, 1));
  const uint64_t seed = args::U64(args::Arg(info, 2), "seed");
  const ckf::Prepared p = ckf::Addressing(bucketCount, seed).Prepare(hash);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("fingerprint", Napi::Number::New(info.Env(), p.fp));
  out.Set("bucketA", Napi::Number::New(info.Env(), static_cast<double>(p.a)));
  out.Set("bucketB", Napi::Number::New(info.Env(), static_cast<double>(p.b)));
  return out;
}

Napi::Value BucketContains(const Napi::CallbackInfo& info) {
  const uint64_t word = args::U64(args::Arg(info, 0), "word");
  const uint32_t fp = args::U32(args::Arg(info, 1), "fingerprint");
  if (fp == 0 || fp > 0xFFFF) throw Napi::RangeError::New(info.Env(), "fingerprint must be in [1, 65535]");
  return Napi::Boolean::New(info.Env(), ckf::BucketContains(word, static_cast<uint16_t>(fp)));
}

}  // namespace

BatchInput ParseBatch(const Napi::CallbackInfo& info) {
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
  if (uint64_t{in.tokens.ElementLength()} + jsOffsets.ElementLength() > limits::kMaxAsyncHashInputs) {
    throw Napi::RangeError::New(env, "prompt batch too large: at most " + std::to_string(limits::kMaxAsyncHashInputs) +
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

void InitHashing(Napi::Env env, Napi::Object exports) {
  exports.Set("xxh3", Napi::Function::New(env, Xxh3, "xxh3"));
  exports.Set("saltSeed", Napi::Function::New(env, SaltSeed, "saltSeed"));
  exports.Set("blockHashes", Napi::Function::New(env, BlockHashes, "blockHashes"));
  exports.Set("sequenceHashes", Napi::Function::New(env, SequenceHashes, "sequenceHashes"));
  exports.Set("sequenceHashesFromBlocks", Napi::Function::New(env, SequenceHashesFromBlocks, "sequenceHashesFromBlocks"));
  exports.Set("hashBatch", Napi::Function::New(env, HashBatch, "hashBatch"));
  exports.Set("hashBatchAsync", Napi::Function::New(env, HashBatchAsync, "hashBatchAsync"));
  exports.Set("padValueForMmHash", Napi::Function::New(env, PadValueForMmHash, "padValueForMmHash"));
  exports.Set("hashMmIdentifier", Napi::Function::New(env, HashMmIdentifier, "hashMmIdentifier"));
  exports.Set("ckfBucketCount", Napi::Function::New(env, CkfBucketCount, "ckfBucketCount"));
  exports.Set("ckfPrepare", Napi::Function::New(env, CkfPrepare, "ckfPrepare"));
  exports.Set("bucketContains", Napi::Function::New(env, BucketContains, "bucketContains"));
}

}  // namespace kvrelay
