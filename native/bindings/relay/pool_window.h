// Ending a pool's publication window: walking its dirty buckets and, for a publication, encoding them
// as one CBI1 delta frame in the pool's own format, with no JavaScript array of images on the way.
// Runs on a libuv worker (pool_workers.cc), or on the caller's thread for a window of at most
// limits::kMaxSyncWindowBuckets buckets (drainDelta).
#pragma once
#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "pool/pool_filter_state.h"

namespace kvrelay {

// How a window ends: as the delta baseSequence -> sequence of the relay dcId, or (discard) counted only.
struct WindowEnd {
  bool discard;
  uint64_t dcId;
  uint64_t baseSequence;
  uint64_t sequence;
};

// `end`: null to discard, or { dcId, baseSequence, sequence }.
WindowEnd WindowEndArg(const Napi::Value& v);

// A window of more images than one delta frame carries comes back as its count alone (the hub
// re-snapshots instead).
class WindowDrain {
 public:
  // Any thread; false (with `error` set) when the frame cannot be allocated.
  bool Run(pool::PoolFilterState* state, const WindowEnd& end, const char** error);
  // null when nothing changed, else { imageCount, payload: Buffer | null }. Once, on the JS thread.
  Napi::Value ToJs(Napi::Env env);

 private:
  std::vector<uint32_t> buckets_;
  std::vector<uint64_t> values_;
  size_t changed_ = 0;
  std::unique_ptr<uint8_t[]> frame_;
  size_t frameLen_ = 0;
};

}  // namespace kvrelay
