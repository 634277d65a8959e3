#include "bindings/relay/pool_js.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

#include "bindings/napi_args.h"
#include "core/native_limits.h"

namespace kvrelay {
namespace pooljs {

Napi::Value ErrorValue(Napi::Env env, pool::PoolError e) {
  const char* name = pool::PoolErrorName(e);
  return name == nullptr ? env.Null() : Napi::String::New(env, name);
}

namespace {
// An object of counts, by name.
Napi::Object CountsToJs(Napi::Env env, std::initializer_list<std::pair<const char*, uint64_t>> counts) {
  Napi::Object out = Napi::Object::New(env);
  for (const auto& [name, value] : counts) out.Set(name, Napi::Number::New(env, static_cast<double>(value)));
  return out;
}
}  // namespace

Napi::Object StatsToJs(Napi::Env env, const pool::Stats& st) {
  Napi::Object out = CountsToJs(env, {
                                         {"bucketCount", st.bucketCount},
                                         {"residentCount", st.residentCount},
                                         {"ownedHashes", st.ownedHashes},
                                         {"lineageEntries", st.lineageEntries},
                                         {"sourceCount", st.sourceCount},
                                         {"pendingEvents", st.pendingEvents},
                                         {"dirtyBuckets", st.dirtyBuckets},
                                         {"capacityFailures", st.counters.capacityFailures},
                                         {"unknownRemovals", st.counters.unknownRemovals},
                                         {"parentNotFound", st.counters.parentNotFound},
                                         {"invariantViolations", st.counters.invariantViolations},
                                         {"trackedBlockLimitRejections", st.counters.trackedBlockLimitRejections},
                                         {"maxTrackedBlocks", st.maxTrackedBlocks},
                                     });
  out.Set("loadFactor", Napi::Number::New(env, static_cast<double>(st.residentCount) / (4.0 * st.bucketCount)));
  out.Set("rngState", Napi::BigInt::New(env, st.rngState));
  return out;
}

Napi::Object TableStatsToJs(Napi::Env env, const pool::TableStats& t) {
  return CountsToJs(env, {
                             {"ownerGrowths", t.ownerGrowths},
                             {"ownerMigrated", t.ownerMigrated},
                             {"lineageGrowths", t.lineageGrowths},
                             {"lineageMigrated", t.lineageMigrated},
                             {"reservedLineageLeft", t.reservedLineageLeft},
                         });
}

Napi::Value DrainToJs(Napi::Env env, pool::PoolFilterState* state, std::vector<uint32_t>* buckets,
                      std::vector<uint64_t>* values) {
  if (!state->Drain(buckets, values)) return env.Null();
  auto jsBuckets = Napi::Uint32Array::New(env, buckets->size());
  auto jsValues = Napi::BigUint64Array::New(env, values->size());
  std::memcpy(jsBuckets.Data(), buckets->data(), buckets->size() * sizeof(uint32_t));
  std::memcpy(jsValues.Data(), values->data(), values->size() * sizeof(uint64_t));
  Napi::Object out = Napi::Object::New(env);
  out.Set("buckets", jsBuckets);
  out.Set("values", jsValues);
  return out;
}

Napi::BigUint64Array WordsToJs(Napi::Env env, const pool::PoolFilterState& state) {
  const uint32_t n = state.filter().bucketCount();
  if (n > limits::kMaxSyncFilterWords) {
    throw Napi::RangeError::New(env, "words() copies at most " + std::to_string(limits::kMaxSyncFilterWords) +
                                         " buckets on the calling thread; use copyWordsAsync()");
  }
  auto out = Napi::BigUint64Array::New(env, n);
  std::memcpy(out.Data(), state.filter().words(), size_t{n} * sizeof(uint64_t));
  return out;
}

FilterArgs FilterArgsOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t bucketCount = args::U64(args::Arg(info, 0), "bucketCount", true);
  if (!ckf::IsValidBucketCount(bucketCount) || bucketCount > ckf::kMaxBucketCount) {
    throw Napi::RangeError::New(env, "bucketCount must be a power of two in [2, 2^24]");
  }
  const uint64_t seed = args::U64(args::Arg(info, 1), "seed");
  const uint32_t maxKicks = args::U32(args::Arg(info, 2), "maxKicks");
  if (maxKicks < 1 || maxKicks > ckf::kMaxKicks) {
    Napi::Error e = Napi::RangeError::New(env, "maxKicks must be in [1, 4096]");
    e.Set("code", Napi::String::New(env, "InvalidMaxKicks"));
    throw e;
  }
  // Optional (the test/bench pools leave it out): unbounded up to the largest limit.
  const Napi::Value limit = args::Arg(info, 3);
  const uint64_t maxTrackedBlocks =
      limit.IsUndefined() ? pool::kMaxTrackedBlocks : args::UInt(limit, "maxTrackedBlocks", pool::kMaxTrackedBlocks);
  if (maxTrackedBlocks == 0) throw Napi::RangeError::New(env, "maxTrackedBlocks must be at least 1");
  // Optional: no reservation (the tables grow as they fill). More than the pool may track would be
  // memory no block can use.
  pool::Reservation reservation;
  const Napi::Value reserve = args::Arg(info, 4);
  if (!reserve.IsUndefined()) {
    reservation.blocks = args::UInt(reserve, "reserveBlocks", std::min(pool::kMaxReservedBlocks, maxTrackedBlocks));
    reservation.perSource = args::UInt(args::Arg(info, 5), "reservePerSource", reservation.blocks);
    // Optional: the sources whose lineage tables are made now (Reservation::sources).
    const Napi::Value workers = args::Arg(info, 6);
    if (!workers.IsUndefined()) {
      const Napi::BigUint64Array ids = args::U64Array(workers, "reserveWorkerIds");
      const Napi::Uint32Array ranks = args::U32Array(args::Arg(info, 7), "reserveDpRanks");
      if (ids.ElementLength() != ranks.ElementLength()) {
        throw Napi::RangeError::New(env, "reserveWorkerIds and reserveDpRanks must have the same length");
      }
      if (ids.ElementLength() > pool::kMaxReservedSources) {
        throw Napi::RangeError::New(env, "a reservation names at most 65536 sources");
      }
      reservation.sources.reserve(ids.ElementLength());
      for (size_t i = 0; i < ids.ElementLength(); ++i) reservation.sources.emplace_back(ids[i], ranks[i]);
    }
  }
  return FilterArgs{static_cast<uint32_t>(bucketCount), seed, maxKicks, maxTrackedBlocks, reservation};
}

}  // namespace pooljs
}  // namespace kvrelay
