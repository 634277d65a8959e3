#include "bindings/relay/pool_batch_napi.h"

#include <new>
#include <string>

#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "pool/packed_batch.h"

namespace kvrelay {

size_t PackedBatch::events() const { return meta.size() / pool::kMetaStride; }

void CopyPackedBatchArg(const Napi::CallbackInfo& info, size_t first, size_t maxWords, PackedBatch* out) {
  Napi::Env env = info.Env();
  auto meta = args::U32Array(args::Arg(info, first), "meta");
  auto words = args::U64Array(args::Arg(info, first + 1), "words");
  // Every event holds at least its workerId word, so this also bounds the event count.
  const size_t metaLimit = maxWords * pool::kMetaStride;
  if (words.ElementLength() > maxWords || meta.ElementLength() > metaLimit) {
    throw Napi::RangeError::New(env, "event batch too large: at most " + std::to_string(maxWords) +
                                         " words and as many events per call");
  }
  try {
    out->meta.assign(meta.Data(), meta.Data() + meta.ElementLength());
    out->words.assign(words.Data(), words.Data() + words.ElementLength());
  } catch (const std::bad_alloc&) {
    args::ThrowCoded(env, "AllocationFailed", "cannot copy the event batch");
  }
  const std::string problem = pool::ValidatePackedBatch(out->meta.data(), out->meta.size(), out->words.size());
  if (!problem.empty()) throw Napi::RangeError::New(env, "malformed event batch: " + problem);
}

namespace {

Napi::Object Frozen(Napi::Object o) {
  o.Freeze();
  return o;
}

Napi::Object Layout(Napi::Env env) {
  auto num = [&](uint32_t v) { return Napi::Number::New(env, v); };
  Napi::Object meta = Napi::Object::New(env);
  meta.Set("kind", num(pool::kMetaKind));
  meta.Set("dpRank", num(pool::kMetaDpRank));
  meta.Set("flags", num(pool::kMetaFlags));
  meta.Set("startPosition", num(pool::kMetaStart));
  meta.Set("blockCount", num(pool::kMetaCount));
  Napi::Object kind = Napi::Object::New(env);
  kind.Set("stored", num(pool::kStored));
  kind.Set("removed", num(pool::kRemoved));
  kind.Set("cleared", num(pool::kCleared));
  Napi::Object flag = Napi::Object::New(env);
  flag.Set("parent", num(pool::kFlagParent));
  flag.Set("start", num(pool::kFlagStart));
  Napi::Array errorNames = Napi::Array::New(env, pool::kLastPoolError + 1);
  for (uint8_t i = 0; i <= pool::kLastPoolError; ++i) {
    const char* name = pool::PoolErrorName(static_cast<pool::PoolError>(i));
    errorNames.Set(i, name == nullptr ? env.Null() : Napi::String::New(env, name));
  }
  Napi::Object layout = Napi::Object::New(env);
  layout.Set("metaStride", num(pool::kMetaStride));
  layout.Set("meta", Frozen(meta));
  layout.Set("kind", Frozen(kind));
  layout.Set("flag", Frozen(flag));
  layout.Set("errorNames", Frozen(errorNames));
  return Frozen(layout);
}

}  // namespace

void InitPackedBatch(Napi::Env env, Napi::Object exports) { exports.Set("packedBatchLayout", Layout(env)); }

}  // namespace kvrelay
