// Randomized differential check of BucketMap against std::unordered_map (test/native/bucket-map.test.ts),
// for both layouts (4-byte values: the owner table; 8-byte values: the lineage tables): test/bench addon
// only. Runs the whole sequence in C++ (millions of operations in a test's time) and throws a JS Error
// at the first difference or broken invariant, naming the operation.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/bucket_map.h"
#include "core/ckf.h"
#include "bindings/napi_args.h"
#include "testing/modules.h"
#include "testing/population_hold.h"

namespace kvrelay {
namespace testing {
namespace {

// Crafted keys sharing their candidate buckets: enough for the map to pass ~90 entries, past which a
// full stash comes before the next growth and forces a migration under another seed (or, mid-drain,
// a rebuild).
constexpr uint64_t kCrowdedKeys = 300;

struct Tally {
  uint64_t maxSize = 0;
  uint64_t maxStash = 0;
  uint64_t migratingOps = 0;  // operations that ran while a table drained
  uint64_t oldHits = 0;       // lookups and erasures of keys still in the draining table
  uint64_t newHits = 0;       // of keys in the table new keys go to, while another drained
  uint64_t migratingChecks = 0;  // full checks (contents, invariants) taken mid-drain
};

[[noreturn]] void Fail(Napi::Env env, uint64_t op, const std::string& what) {
  throw Napi::Error::New(env, "BucketMap differs from std::unordered_map at operation " + std::to_string(op) + ": " + what);
}

template <typename V>
class Run {
 public:
  using Map = BucketMap<V>;
  using Reference = std::unordered_map<uint64_t, V>;

  Run(Napi::Env env, Tally* tally) : env_(env), tally_(tally) {}

  // After every operation: the size and shape; when `full`, also the contents (ForEach and a lookup of
  // every reference key) and the invariants.
  void Check(uint64_t op, bool full) {
    if (map.size() != ref.size()) Fail(env_, op, "size " + std::to_string(map.size()) + " vs " + std::to_string(ref.size()));
    const typename Map::Shape shape = map.GetShape();
    if (map.size() > tally_->maxSize) tally_->maxSize = map.size();
    if (shape.stashed > tally_->maxStash) tally_->maxStash = shape.stashed;
    if (!full) return;
    if (shape.oldBuckets != 0) ++tally_->migratingChecks;
    if (const char* broken = map.Invariant()) Fail(env_, op, broken);
    size_t seen = 0;
    map.ForEach([&](uint64_t key, const V& value) {
      ++seen;
      auto it = ref.find(key);
      if (it == ref.end()) Fail(env_, op, "key " + std::to_string(key) + " only in the map");
      if (it->second != value) Fail(env_, op, "value of key " + std::to_string(key));
    });
    if (seen != ref.size()) Fail(env_, op, "ForEach visited " + std::to_string(seen) + " entries");
    const Map& constMap = map;
    for (const auto& [key, value] : ref) {
      const V* found = constMap.Find(key);
      if (found == nullptr || *found != value) Fail(env_, op, "key " + std::to_string(key) + " not found");
    }
  }

  // One operation on both containers, compared. Keys come from the caller.
  void Step(uint64_t op, uint64_t r, uint64_t key) {
    const V value = static_cast<V>(r >> (sizeof(V) == 4 ? 32 : 0)) | 1;
    const bool migrating = map.GetShape().oldBuckets != 0;
    if (migrating) {
      ++tally_->migratingOps;
      const int holder = key == 0 ? 0 : map.Holder(key);
      if (holder == 2) ++tally_->oldHits;
      if (holder == 1) ++tally_->newHits;
    }
    switch ((r >> 8) % 8) {
      case 0:
      case 1:
      case 2: {  // Emplace; on a hit, write through the returned slot
        auto [slot, inserted] = map.Emplace(key, value);
        auto [it, refInserted] = ref.emplace(key, value);
        if (slot == nullptr) Fail(env_, op, "Emplace returned no slot");
        if (inserted != refInserted) Fail(env_, op, "Emplace inserted " + std::to_string(inserted));
        if (*slot != it->second) Fail(env_, op, "Emplace slot value");
        if (!inserted) *slot = it->second = value ^ static_cast<V>(0x5A5A5A5A);
        break;
      }
      case 3:
      case 4: {  // Find
        const V* found = static_cast<const Map&>(map).Find(key);
        auto it = ref.find(key);
        if ((found != nullptr) != (it != ref.end())) Fail(env_, op, "Find presence of key " + std::to_string(key));
        if (found != nullptr && *found != it->second) Fail(env_, op, "Find value");
        break;
      }
      case 5:
      case 6: {  // Find then EraseFound
        V* found = map.Find(key);
        if ((found != nullptr) != (ref.count(key) == 1)) Fail(env_, op, "Find before EraseFound of key " + std::to_string(key));
        if (found != nullptr) {
          map.EraseFound(found);
          ref.erase(key);
        }
        break;
      }
      default:
        // Mostly within the room a drain leaves; now and then past it (a synchronous finish).
        map.Reserve(static_cast<size_t>(r >> 40) % ((r & 0x7000) == 0 ? 4096 : 64));
    }
  }

  // Keys crafted to share both candidate buckets of `target` in the table new keys go to: paths cannot
  // help them, so they fill the stash until it is at its limit.
  void Crowd(uint64_t* candidate, uint64_t target, uint64_t count, uint64_t op) {
    for (uint64_t n = 0; n < count; ++n) {
      const auto homes = map.Candidates(target);
      uint64_t key = 0;
      do {
        key = ckf::SplitmixNext(candidate);
      } while (key == 0 || ref.count(key) != 0 || map.Candidates(key) != homes);
      auto [slot, inserted] = map.Emplace(key, static_cast<V>(n + 1));
      if (slot == nullptr || !inserted) Fail(env_, op + n, "crafted key not inserted");
      ref.emplace(key, static_cast<V>(n + 1));
      Check(op + n, true);
    }
  }

  // Inserts random keys until the map has at least 200 entries and a table drains.
  void FillUntilDraining(uint64_t* rng, uint64_t* op) {
    while (map.GetShape().oldBuckets == 0 || map.size() < 200) {
      const uint64_t key = ckf::SplitmixNext(rng) | 1;
      map.Emplace(key, static_cast<V>(key));
      ref.emplace(key, static_cast<V>(key));
      Check((*op)++, false);
    }
    Check(*op, true);
  }

  // Operations on keys the map holds (most still in the draining table, the first few just moved),
  // while the drain lasts, up to `count`.
  void TouchWhileDraining(uint64_t* rng, uint64_t* op, int count) {
    std::vector<uint64_t> keys;
    for (const auto& entry : ref) keys.push_back(entry.first);
    for (int n = 0; n < count && map.GetShape().oldBuckets != 0; ++n) {
      const uint64_t r = ckf::SplitmixNext(rng);
      Step(*op, r, keys[r % keys.size()]);
      Check((*op)++, true);
    }
  }

  Map map;
  Reference ref;

 private:
  Napi::Env env_;
  Tally* tally_;
};

template <typename V>
Napi::Object CheckLayout(Napi::Env env, uint64_t rng, uint64_t operations, uint64_t keySpace) {
  Tally tally;
  Run<V> run(env, &tally);
  const uint64_t phase = operations / 8 + 1;
  for (uint64_t op = 0; op < operations; ++op) {
    const uint64_t r = ckf::SplitmixNext(&rng);
    // Odd phases draw from a quarter of the key space: the map shrinks by erasures of the rest.
    const uint64_t space = (op / phase) % 2 == 0 ? keySpace : keySpace / 4 + 1;
    uint64_t index = (r >> 16) % space;
    uint64_t key = index == 0 ? 0 : index * 0x9E3779B97F4A7C15ULL;  // spread, and key 0 itself
    if ((r & 0xF0) == 0) key = index;  // small dense keys too
    run.Step(op, r, key);
    // Full checks every 1024 operations, and every 64 while a table drains (4096 past 20 000 keys: a
    // full check reads them all).
    const bool migrating = run.map.GetShape().oldBuckets != 0;
    const uint64_t every = run.ref.size() < 20000 ? 64 : 4096;
    run.Check(op, op % 1024 == 0 || (migrating && op % every == 0) || op + 1 == operations);
  }

  // Crafted keys in a fresh map: the stash fills and the map migrates to a table under another seed.
  Run<V> crowded(env, &tally);
  uint64_t candidate = rng | 1;
  crowded.Crowd(&candidate, 0x1234567ULL, kCrowdedKeys, operations);

  // Crafted keys while a table drains: grow a map until a drain starts, then crowd the new table's
  // buckets until its stash is full: a synchronous rebuild under another seed.
  uint64_t fill = rng ^ 0x5555;
  uint64_t op = operations + kCrowdedKeys;
  Run<V> draining(env, &tally);
  draining.FillUntilDraining(&fill, &op);
  draining.TouchWhileDraining(&fill, &op, 40);
  draining.Crowd(&candidate, 0x7654321ULL, 2 * kCrowdedKeys, op);
  op += 2 * kCrowdedKeys;

  // A Reserve mid-drain for more than the drain leaves room for: the drain finishes at once, and the
  // reserved keys then go in.
  Run<V> reserving(env, &tally);
  reserving.FillUntilDraining(&fill, &op);
  reserving.map.Reserve(reserving.map.size());
  reserving.Check(op, true);
  while (reserving.ref.size() < 2 * 200) reserving.Step(op++, ckf::SplitmixNext(&fill) & ~uint64_t{0x700}, ckf::SplitmixNext(&fill));
  reserving.Check(op, true);

  const typename BucketMap<V>::Shape shapes[] = {run.map.GetShape(), crowded.map.GetShape(), draining.map.GetShape(),
                                                 reserving.map.GetShape()};
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  uint64_t secondBucket = 0, paths = 0, pathMoves = 0, growths = 0, reseeds = 0, migrated = 0, finishes = 0, rebuilds = 0;
  for (const auto& shape : shapes) {
    secondBucket += shape.secondBucket;
    paths += shape.paths;
    pathMoves += shape.pathMoves;
    growths += shape.growths;
    reseeds += shape.reseeds;
    migrated += shape.migrated;
    finishes += shape.finishes;
    rebuilds += shape.rebuilds;
  }
  out.Set("maxSize", num(tally.maxSize));
  out.Set("maxStash", num(tally.maxStash));
  out.Set("growths", num(growths));
  out.Set("reseeds", num(reseeds));
  out.Set("rebuilds", num(rebuilds));
  out.Set("finishes", num(finishes));
  out.Set("migrated", num(migrated));
  out.Set("migratingOps", num(tally.migratingOps));
  out.Set("migratingChecks", num(tally.migratingChecks));
  out.Set("oldHits", num(tally.oldHits));
  out.Set("newHits", num(tally.newHits));
  out.Set("secondBucket", num(secondBucket));
  out.Set("paths", num(paths));
  out.Set("pathMoves", num(pathMoves));
  return out;
}

uint32_t ValueBytes(const Napi::CallbackInfo& info, size_t i) {
  const uint32_t bytes = args::U32(args::Arg(info, i), "valueBytes");
  if (bytes != 4 && bytes != 8) throw Napi::RangeError::New(info.Env(), "valueBytes must be 4 or 8");
  return bytes;
}

// (seed, operations, keySpace, valueBytes) -> { maxSize, maxStash, growths, reseeds, rebuilds, finishes,
//   migrated, migratingOps, migratingChecks, oldHits, newHits, secondBucket, paths, pathMoves }
// Random operations over `keySpace` keys (key 0 among them), in phases that grow the map and shrink it,
// with full checks every 64 operations while a table drains; then keys crafted to share both candidate
// buckets in a fresh map (a migration under another seed) and in a map mid-drain (a rebuild).
Napi::Value CheckBucketMap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t rng = args::U64(args::Arg(info, 0), "seed");
  const uint64_t operations = args::U64(args::Arg(info, 1), "operations", true);
  const uint64_t keySpace = args::U64(args::Arg(info, 2), "keySpace", true);
  const uint32_t valueBytes = ValueBytes(info, 3);
  if (keySpace == 0 || operations > (uint64_t{1} << 28)) {
    throw Napi::RangeError::New(env, "need keySpace > 0 and operations <= 2^28");
  }
  return valueBytes == 4 ? CheckLayout<uint32_t>(env, rng, operations, keySpace)
                         : CheckLayout<uint64_t>(env, rng, operations, keySpace);
}

template <typename V>
Napi::Object Growth(Napi::Env env, uint64_t entries) {
  BucketMap<V> map;
  uint64_t rng = 7;
  uint64_t erased = 0;
  uint64_t recent[8] = {};
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t key = ckf::SplitmixNext(&rng) | 1;
    if (map.Emplace(key, static_cast<V>(i)).first == nullptr) throw Napi::Error::New(env, "allocation failed");
    recent[i % 8] = key;
    // Every 8th insertion erases the key inserted 4 before (drains run on erasures too).
    if (i % 8 == 7) {
      V* found = map.Find(recent[(i - 4) % 8]);
      if (found == nullptr) throw Napi::Error::New(env, "a key inserted went missing");
      map.EraseFound(found);
      ++erased;
    }
  }
  const typename BucketMap<V>::Shape shape = map.GetShape();
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  out.Set("size", num(map.size()));
  out.Set("erased", num(erased));
  out.Set("growths", num(shape.growths));
  out.Set("migrated", num(shape.migrated));
  out.Set("finishes", num(shape.finishes));
  out.Set("rebuilds", num(shape.rebuilds));
  out.Set("maxOpMoves", num(shape.maxOpMoves));
  out.Set("maxMovesPerOp", num(BucketMap<V>::kMaxMovesPerOp));
  return out;
}

// (valueBytes, entries) -> { size, erased, growths, migrated, finishes, rebuilds, maxOpMoves,
//   maxMovesPerOp }: a map grown from empty by `entries` random insertions (with some erasures); the
// most entries any one of its operations moved, against the bound the map promises.
Napi::Value CheckBucketMapGrowth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t valueBytes = ValueBytes(info, 0);
  const uint64_t entries = args::U64(args::Arg(info, 1), "entries", true);
  if (entries > (uint64_t{1} << 26)) throw Napi::RangeError::New(env, "need entries <= 2^26");
  return valueBytes == 4 ? Growth<uint32_t>(env, entries) : Growth<uint64_t>(env, entries);
}

// The load (entries / slots) of the table each growth left, from a mapped table on (a successor
// populated in the background): the first such growth's, with the populating thread held when `held`
// (the successor's pages not in), else waited for after each prepare (the pages in).
template <typename V>
double LoadAtGrowth(Napi::Env env, bool held) {
  constexpr size_t kMappedBuckets = 4096;  // 256 KiB of buckets: mapped, populated in the background
  BucketMap<V> map;
  uint64_t rng = 11;
  uint64_t prepared = 0;
  pages::Populator& populator = pages::Populator::Instance();
  const PopulationHold hold(held);
  double load = 0;
  for (uint64_t i = 0; i < (uint64_t{1} << 24) && load == 0; ++i) {
    const typename BucketMap<V>::Shape before = map.GetShape();
    const size_t sizeBefore = map.size();
    if (map.Emplace(ckf::SplitmixNext(&rng) | 1, static_cast<V>(i)).first == nullptr) throw Napi::Error::New(env, "allocation failed");
    const typename BucketMap<V>::Shape after = map.GetShape();
    if (!held && after.prepared != prepared && !populator.WaitIdle(std::chrono::seconds(30))) {
      throw Napi::Error::New(env, "a successor's pages did not come in within 30 s");
    }
    prepared = after.prepared;
    if (i % 256 == 0) {
      if (const char* broken = map.Invariant()) throw Napi::Error::New(env, broken);
    }
    if (after.growths != before.growths && before.buckets >= kMappedBuckets && before.oldBuckets == 0) {
      load = static_cast<double>(sizeBefore) / static_cast<double>(before.buckets * BucketMap<V>::kSlots);
    }
  }
  if (const char* broken = map.Invariant()) throw Napi::Error::New(env, broken);
  return load;
}

// (maps, entries, staggered) -> { growths, maxTogether }: `maps` maps of 8-byte values (lineage
// tables) filled in step to `entries` each, with growth phases 1..maps when `staggered`, else all 0.
// growths: the successors prepared for a table of kStaggerBuckets or more, over all maps (at a fixed
// load, where the switch to them depends on their population's pace); maxTogether: the most of them
// prepared within 1/64 of the entries a map held then.
Napi::Value CheckBucketMapStagger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t maps = args::U32(args::Arg(info, 0), "maps");
  const uint64_t entries = args::U64(args::Arg(info, 1), "entries", true);
  const bool staggered = args::Arg(info, 2).ToBoolean().Value();
  if (maps == 0 || maps > 64 || entries > (uint64_t{1} << 22)) throw Napi::RangeError::New(env, "need maps in [1, 64] and entries <= 2^22");
  using Map = BucketMap<uint64_t>;
  std::vector<std::unique_ptr<Map>> all;
  for (uint32_t m = 0; m < maps; ++m) all.push_back(std::make_unique<Map>(staggered ? m + 1 : 0));
  std::vector<uint64_t> starts;  // the insertion (per map) at which each counted migration started
  uint64_t rng = 5;
  for (uint64_t i = 0; i < entries; ++i) {
    for (auto& map : all) {
      const Map::Shape before = map->GetShape();
      if (map->Emplace(ckf::SplitmixNext(&rng) | 1, i).first == nullptr) throw Napi::Error::New(env, "allocation failed");
      if (map->GetShape().prepared != before.prepared && before.buckets >= Map::kStaggerBuckets) starts.push_back(i);
    }
  }
  for (auto& map : all) {
    if (const char* broken = map->Invariant()) throw Napi::Error::New(env, broken);
  }
  // Within 1/64 of the size a map had then: a growth step is ~0.29 of it.
  std::sort(starts.begin(), starts.end());
  size_t together = 0;
  for (size_t a = 0, b = 0; b < starts.size(); ++b) {
    while ((starts[b] - starts[a]) * 64 >= starts[b]) ++a;
    together = std::max(together, b - a + 1);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("growths", Napi::Number::New(env, static_cast<double>(starts.size())));
  out.Set("maxTogether", Napi::Number::New(env, static_cast<double>(together)));
  return out;
}

// (valueBytes) -> { held, populated }: the load at which a mapped table moved to its successor when the
// successor's pages were not in yet (the populating thread held), and when they were.
Napi::Value CheckBucketMapWaitsForSuccessor(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t valueBytes = ValueBytes(info, 0);
  Napi::Object out = Napi::Object::New(env);
  const bool counted = valueBytes == 4;
  out.Set("held", counted ? LoadAtGrowth<uint32_t>(env, true) : LoadAtGrowth<uint64_t>(env, true));
  out.Set("populated", counted ? LoadAtGrowth<uint32_t>(env, false) : LoadAtGrowth<uint64_t>(env, false));
  return out;
}


// The inverse of Fmix64 (core/process_secret.h): what an attacker who knows the code computes to
// pick keys for chosen bucket bits.
uint64_t InverseMultiply(uint64_t odd) {
  uint64_t x = odd;  // Newton: each step doubles the correct low bits (3 to start)
  for (int i = 0; i < 5; ++i) x *= 2 - odd * x;
  return x;
}
uint64_t Unfmix64(uint64_t v) {
  v ^= v >> 33;
  v *= InverseMultiply(0xc4ceb9fe1a85ec53ULL);
  v ^= v >> 33;
  v *= InverseMultiply(0xff51afd7ed558ccdULL);
  v ^= v >> 33;
  return v;
}

// The key whose addressing value under `seed` is m (BucketMap::Table::HomesOf).
uint64_t KeyFor(uint64_t m, uint64_t seed) { return Unfmix64(m) ^ seed; }

// Addressing values m sharing both homes in a table of n buckets: HomesOf takes the first from the
// high half of m * n and the second from its low half times n, so m0 = the least m with
// m * n >= first * 2^64 + ceil(second * 2^64 / n), and m0 + j for j below 2^64 / n^2 all share them.
struct HomePair {
  uint64_t m0;
  uint64_t span;
};
HomePair PairFor(uint64_t n, uint64_t first, uint64_t second) {
  using u128 = unsigned __int128;
  const u128 two64 = u128{1} << 64;
  const u128 low = (u128{second} * two64 + n - 1) / n;
  const u128 target = u128{first} * two64 + low;
  const uint64_t m0 = static_cast<uint64_t>((target + n - 1) / n);
  const uint64_t span = static_cast<uint64_t>(two64 / (u128{n} * n));
  return HomePair{m0, span > 2 ? span - 2 : 1};
}

// (fill, batches, perBatch) -> { craftedNs, randomNs, reseeds, rebuilds, maxStash }
// HashDoS on a lineage table (issue 26 item 3): a map of `fill` random engine ids takes `batches`
// batches of `perBatch` ids crafted against the public addressing (all of a batch aimed at one
// bucket pair of the table new keys go to, a best-case attacker who knows its size), timed, and then
// as many random ids into a second map of the same fill, timed. reseeds/rebuilds/maxStash: of the
// crafted map, from the crafted batches on.
Napi::Value AttackBucketMap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t fill = args::U64(args::Arg(info, 0), "fill", true);
  const uint32_t batches = args::U32(args::Arg(info, 1), "batches");
  const uint32_t perBatch = args::U32(args::Arg(info, 2), "perBatch");
  if (fill > (uint64_t{1} << 24) || uint64_t{batches} * perBatch > (uint64_t{1} << 20)) {
    throw Napi::RangeError::New(env, "need fill <= 2^24 and batches * perBatch <= 2^20");
  }
  using Map = BucketMap<uint64_t>;
  auto filled = [&](uint64_t seed) {
    auto map = std::make_unique<Map>(1);
    uint64_t rng = seed;
    for (uint64_t i = 0; i < fill; ++i) {
      if (map->Emplace(ckf::SplitmixNext(&rng) | 1, i).first == nullptr) throw Napi::Error::New(env, "allocation failed");
    }
    return map;
  };
  auto crafted = filled(11);
  auto random = filled(11);
  const Map::Shape before = crafted->GetShape();
  uint64_t rng = 0xC0FFEE;
  uint64_t maxStash = 0;
  uint64_t craftedNs = 0;
  uint64_t randomNs = 0;
  // The seed as the public code predicts it: the initial one, then one step of BucketMap::Reseed's
  // chain per move to another seed (a best-case attacker who also knows when the table moved).
  uint64_t seed = Map::kInitialSeed;
  uint64_t moves = 0;
  auto timed = [](Map* map, const std::vector<uint64_t>& keys, Napi::Env env) {
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t key : keys) {
      if (key != 0 && map->Emplace(key, key).first == nullptr) throw Napi::Error::New(env, "allocation failed");
    }
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  };
  std::vector<uint64_t> keys(perBatch);
  // Batches alternate between the two maps, so that neither is measured warmer than the other.
  for (uint32_t b = 0; b < batches; ++b) {
    const Map::Shape now = crafted->GetShape();
    for (; moves < now.reseeds + now.rebuilds; ++moves) {
      uint64_t state = seed;
      seed = ckf::SplitmixNext(&state);
    }
    const uint64_t n = now.buckets;
    const HomePair pair = PairFor(n, ckf::SplitmixNext(&rng) % n, ckf::SplitmixNext(&rng) % n);
    for (uint32_t k = 0; k < perBatch; ++k) keys[k] = KeyFor(pair.m0 + ckf::SplitmixNext(&rng) % pair.span, seed);
    craftedNs += timed(crafted.get(), keys, env);
    maxStash = std::max<uint64_t>(maxStash, crafted->GetShape().stashed);
    for (uint32_t k = 0; k < perBatch; ++k) keys[k] = ckf::SplitmixNext(&rng) | 1;
    randomNs += timed(random.get(), keys, env);
  }
  if (const char* broken = crafted->Invariant()) throw Napi::Error::New(env, broken);
  const Map::Shape after = crafted->GetShape();
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  out.Set("craftedNs", num(craftedNs));
  out.Set("randomNs", num(randomNs));
  out.Set("reseeds", num(after.reseeds - before.reseeds));
  out.Set("rebuilds", num(after.rebuilds - before.rebuilds));
  out.Set("maxStash", num(maxStash));
  return out;
}

}  // namespace

void InitBucketMapCheck(Napi::Env env, Napi::Object exports) {
  exports.Set("checkBucketMap", Napi::Function::New(env, CheckBucketMap, "checkBucketMap"));
  exports.Set("checkBucketMapGrowth", Napi::Function::New(env, CheckBucketMapGrowth, "checkBucketMapGrowth"));
  exports.Set("attackBucketMap", Napi::Function::New(env, AttackBucketMap, "attackBucketMap"));
  exports.Set("checkBucketMapStagger", Napi::Function::New(env, CheckBucketMapStagger, "checkBucketMapStagger"));
  exports.Set("checkBucketMapWaitsForSuccessor",
              Napi::Function::New(env, CheckBucketMapWaitsForSuccessor, "checkBucketMapWaitsForSuccessor"));
}

}  // namespace testing
}  // namespace kvrelay
