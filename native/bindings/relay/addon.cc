// kv_dc_relay.node: what only the relay runs (pool filter state and its workers, packed batches, the
// engine decoder, ingest's SUB sockets, page and thread plumbing, the event loop's delay and turns). The shared data plane is in
// kv_dc_relay_core.node (bindings/core/addon.cc).
#include <napi.h>

#include "bindings/modules.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  kvrelay::InitPool(env, exports);
  kvrelay::InitPackedBatch(env, exports);
  kvrelay::InitEngineDecoder(env, exports);
  kvrelay::InitRouterEventDecoder(env, exports);
  kvrelay::InitNativeLimits(env, exports);
  kvrelay::InitZmqIngest(env, exports);
  kvrelay::InitThreadSlice(env, exports);
  kvrelay::InitPages(env, exports);
  kvrelay::InitLoopDelay(env, exports);
  kvrelay::InitLoopTurns(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(kv_dc_relay, Init)
