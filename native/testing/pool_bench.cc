// Native benchmark entry points for bench/filter.ts: churn through PoolFilterState::ApplyBatch (engine events)
// or ApplyCanonicalBatch (raw canonical hashes) with the load kept inside [minLoad, maxLoad]. Only
// apply + drain are timed; generating the ops is not.
// Runs synchronously on the calling thread: test/bench addon only, never in the production exports.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "bindings/napi_args.h"
#include "pool/pool_filter_state.h"
#include "testing/churn.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

// Arguments shared by both benchmarks: a filter size and the load band the churn stays in.
struct Band {
  uint64_t bucketCount;
  double minLoad;
  double maxLoad;
  uint64_t minOps;
  double slots() const { return 4.0 * static_cast<double>(bucketCount); }
};

Band BandArgs(const Napi::CallbackInfo& info, size_t first) {
  Napi::Env env = info.Env();
  Band band{args::U64(args::Arg(info, 0), "bucketCount", true),
            args::Finite(args::Arg(info, first), "minLoad"),
            args::Finite(args::Arg(info, first + 1), "maxLoad"),
            args::U64(args::Arg(info, first + 2), "minOps", true)};
  if (!ckf::IsValidBucketCount(band.bucketCount) || band.bucketCount > ckf::kMaxBucketCount) {
    throw Napi::RangeError::New(env, "bucketCount must be a power of two in [2, 2^24]");
  }
  if (!(band.minLoad > 0) || !(band.maxLoad > band.minLoad) || band.maxLoad >= 1) {
    throw Napi::RangeError::New(env, "need 0 < minLoad < maxLoad < 1");
  }
  return band;
}

// Times `step` (one batch: apply + drain, returns its op count) until minOps; median of batch rates
// is robust to preemption on a shared machine.
template <typename Step>
Napi::Object TimeBatches(Napi::Env env, const Band& band, const pool::PoolFilterState& state, Step step) {
  uint64_t ops = 0;
  std::chrono::nanoseconds elapsed{0};
  std::vector<double> batchRates;
  while (ops < band.minOps) {
    std::chrono::nanoseconds took{0};
    const uint64_t batchOps = step(&took);
    elapsed += took;
    ops += batchOps;
    batchRates.push_back(static_cast<double>(batchOps) * 1e9 / static_cast<double>(took.count()));
  }
  std::nth_element(batchRates.begin(), batchRates.begin() + batchRates.size() / 2, batchRates.end());
  const double seconds = static_cast<double>(elapsed.count()) / 1e9;
  const pool::Stats st = state.GetStats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("ops", Napi::Number::New(env, static_cast<double>(ops)));
  out.Set("seconds", Napi::Number::New(env, seconds));
  out.Set("opsPerSecond", Napi::Number::New(env, static_cast<double>(ops) / seconds));
  out.Set("medianBatchOpsPerSecond", Napi::Number::New(env, batchRates[batchRates.size() / 2]));
  out.Set("finalLoad", Napi::Number::New(env, static_cast<double>(st.residentCount) / band.slots()));
  out.Set("capacityFailures", Napi::Number::New(env, static_cast<double>(st.counters.capacityFailures)));
  return out;
}

// (bucketCount, blocksPerPrompt, minLoad, maxLoad, minOps): engine events with per-source lineage.
Napi::Value BenchPoolNative(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t blocksPerPrompt = args::U32(args::Arg(info, 1), "blocksPerPrompt");
  if (blocksPerPrompt == 0) throw Napi::RangeError::New(env, "need blocksPerPrompt > 0");
  const Band band = BandArgs(info, 2);

  pool::PoolFilterState state(static_cast<uint32_t>(band.bucketCount), ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  EngineChurn churn(blocksPerPrompt, band.slots(), band.minLoad, band.maxLoad);
  churn.Fill(&state);
  return TimeBatches(env, band, state, [&](std::chrono::nanoseconds* took) {
    churn.Next();
    const auto start = std::chrono::steady_clock::now();
    churn.ApplyAndDrain(&state);
    *took = std::chrono::steady_clock::now() - start;
    return churn.BatchOps();
  });
}

// (bucketCount, minLoad, maxLoad, minOps): raw canonical inserts and removals with owner counting
// (the insertCanonical / removeCanonical path, no lineage): fresh hashes in, oldest out.
Napi::Value BenchPoolCanonicalNative(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Band band = BandArgs(info, 1);
  pool::PoolFilterState state(static_cast<uint32_t>(band.bucketCount), ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  CanonicalChurn churn(band.slots(), band.minLoad, band.maxLoad);
  churn.Fill(&state);
  return TimeBatches(env, band, state, [&](std::chrono::nanoseconds* took) {
    churn.Next();
    const auto start = std::chrono::steady_clock::now();
    churn.ApplyAndDrain(&state);
    *took = std::chrono::steady_clock::now() - start;
    return churn.BatchOps();
  });
}

}  // namespace

void InitPoolBench(Napi::Env env, Napi::Object exports) {
  exports.Set("benchPoolNative", Napi::Function::New(env, BenchPoolNative, "benchPoolNative"));
  exports.Set("benchPoolCanonicalNative", Napi::Function::New(env, BenchPoolCanonicalNative, "benchPoolCanonicalNative"));
}

}  // namespace testing
}  // namespace kvrelay
