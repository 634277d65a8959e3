// checkPoolMemoryAccounting (test addon only): PoolFilterState::MemoryBytes recounts only the lineage
// tables looked up since its last call; this drives stores, removals and clears over many sources
// (tables growing, draining, dropped when emptied) and compares it with a count of every table after
// each operation.
#include <napi.h>

#include <string>
#include <vector>

#include "bindings/napi_args.h"
#include "pool/pool_filter_state.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

using pool::PoolFilterState;

// (sources, operations) -> { checks, clears, maxBytes }; throws where MemoryBytes differs from the recount.
Napi::Value CheckPoolMemoryAccounting(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t sources = args::U32(args::Arg(info, 0), "sources");
  const uint32_t operations = args::U32(args::Arg(info, 1), "operations");
  if (sources == 0 || sources > 100'000) throw Napi::RangeError::New(env, "need 0 < sources <= 100000");
  PoolFilterState state(1u << 16, ckf::kDefaultSeed, ckf::kDefaultMaxKicks);
  uint64_t rng = 0x5eed;
  uint64_t nextId = 1;
  // Per source, the ids it holds (oldest first). Source 0 gets half the operations and is never
  // cleared, so its table grows past the small-table sizes and drains into successors; the others
  // are cleared now and then, which drops them.
  std::vector<std::vector<uint64_t>> held(sources);
  std::vector<uint64_t> ids, tokens;
  uint64_t clears = 0;
  size_t maxBytes = 0;
  for (uint32_t op = 0; op < operations; ++op) {
    const uint64_t r = ckf::SplitmixNext(&rng);
    const uint32_t source = (r & 1) != 0 ? 0 : static_cast<uint32_t>((r >> 1) % sources);
    std::vector<uint64_t>& mine = held[source];
    const uint32_t kind = static_cast<uint32_t>((r >> 40) % 16);
    if (kind < 11 || mine.empty()) {
      ids.clear();
      tokens.clear();
      for (int b = 0; b < 16; ++b) {
        ids.push_back(nextId);
        tokens.push_back(ckf::SplitmixNext(&rng));
        mine.push_back(nextId++);
      }
      const pool::StoreEvent ev{source + 1, 0, false, 0, false, 0, ids.data(), tokens.data(), ids.size()};
      if (state.Store(ev) != pool::PoolError::kNone) throw Napi::Error::New(env, "a store failed");
    } else if (kind < 15 || source == 0) {
      const size_t n = std::min<size_t>(mine.size(), 8);
      state.Remove(source + 1, 0, mine.data(), n);
      mine.erase(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(n));
    } else {
      state.Clear(source + 1, 0);
      mine.clear();
      ++clears;
    }
    const size_t counted = state.MemoryBytes();
    const size_t recounted = state.RecountMemoryBytes();
    if (counted != recounted) {
      throw Napi::Error::New(env, "MemoryBytes " + std::to_string(counted) + " != recount " + std::to_string(recounted) +
                                      " after operation " + std::to_string(op));
    }
    if (counted > maxBytes) maxBytes = counted;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("checks", Napi::Number::New(env, operations));
  out.Set("clears", Napi::Number::New(env, static_cast<double>(clears)));
  out.Set("maxBytes", Napi::Number::New(env, static_cast<double>(maxBytes)));
  out.Set("sourceCount", Napi::Number::New(env, static_cast<double>(state.GetStats().sourceCount)));
  return out;
}

}  // namespace

void InitPoolAccountingCheck(Napi::Env env, Napi::Object exports) {
  exports.Set("checkPoolMemoryAccounting", Napi::Function::New(env, CheckPoolMemoryAccounting, "checkPoolMemoryAccounting"));
}

}  // namespace testing
}  // namespace kvrelay
