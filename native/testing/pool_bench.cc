// Native benchmark entry points for bench/filter.ts: churn through PoolFilterState::ApplyBatch (engine events)
// or ApplyCanonicalBatch (raw canonical hashes) with the load kept inside [minLoad, maxLoad]. Only
// apply + drain are timed; generating the ops is not.
// Runs synchronously on the calling thread: test/bench addon only, never in the production exports.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <vector>

#include "napi_args.h"
#include "pool_filter_state.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

struct Prompt {
  uint64_t worker;
  std::vector<uint64_t> extIds;
};

class ChurnGenerator {
 public:
  ChurnGenerator(uint32_t blocksPerPrompt, uint64_t seed) : blocks_(blocksPerPrompt), rng_(seed) {}

  void AddStore(std::vector<uint32_t>* meta, std::vector<uint64_t>* words) {
    Prompt p{1 + (ckf::SplitmixNext(&rng_) & 3), {}};
    meta->insert(meta->end(), {pool::kStored, 0, 0, 0, blocks_});
    words->push_back(p.worker);
    for (uint32_t i = 0; i < blocks_; ++i) p.extIds.push_back(ckf::SplitmixNext(&rng_));
    words->insert(words->end(), p.extIds.begin(), p.extIds.end());
    for (uint32_t i = 0; i < blocks_; ++i) words->push_back(ckf::SplitmixNext(&rng_));
    live_.push_back(std::move(p));
  }
  void AddRemoveOldest(std::vector<uint32_t>* meta, std::vector<uint64_t>* words) {
    Prompt& p = live_.front();
    meta->insert(meta->end(), {pool::kRemoved, 0, 0, 0, blocks_});
    words->push_back(p.worker);
    words->insert(words->end(), p.extIds.rbegin(), p.extIds.rend());  // last block first, like engines
    live_.pop_front();
  }
  uint64_t liveBlocks() const { return live_.size() * blocks_; }
  bool CoinFlip() { return (ckf::SplitmixNext(&rng_) & 1) != 0; }

 private:
  uint32_t blocks_;
  uint64_t rng_;
  std::deque<Prompt> live_;
};

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
  ChurnGenerator gen(blocksPerPrompt, 42);
  const double slots = band.slots();
  const double middle = (band.minLoad + band.maxLoad) / 2 * slots;
  const size_t eventsPerBatch = 1024;
  std::vector<uint32_t> meta;
  std::vector<uint64_t> words;
  std::vector<uint8_t> errors(eventsPerBatch);
  std::vector<uint32_t> drainBuckets;
  std::vector<uint64_t> drainValues;

  // Fill to the middle of the band (untimed).
  while (gen.liveBlocks() < middle) {
    meta.clear();
    words.clear();
    for (size_t e = 0; e < eventsPerBatch && gen.liveBlocks() < middle; ++e) gen.AddStore(&meta, &words);
    errors.resize(meta.size() / pool::kMetaStride);
    state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
  }
  state.Drain(&drainBuckets, &drainValues);

  return TimeBatches(env, band, state, [&](std::chrono::nanoseconds* took) {
    meta.clear();
    words.clear();
    for (size_t e = 0; e < eventsPerBatch; ++e) {
      const double load = static_cast<double>(gen.liveBlocks()) / slots;
      const bool store = load < band.minLoad || (load < band.maxLoad && gen.CoinFlip());
      if (store) {
        gen.AddStore(&meta, &words);
      } else {
        gen.AddRemoveOldest(&meta, &words);
      }
    }
    errors.resize(eventsPerBatch);
    const auto start = std::chrono::steady_clock::now();
    state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
    state.Drain(&drainBuckets, &drainValues);
    *took = std::chrono::steady_clock::now() - start;
    return uint64_t{eventsPerBatch} * blocksPerPrompt;
  });
}

// (bucketCount, minLoad, maxLoad, minOps): raw canonical inserts and removals with owner counting
// (the insertCanonical / removeCanonical path, no lineage): fresh hashes in, oldest out.
Napi::Value BenchPoolCanonicalNative(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Band band = BandArgs(info, 1);
  pool::PoolFilterState state(static_cast<uint32_t>(band.bucketCount), ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  uint64_t rng = 42;
  std::deque<uint64_t> live;
  const double slots = band.slots();
  const size_t opsPerBatch = 16384;
  std::vector<pool::CanonicalOp> ops;
  std::vector<uint64_t> hashes;
  std::vector<pool::RawOutcome> outcomes(opsPerBatch);
  std::vector<uint32_t> drainBuckets;
  std::vector<uint64_t> drainValues;

  // Fill to the middle of the band (untimed).
  while (static_cast<double>(live.size()) < (band.minLoad + band.maxLoad) / 2 * slots) {
    ops.assign(opsPerBatch, pool::CanonicalOp::kInsert);
    hashes.clear();
    for (size_t i = 0; i < opsPerBatch; ++i) {
      hashes.push_back(ckf::SplitmixNext(&rng));
      live.push_back(hashes.back());
    }
    state.ApplyCanonicalBatch(ops.data(), hashes.data(), opsPerBatch, outcomes.data());
  }
  state.Drain(&drainBuckets, &drainValues);

  return TimeBatches(env, band, state, [&](std::chrono::nanoseconds* took) {
    ops.clear();
    hashes.clear();
    for (size_t i = 0; i < opsPerBatch; ++i) {
      const double load = static_cast<double>(live.size()) / slots;
      const bool insert = load < band.minLoad || (load < band.maxLoad && (ckf::SplitmixNext(&rng) & 1) != 0);
      if (insert) {
        ops.push_back(pool::CanonicalOp::kInsert);
        hashes.push_back(ckf::SplitmixNext(&rng));
        live.push_back(hashes.back());
      } else {
        ops.push_back(pool::CanonicalOp::kRemove);
        hashes.push_back(live.front());
        live.pop_front();
      }
    }
    const auto start = std::chrono::steady_clock::now();
    state.ApplyCanonicalBatch(ops.data(), hashes.data(), opsPerBatch, outcomes.data());
    state.Drain(&drainBuckets, &drainValues);
    *took = std::chrono::steady_clock::now() - start;
    return uint64_t{opsPerBatch};
  });
}

}  // namespace

void InitPoolBench(Napi::Env env, Napi::Object exports) {
  exports.Set("benchPoolNative", Napi::Function::New(env, BenchPoolNative, "benchPoolNative"));
  exports.Set("benchPoolCanonicalNative", Napi::Function::New(env, BenchPoolCanonicalNative, "benchPoolCanonicalNative"));
}

}  // namespace testing
}  // namespace kvrelay
