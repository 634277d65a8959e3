// Native benchmark entry point for bench/filter.ts: prompt churn through PoolState::ApplyBatch with the
// load kept inside [minLoad, maxLoad]. Only ApplyBatch is timed; generating the events is not.
// Runs synchronously on the calling thread (benchmarks only).
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <vector>

#include "modules.h"
#include "napi_args.h"
#include "pool_state.h"

namespace kvrelay {
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

Napi::Value BenchPoolNative(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t bucketCount = args::U64(args::Arg(info, 0), "bucketCount", true);
  if (!ckf::IsValidBucketCount(bucketCount) || bucketCount > ckf::kMaxBucketCount) {
    throw Napi::RangeError::New(env, "bucketCount must be a power of two in [2, 2^24]");
  }
  const uint32_t blocksPerPrompt = args::U32(args::Arg(info, 1), "blocksPerPrompt");
  const double minLoad = args::Arg(info, 2).As<Napi::Number>().DoubleValue();
  const double maxLoad = args::Arg(info, 3).As<Napi::Number>().DoubleValue();
  const uint64_t minOps = args::U64(args::Arg(info, 4), "minOps", true);
  if (blocksPerPrompt == 0 || !(minLoad > 0) || !(maxLoad > minLoad) || maxLoad >= 1) {
    throw Napi::RangeError::New(env, "need blocksPerPrompt > 0 and 0 < minLoad < maxLoad < 1");
  }

  pool::PoolState state(static_cast<uint32_t>(bucketCount), ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  ChurnGenerator gen(blocksPerPrompt, 42);
  const double slots = 4.0 * static_cast<double>(bucketCount);
  const size_t eventsPerBatch = 1024;
  std::vector<uint32_t> meta;
  std::vector<uint64_t> words;
  std::vector<uint8_t> errors(eventsPerBatch);
  std::vector<uint32_t> drainBuckets;
  std::vector<uint64_t> drainValues;

  // Fill to the middle of the band (untimed).
  while (gen.liveBlocks() < (minLoad + maxLoad) / 2 * slots) {
    meta.clear();
    words.clear();
    for (size_t e = 0; e < eventsPerBatch && gen.liveBlocks() < (minLoad + maxLoad) / 2 * slots; ++e) {
      gen.AddStore(&meta, &words);
    }
    errors.resize(meta.size() / pool::kMetaStride);
    state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
  }
  state.Drain(&drainBuckets, &drainValues);

  uint64_t ops = 0;
  std::chrono::nanoseconds elapsed{0};
  std::vector<double> batchRates;  // median is robust to preemption on a shared machine
  while (ops < minOps) {
    meta.clear();
    words.clear();
    for (size_t e = 0; e < eventsPerBatch; ++e) {
      const double load = static_cast<double>(gen.liveBlocks()) / slots;
      const bool store = load < minLoad || (load < maxLoad && gen.CoinFlip());
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
    const auto took = std::chrono::steady_clock::now() - start;
    elapsed += took;
    ops += eventsPerBatch * blocksPerPrompt;
    batchRates.push_back(static_cast<double>(eventsPerBatch * blocksPerPrompt) * 1e9 /
                         static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
  }
  std::nth_element(batchRates.begin(), batchRates.begin() + batchRates.size() / 2, batchRates.end());
  const double seconds = static_cast<double>(elapsed.count()) / 1e9;
  const pool::Stats st = state.GetStats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("ops", Napi::Number::New(env, static_cast<double>(ops)));
  out.Set("seconds", Napi::Number::New(env, seconds));
  out.Set("opsPerSecond", Napi::Number::New(env, static_cast<double>(ops) / seconds));
  out.Set("medianBatchOpsPerSecond", Napi::Number::New(env, batchRates[batchRates.size() / 2]));
  out.Set("finalLoad", Napi::Number::New(env, static_cast<double>(st.residentCount) / slots));
  out.Set("capacityFailures", Napi::Number::New(env, static_cast<double>(st.counters.capacityFailures)));
  return out;
}

}  // namespace

void InitPoolBench(Napi::Env env, Napi::Object exports) {
  exports.Set("benchPoolNative", Napi::Function::New(env, BenchPoolNative, "benchPoolNative"));
}

}  // namespace kvrelay
