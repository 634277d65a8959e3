// `nativeLimits`: the call-size bounds of native_limits.h, for the TypeScript wrappers.
#include <napi.h>

#include "bindings/modules.h"
#include "core/native_limits.h"

namespace kvrelay {

void InitNativeLimits(Napi::Env env, Napi::Object exports) {
  auto num = [&](size_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  Napi::Object o = Napi::Object::New(env);
  o.Set("maxSyncBatchWords", num(limits::kMaxSyncBatchWords));
  o.Set("maxAsyncBatchWords", num(limits::kMaxAsyncBatchWords));
  o.Set("maxSyncFilterWords", num(limits::kMaxSyncFilterWords));
  o.Set("maxAsyncHashInputs", num(limits::kMaxAsyncHashInputs));
  o.Set("maxSyncHashInputs", num(limits::kMaxSyncHashInputs));
  o.Set("maxSyncWindowBuckets", num(limits::kMaxSyncWindowBuckets));
  o.Set("maxQueuedPoolCalls", num(limits::kMaxQueuedPoolCalls));
  o.Freeze();
  exports.Set("nativeLimits", o);
}

}  // namespace kvrelay
