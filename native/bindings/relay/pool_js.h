// JavaScript values of the pool state shared by the production binding (pool_wrap.cc) and the
// test/bench binding (testing/): stats, drained images, bucket words, error names.
#pragma once
#include <napi.h>

#include <vector>

#include "pool/pool_filter_state.h"

namespace kvrelay {
namespace pooljs {

// null for PoolError::kNone, else the error's name.
Napi::Value ErrorValue(Napi::Env env, pool::PoolError e);
Napi::Object StatsToJs(Napi::Env env, const pool::Stats& st);
Napi::Object TableStatsToJs(Napi::Env env, const pool::TableStats& t);
// Drains the window: { buckets, values } or null when nothing changed. The vectors are scratch.
Napi::Value DrainToJs(Napi::Env env, pool::PoolFilterState* state, std::vector<uint32_t>* buckets,
                      std::vector<uint64_t>* values);
// A copy of every bucket word, synchronous: RangeError above limits::kMaxSyncFilterWords buckets.
Napi::BigUint64Array WordsToJs(Napi::Env env, const pool::PoolFilterState& state);
// bucketCount / seed / maxKicks / maxTrackedBlocks (optional) / reserveBlocks, reservePerSource,
// reserveWorkerIds, reserveDpRanks (optional: pool::Reservation) constructor arguments, checked;
// throws a JS error when invalid.
struct FilterArgs {
  uint32_t bucketCount;
  uint64_t seed;
  uint32_t maxKicks;
  uint64_t maxTrackedBlocks;
  pool::Reservation reservation;
};
FilterArgs FilterArgsOf(const Napi::CallbackInfo& info);

}  // namespace pooljs
}  // namespace kvrelay
