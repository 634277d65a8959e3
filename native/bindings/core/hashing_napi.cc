// N-API surface of token hashing (§1): XXH3, salts, block and sequence hashes of one prompt, and the
// multimodal helpers (a batch of prompts: hash_batch.cc; the CKF helpers: ckf_napi.cc).
#include <napi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/block_hash.h"
#include "bindings/core/hash_batch.h"
#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "core/native_limits.h"

namespace kvrelay {
namespace {

using hashing::BlockMm;

// Synchronous hashing runs on the caller's thread, the event loop: its input is bounded.
void RequireSyncHashInputs(Napi::Env env, size_t count, const char* what) {
  if (count <= limits::kMaxSyncHashInputs) return;
  throw Napi::RangeError::New(env, "at most " + std::to_string(limits::kMaxSyncHashInputs) + " " + what + " per call");
}

Napi::Value Xxh3(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsBigInt()) {
    throw Napi::TypeError::New(env, "xxh3(data: Uint8Array, seed: bigint)");
  }
  auto data = info[0].As<Napi::TypedArray>();
  RequireSyncHashInputs(env, (data.ByteLength() + sizeof(uint32_t) - 1) / sizeof(uint32_t), "4-byte words of data");
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
  RequireSyncHashInputs(env, tokens.ElementLength(), "tokens (hashBatchAsync takes more)");
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
  RequireSyncHashInputs(info.Env(), blocks.ElementLength(), "block hashes");
  auto out = Napi::BigUint64Array::New(info.Env(), blocks.ElementLength());
  std::copy(blocks.Data(), blocks.Data() + blocks.ElementLength(), out.Data());
  hashing::ChainInPlace(out.Data(), out.ElementLength());
  return out;
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

}  // namespace

void InitHashing(Napi::Env env, Napi::Object exports) {
  exports.Set("xxh3", Napi::Function::New(env, Xxh3, "xxh3"));
  exports.Set("saltSeed", Napi::Function::New(env, SaltSeed, "saltSeed"));
  exports.Set("blockHashes", Napi::Function::New(env, BlockHashes, "blockHashes"));
  exports.Set("sequenceHashes", Napi::Function::New(env, SequenceHashes, "sequenceHashes"));
  exports.Set("sequenceHashesFromBlocks", Napi::Function::New(env, SequenceHashesFromBlocks, "sequenceHashesFromBlocks"));
  exports.Set("padValueForMmHash", Napi::Function::New(env, PadValueForMmHash, "padValueForMmHash"));
  exports.Set("hashMmIdentifier", Napi::Function::New(env, HashMmIdentifier, "hashMmIdentifier"));
}

}  // namespace kvrelay
