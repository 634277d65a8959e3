#include <napi.h>

#define XXH_INLINE_ALL
#include "xxhash.h"

#include "modules.h"

namespace kvrelay {
namespace {
Napi::Value Xxh3(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsBigInt()) {
    throw Napi::TypeError::New(env, "xxh3(data: Uint8Array, seed: bigint)");
  }
  auto data = info[0].As<Napi::Uint8Array>();
  bool lossless = true;
  uint64_t seed = info[1].As<Napi::BigInt>().Uint64Value(&lossless);
  return Napi::BigInt::New(env, static_cast<uint64_t>(XXH3_64bits_withSeed(data.Data(), data.ByteLength(), seed)));
}
}  // namespace

void InitHashing(Napi::Env env, Napi::Object exports) {
  exports.Set("xxh3", Napi::Function::New(env, Xxh3, "xxh3"));
}
}  // namespace kvrelay
