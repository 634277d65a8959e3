// N-API surface of the native core. Each unit registers its own exports.
#include <napi.h>

#include "modules.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  kvrelay::InitHashing(env, exports);
  kvrelay::InitHashBatch(env, exports);
  kvrelay::InitCkfHelpers(env, exports);
  kvrelay::InitPool(env, exports);
  kvrelay::InitPackedBatch(env, exports);
  kvrelay::InitCbi1(env, exports);
  kvrelay::InitEngineDecoder(env, exports);
  kvrelay::InitNativeLimits(env, exports);
  kvrelay::InitZmqIngest(env, exports);
  kvrelay::InitThreadSlice(env, exports);
  kvrelay::InitPages(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(kv_dc_relay, Init)
