// Registration entry points of the test/bench addon (kv_dc_relay_testing.node): vector-only and
// bench-only surfaces that the production addon does not export. Loaded only by test/ and bench/.
#pragma once
#include <napi.h>

namespace kvrelay {
namespace testing {
void InitPoolBench(Napi::Env env, Napi::Object exports);
void InitPoolMemoryBench(Napi::Env env, Napi::Object exports);
void InitCanonicalPool(Napi::Env env, Napi::Object exports);
void InitRng(Napi::Env env, Napi::Object exports);
void InitHashingBench(Napi::Env env, Napi::Object exports);
void InitBucketMapCheck(Napi::Env env, Napi::Object exports);
void InitPagePopulatorCheck(Napi::Env env, Napi::Object exports);
void InitPoolAccountingCheck(Napi::Env env, Napi::Object exports);
void InitPoolReleaseHold(Napi::Env env, Napi::Object exports);
}  // namespace testing
}  // namespace kvrelay
