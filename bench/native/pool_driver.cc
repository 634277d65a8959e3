// Standalone driver of the bench/filter.ts native loops (native/testing/churn.h) for callgrind: only
// apply + drain run with collection on, so `valgrind --tool=callgrind --collect-atstart=no` counts the
// instructions (and with --cache-sim=yes the D1 misses) of exactly what rows (a) and (b) time. Outside
// valgrind it prints the wall-clock rate of the same loop (median of batch rates, as the bench does).
// How to build and run: bench/native/README.md.
#include <valgrind/callgrind.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pool/pool_filter_state.h"
#include "testing/churn.h"

namespace {

using kvrelay::pool::PoolFilterState;

template <typename Churn>
int Run(const char* mode, Churn& churn, PoolFilterState& state, uint64_t minOps) {
  churn.Fill(&state);
  uint64_t ops = 0;
  std::vector<double> rates;
  while (ops < minOps) {
    churn.Next();
    const auto start = std::chrono::steady_clock::now();
    CALLGRIND_TOGGLE_COLLECT;
    churn.ApplyAndDrain(&state);
    CALLGRIND_TOGGLE_COLLECT;
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    ops += churn.BatchOps();
    rates.push_back(static_cast<double>(churn.BatchOps()) / took.count());
  }
  std::nth_element(rates.begin(), rates.begin() + rates.size() / 2, rates.end());
  const kvrelay::pool::Stats st = state.GetStats();
  // The end state in one number, so two builds can be checked for identical images and rng paths.
  uint64_t digest = st.rngState ^ st.residentCount ^ (st.ownedHashes << 20) ^ (st.lineageEntries << 40);
  for (uint32_t b = 0; b < state.filter().bucketCount(); ++b) digest = (digest ^ state.filter().word(b)) * 0x100000001B3ULL;
  std::printf("%s: %llu ops counted, median %.2f M ops/s, resident %llu, capacity failures %llu, state %016llx\n",
              mode, static_cast<unsigned long long>(ops), rates[rates.size() / 2] / 1e6,
              static_cast<unsigned long long>(st.residentCount),
              static_cast<unsigned long long>(st.counters.capacityFailures), static_cast<unsigned long long>(digest));
  return 0;
}

}  // namespace

// pool_driver raw|engine [minOps] [bucketCount] [minLoad maxLoad]
int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "raw") != 0 && std::strcmp(argv[1], "engine") != 0)) {
    std::fprintf(stderr, "usage: %s raw|engine [minOps] [bucketCount] [minLoad maxLoad]\n", argv[0]);
    return 2;
  }
  const bool raw = std::strcmp(argv[1], "raw") == 0;
  const uint64_t minOps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (raw ? 2000000 : 1000000);
  const uint32_t buckets = argc > 3 ? static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 524288;
  const double minLoad = argc > 5 ? std::strtod(argv[4], nullptr) : 0.5;
  const double maxLoad = argc > 5 ? std::strtod(argv[5], nullptr) : 0.8;
  const double slots = 4.0 * buckets;
  PoolFilterState state(buckets, kvrelay::ckf::kDefaultSeed, kvrelay::ckf::kDefaultMaxKicks);
  if (raw) {
    kvrelay::testing::CanonicalChurn churn(slots, minLoad, maxLoad);
    return Run("raw canonical", churn, state, minOps);
  }
  kvrelay::testing::EngineChurn churn(16, slots, minLoad, maxLoad);
  return Run("engine events", churn, state, minOps);
}
