// N-API surface of the test/bench addon. Each unit registers its own exports.
#include <napi.h>

#include "testing/modules.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  kvrelay::testing::InitPoolBench(env, exports);
  kvrelay::testing::InitPoolMemoryBench(env, exports);
  kvrelay::testing::InitCanonicalPool(env, exports);
  kvrelay::testing::InitRng(env, exports);
  kvrelay::testing::InitHashingBench(env, exports);
  kvrelay::testing::InitBucketMapCheck(env, exports);
  kvrelay::testing::InitPagePopulatorCheck(env, exports);
  kvrelay::testing::InitPoolAccountingCheck(env, exports);
  kvrelay::testing::InitPoolReleaseHold(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(kv_dc_relay_testing, Init)
