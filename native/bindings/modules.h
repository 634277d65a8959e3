// Registration entry points of the native units (one per JavaScript concept).
#pragma once
#include <napi.h>

namespace kvrelay {
void InitHashing(Napi::Env env, Napi::Object exports);
void InitHashBatch(Napi::Env env, Napi::Object exports);
void InitCkfHelpers(Napi::Env env, Napi::Object exports);
void InitPool(Napi::Env env, Napi::Object exports);
void InitPackedBatch(Napi::Env env, Napi::Object exports);
void InitCbi1(Napi::Env env, Napi::Object exports);
void InitEngineDecoder(Napi::Env env, Napi::Object exports);
void InitRouterEventDecoder(Napi::Env env, Napi::Object exports);
void InitNativeLimits(Napi::Env env, Napi::Object exports);
void InitZmqIngest(Napi::Env env, Napi::Object exports);
void InitThreadSlice(Napi::Env env, Napi::Object exports);
void InitPages(Napi::Env env, Napi::Object exports);
void InitLoopDelay(Napi::Env env, Napi::Object exports);
void InitLoopTurns(Napi::Env env, Napi::Object exports);
}  // namespace kvrelay
