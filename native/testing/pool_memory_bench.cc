// Native memory benchmark for bench/pool-memory.ts: the producer's bytes per tracked block. Fills a
// PoolFilterState with `blocks` stored blocks spread round-robin over `sources` sources (16-block
// root prompts of random ids and tokens hashes: every canonical hash distinct, the worst case for the
// owner table) through ApplyBatch, and reports the process RSS growth and the state's own accounting.
// The baseline, measured the same way in the same call: a plain array of the input words (ext id and
// tokens hash, 16 B per block).
// Runs synchronously on the calling thread: test/bench addon only, never in the production exports.
#include <napi.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "napi_args.h"
#include "pool_filter_state.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

constexpr uint32_t kBlocksPerPrompt = 16;
constexpr size_t kEventsPerBatch = 1024;

// Resident set size of this process, from /proc/self/statm (pages).
uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// (sources, blocks) -> { blocks, rssBytes, accountedBytes, baselineRssBytes, lineageEntries, ownedHashes,
//                        residentCount, bucketCount }
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
  meta.reserve(kEventsPerBatch * pool::kMetaStride);
  words.reserve(kEventsPerBatch * (1 + 2 * kBlocksPerPrompt));

  uint64_t rng = 42;
  const uint64_t before = ResidentBytes();
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  {
    pool::PoolFilterState state(static_cast<uint32_t>(bucketCount), ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
    for (uint64_t p = 0; p < prompts;) {
      meta.clear();
      words.clear();
      for (size_t e = 0; e < kEventsPerBatch && p < prompts; ++e, ++p) {
        meta.insert(meta.end(), {pool::kStored, 0, 0, 0, kBlocksPerPrompt});
        words.push_back(1 + p % sources);
        for (uint32_t i = 0; i < 2 * kBlocksPerPrompt; ++i) words.push_back(ckf::SplitmixNext(&rng));
      }
      state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
    }
    const uint64_t after = ResidentBytes();
    const pool::Stats st = state.GetStats();
    out.Set("blocks", num(blocks));
    out.Set("rssBytes", num(after - before));
    out.Set("accountedBytes", num(state.MemoryBytes()));
    out.Set("lineageEntries", num(st.lineageEntries));
    out.Set("ownedHashes", num(st.ownedHashes));
    out.Set("residentCount", num(st.residentCount));
    out.Set("bucketCount", num(st.bucketCount));
  }
  {
    const uint64_t baselineBefore = ResidentBytes();
    std::vector<uint64_t> input(2 * blocks);
    for (uint64_t& w : input) w = ckf::SplitmixNext(&rng);
    out.Set("baselineRssBytes", num(ResidentBytes() - baselineBefore));
  }
  return out;
}

}  // namespace

void InitPoolMemoryBench(Napi::Env env, Napi::Object exports) {
  exports.Set("benchPoolMemoryNative", Napi::Function::New(env, BenchPoolMemoryNative, "benchPoolMemoryNative"));
}

}  // namespace testing
}  // namespace kvrelay
