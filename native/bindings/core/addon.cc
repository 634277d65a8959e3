// kv_dc_relay_core.node: the data plane a consumer and the relay share (block hashing, CKF addressing,
// the CBI1 codec). It links no ingest, pool or ZMQ code, so `kv-dc-relay/client` loads on a host with
// no libzmq in any form.
#include <napi.h>

#include "bindings/modules.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  kvrelay::InitHashing(env, exports);
  kvrelay::InitHashBatch(env, exports);
  kvrelay::InitCkfHelpers(env, exports);
  kvrelay::InitCbi1(env, exports);
  kvrelay::InitNativeLimits(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(kv_dc_relay_core, Init)
