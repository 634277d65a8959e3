// Native benchmark for bench/pool-memory.ts: the producer's bytes per tracked block, and its stalls
// while it grows there. Fills a PoolFilterState with `blocks` stored blocks spread round-robin over
// `sources` sources (16-block root prompts of random ids and tokens hashes: every canonical hash
// distinct, the worst case for the owner table) through ApplyBatch, in slices of 4096 blocks (the pool
// actor's synchronous apply bound, SLICE_BLOCKS in src/producer/pool-actor.ts), each timed with
// its drain. Reports the process RSS growth and the state's own accounting at the end, at rest
// (SettleTables: no table draining or prepared, and the drained tables' huge pages that the populating
// thread keeps for a while, pages::WarmPages, unmapped when their hold ends) and at their peak over
// the fill, and the slice
// times. The memory baseline, measured the same way in the same call: a plain array of the input
// words (ext id and tokens hash, 16 B per block); the stall's is the median slice.
// Runs synchronously on the calling thread: test/bench addon only, never in the production exports.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "bindings/napi_args.h"
#include "pool/pool_filter_state.h"
#include "testing/modules.h"
#include "testing/population_hold.h"
#include "testing/resident.h"

namespace kvrelay {
namespace testing {
namespace {

constexpr uint32_t kBlocksPerPrompt = 16;
constexpr size_t kEventsPerBatch = 256;  // 4096 blocks

// Appends a stored event of one 16-block root prompt of `source` (worker id; rank 0): random ids and
// tokens hashes, so every canonical hash is distinct.
void AddRootPrompt(std::vector<uint32_t>* meta, std::vector<uint64_t>* words, uint64_t source, uint64_t* rng) {
  meta->insert(meta->end(), {pool::kStored, 0, 0, 0, kBlocksPerPrompt});
  words->push_back(source);
  for (uint32_t i = 0; i < 2 * kBlocksPerPrompt; ++i) words->push_back(ckf::SplitmixNext(rng));
}

// (sources, blocks) -> { blocks, rssBytes, accountedBytes, keptBytes, keptForMs, restRssBytes, restAccountedBytes, peakRssBytes,
//   peakAccountedBytes, baselineRssBytes, lineageEntries, ownedHashes, residentCount, bucketCount, slices,
//   maxSliceMs, maxSliceAtBlocks, p999SliceMs, p99SliceMs, medianSliceMs, totalMs }
Napi::Value BenchPoolMemoryNative(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t sources = args::U32(args::Arg(info, 0), "sources");
  const uint64_t requested = args::U64(args::Arg(info, 1), "blocks", true);
  if (sources == 0 || requested < kBlocksPerPrompt || requested > (uint64_t{1} << 28)) {
    throw Napi::RangeError::New(env, "need sources > 0 and blocks in [16, 2^28]");
  }
  const uint64_t prompts = requested / kBlocksPerPrompt;
  const uint64_t blocks = prompts * kBlocksPerPrompt;
  uint64_t bucketCount = 0;
  ckf::BucketCountFor(blocks, &bucketCount);
  if (bucketCount > ckf::kMaxBucketCount) bucketCount = ckf::kMaxBucketCount;

  // Batch scratch first, so its memory is not counted.
  std::vector<uint32_t> meta;
  std::vector<uint64_t> words;
  std::vector<uint8_t> errors(kEventsPerBatch);
  std::vector<uint32_t> drainBuckets;
  std::vector<uint64_t> drainValues;
  std::vector<double> sliceMs;
  meta.reserve(kEventsPerBatch * pool::kMetaStride);
  words.reserve(kEventsPerBatch * (1 + 2 * kBlocksPerPrompt));
  sliceMs.reserve(prompts / kEventsPerBatch + 1);
  drainBuckets.reserve(size_t{kEventsPerBatch} * kBlocksPerPrompt * 2);
  drainValues.reserve(size_t{kEventsPerBatch} * kBlocksPerPrompt * 2);

  uint64_t rng = 42;
  // Pages kept from earlier benches in this process would make the fill look cheaper.
  const WarmPagesScope keptPages(pages::WarmPages::kDefaultHold);
  if (!keptPages.ready()) throw Napi::Error::New(env, "kept pages were not unmapped within 30 s");
  const uint64_t before = ResidentBytes();
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](double v) { return Napi::Number::New(env, v); };
  {
    pool::PoolFilterState state(static_cast<uint32_t>(bucketCount), ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
    uint64_t peakRss = 0;
    uint64_t peakAccounted = 0;
    uint64_t worstAt = 0;
    for (uint64_t p = 0; p < prompts;) {
      meta.clear();
      words.clear();
      for (size_t e = 0; e < kEventsPerBatch && p < prompts; ++e, ++p) AddRootPrompt(&meta, &words, 1 + p % sources, &rng);
      const auto start = std::chrono::steady_clock::now();
      state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
      state.Drain(&drainBuckets, &drainValues);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (sliceMs.empty() || ms > *std::max_element(sliceMs.begin(), sliceMs.end())) worstAt = p * kBlocksPerPrompt;
      sliceMs.push_back(ms);
      peakRss = std::max(peakRss, ResidentBytes());
      peakAccounted = std::max<uint64_t>(peakAccounted, state.MemoryBytes());
    }
    const pool::Stats st = state.GetStats();
    out.Set("blocks", num(static_cast<double>(blocks)));
    out.Set("rssBytes", num(static_cast<double>(ResidentBytes() - before)));
    out.Set("accountedBytes", num(static_cast<double>(state.MemoryBytes())));
    out.Set("keptBytes", num(static_cast<double>(pages::Populator::Instance().WarmBytes())));
    state.SettleTables();
    const auto settled = std::chrono::steady_clock::now();
    // A successor dropped while its population ran is unmapped by the populating thread once it stops.
    pages::Populator& populator = pages::Populator::Instance();
    if (!populator.WaitIdle(std::chrono::seconds(30))) throw Napi::Error::New(env, "population did not end within 30 s");
    if (!populator.WaitWarmEmpty(pages::WarmPages::kDefaultHold + std::chrono::seconds(30))) {
      throw Napi::Error::New(env, "kept pages outlived their hold by 30 s");
    }
    out.Set("keptForMs", num(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - settled).count()));
    out.Set("restRssBytes", num(static_cast<double>(ResidentBytes() - before)));
    out.Set("restAccountedBytes", num(static_cast<double>(state.MemoryBytes())));
    out.Set("peakRssBytes", num(static_cast<double>(peakRss - before)));
    out.Set("peakAccountedBytes", num(static_cast<double>(peakAccounted)));
    out.Set("lineageEntries", num(static_cast<double>(st.lineageEntries)));
    out.Set("ownedHashes", num(static_cast<double>(st.ownedHashes)));
    out.Set("residentCount", num(static_cast<double>(st.residentCount)));
    out.Set("bucketCount", num(static_cast<double>(st.bucketCount)));
    out.Set("maxSliceAtBlocks", num(static_cast<double>(worstAt)));
  }
  double totalMs = 0;
  for (double ms : sliceMs) totalMs += ms;
  std::sort(sliceMs.begin(), sliceMs.end());
  auto quantile = [&](double q) { return sliceMs[std::min(sliceMs.size() - 1, static_cast<size_t>(q * sliceMs.size()))]; };
  out.Set("slices", num(static_cast<double>(sliceMs.size())));
  out.Set("maxSliceMs", num(sliceMs.back()));
  out.Set("p999SliceMs", num(quantile(0.999)));
  out.Set("p99SliceMs", num(quantile(0.99)));
  out.Set("medianSliceMs", num(quantile(0.5)));
  out.Set("totalMs", num(totalMs));
  {
    const uint64_t baselineBefore = ResidentBytes();
    std::vector<uint64_t> input(2 * blocks);
    for (uint64_t& w : input) w = ckf::SplitmixNext(&rng);
    out.Set("baselineRssBytes", num(static_cast<double>(ResidentBytes() - baselineBefore)));
  }
  return out;
}

// (sources, blocksPerSource) -> number[]: the bucket count of each source's lineage table once
// `sources` sources stored `blocksPerSource` blocks each, round-robin in 16-block root prompts.
Napi::Value CheckLineageStagger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t sources = args::U32(args::Arg(info, 0), "sources");
  const uint64_t perSource = args::U64(args::Arg(info, 1), "blocksPerSource", true);
  if (sources == 0 || sources > 256 || perSource > (uint64_t{1} << 20)) {
    throw Napi::RangeError::New(env, "need sources in [1, 256] and blocksPerSource <= 2^20");
  }
  pool::PoolFilterState state(1u << 16, ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  std::vector<uint32_t> meta;
  std::vector<uint64_t> words;
  std::vector<uint8_t> errors;
  uint64_t rng = 7;
  for (uint64_t stored = 0; stored < perSource; stored += kBlocksPerPrompt) {
    meta.clear();
    words.clear();
    for (uint32_t s = 0; s < sources; ++s) AddRootPrompt(&meta, &words, 1 + s, &rng);
    errors.resize(sources);
    state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
  }
  const std::vector<size_t> counts = state.LineageBucketCounts();
  Napi::Array out = Napi::Array::New(env, counts.size());
  for (size_t i = 0; i < counts.size(); ++i) out.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(counts[i])));
  return out;
}

// (chains, eventsPerChain, blocksPerEvent) -> { unplannedStores, errors, lineageEntries }: one batch
// of `chains` chains on as many sources, interleaved, each event continuing its chain's previous one
// (its parent is that event's last block): how many stores ran without a plan.
Napi::Value CheckChainPlanning(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t chains = args::U32(args::Arg(info, 0), "chains");
  const uint32_t eventsPerChain = args::U32(args::Arg(info, 1), "eventsPerChain");
  const uint32_t blocksPerEvent = args::U32(args::Arg(info, 2), "blocksPerEvent");
  if (chains == 0 || chains > 64 || eventsPerChain > 1024 || blocksPerEvent == 0 || blocksPerEvent > 64) {
    throw Napi::RangeError::New(env, "need chains in [1, 64], eventsPerChain <= 1024, blocksPerEvent in [1, 64]");
  }
  pool::PoolFilterState state(1u << 12, ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  std::vector<uint32_t> meta;
  std::vector<uint64_t> words;
  std::vector<uint64_t> last(chains, 0);
  uint64_t rng = 9;
  for (uint32_t e = 0; e < eventsPerChain; ++e) {
    for (uint32_t c = 0; c < chains; ++c) {
      const bool parent = e > 0;
      meta.insert(meta.end(), {pool::kStored, 0, parent ? pool::kFlagParent : 0u, 0, blocksPerEvent});
      words.push_back(1 + c);
      if (parent) words.push_back(last[c]);
      for (uint32_t i = 0; i < blocksPerEvent; ++i) words.push_back(last[c] = ckf::SplitmixNext(&rng) | 1);
      for (uint32_t i = 0; i < blocksPerEvent; ++i) words.push_back(ckf::SplitmixNext(&rng));
    }
  }
  std::vector<uint8_t> errors(meta.size() / pool::kMetaStride);
  state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  out.Set("unplannedStores", num(state.UnplannedStores()));
  out.Set("errors", num(static_cast<uint64_t>(std::count_if(errors.begin(), errors.end(), [](uint8_t x) { return x != 0; }))));
  out.Set("lineageEntries", num(state.trackedBlocks()));
  return out;
}

}  // namespace

void InitPoolMemoryBench(Napi::Env env, Napi::Object exports) {
  exports.Set("benchPoolMemoryNative", Napi::Function::New(env, BenchPoolMemoryNative, "benchPoolMemoryNative"));
  exports.Set("checkLineageStagger", Napi::Function::New(env, CheckLineageStagger, "checkLineageStagger"));
  exports.Set("checkChainPlanning", Napi::Function::New(env, CheckChainPlanning, "checkChainPlanning"));
}

}  // namespace testing
}  // namespace kvrelay
