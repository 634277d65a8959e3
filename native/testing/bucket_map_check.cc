// Randomized differential check of BucketMap against std::unordered_map (test/native/bucket-map.test.ts):
// test/bench addon only. Runs the whole sequence in C++ (millions of operations in a test's time) and
// throws a JS Error at the first difference or broken invariant, naming the operation.
#include <napi.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "bucket_map.h"
#include "ckf.h"
#include "napi_args.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

using Map = BucketMap<uint32_t>;
// Crafted keys sharing their candidate buckets: enough for the map to pass ~90 entries, past which a
// full stash comes before the next growth and forces a rebuild at the same size.
constexpr uint64_t kCrowdedKeys = 300;
using Reference = std::unordered_map<uint64_t, uint32_t>;

struct Tally {
  uint64_t maxSize = 0;
  uint64_t maxStash = 0;
  uint64_t growths = 0;
  uint64_t reseeds = 0;  // rebuilds at the same bucket count: a stash at its limit
};

[[noreturn]] void Fail(Napi::Env env, uint64_t op, const std::string& what) {
  throw Napi::Error::New(env, "BucketMap differs from std::unordered_map at operation " + std::to_string(op) + ": " + what);
}

// After every operation: the shape counters; every `every` operations also the full contents and invariants.
void Check(Napi::Env env, const Map& map, const Reference& ref, uint64_t op, bool full, Tally* tally, size_t* buckets,
           uint64_t* rehashes) {
  if (map.size() != ref.size()) Fail(env, op, "size " + std::to_string(map.size()) + " vs " + std::to_string(ref.size()));
  const Map::Shape shape = map.GetShape();
  if (shape.rehashes != *rehashes) {
    if (shape.buckets == *buckets) {
      ++tally->reseeds;
    } else {
      ++tally->growths;
    }
    *rehashes = shape.rehashes;
    *buckets = shape.buckets;
  }
  if (map.size() > tally->maxSize) tally->maxSize = map.size();
  if (shape.stashed > tally->maxStash) tally->maxStash = shape.stashed;
  if (!full) return;
  if (const char* broken = map.Invariant()) Fail(env, op, broken);
  size_t seen = 0;
  map.ForEach([&](uint64_t key, uint32_t value) {
    ++seen;
    auto it = ref.find(key);
    if (it == ref.end()) Fail(env, op, "key " + std::to_string(key) + " only in the map");
    if (it->second != value) Fail(env, op, "value of key " + std::to_string(key));
  });
  if (seen != ref.size()) Fail(env, op, "ForEach visited " + std::to_string(seen) + " entries");
}

// One operation on both containers, compared. Keys come from the caller.
void Step(Napi::Env env, Map* map, Reference* ref, uint64_t op, uint64_t r, uint64_t key) {
  const uint32_t value = static_cast<uint32_t>(r >> 32);
  switch ((r >> 8) % 8) {
    case 0:
    case 1:
    case 2: {  // Emplace; on a hit, write through the returned slot
      auto [slot, inserted] = map->Emplace(key, value);
      auto [it, refInserted] = ref->emplace(key, value);
      if (slot == nullptr) Fail(env, op, "Emplace returned no slot");
      if (inserted != refInserted) Fail(env, op, "Emplace inserted " + std::to_string(inserted));
      if (*slot != it->second) Fail(env, op, "Emplace slot value");
      if (!inserted) *slot = it->second = value ^ 0x5A5A5A5AU;
      break;
    }
    case 3:
    case 4: {  // Find
      const uint32_t* found = static_cast<const Map*>(map)->Find(key);
      auto it = ref->find(key);
      if ((found != nullptr) != (it != ref->end())) Fail(env, op, "Find presence of key " + std::to_string(key));
      if (found != nullptr && *found != it->second) Fail(env, op, "Find value");
      break;
    }
    case 5:
    case 6: {  // Find then EraseFound
      uint32_t* found = map->Find(key);
      if ((found != nullptr) != (ref->count(key) == 1)) Fail(env, op, "Find before EraseFound of key " + std::to_string(key));
      if (found != nullptr) {
        map->EraseFound(found);
        ref->erase(key);
      }
      break;
    }
    default:
      map->Reserve(static_cast<size_t>(r >> 40) % 64);
  }
}

// (seed, operations, keySpace) -> { maxSize, maxStash, growths, reseeds, secondBucket, paths, pathMoves }
// Random operations over `keySpace` keys (key 0 among them), in phases that grow the map and shrink it;
// then keys crafted to share both candidate buckets (a fresh map: paths cannot help them, so they go
// to the stash until it fills and the map rebuilds under another seed).
Napi::Value CheckBucketMap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t rng = args::U64(args::Arg(info, 0), "seed");
  const uint64_t operations = args::U64(args::Arg(info, 1), "operations", true);
  const uint64_t keySpace = args::U64(args::Arg(info, 2), "keySpace", true);
  if (keySpace == 0 || operations > (uint64_t{1} << 28)) {
    throw Napi::RangeError::New(env, "need keySpace > 0 and operations <= 2^28");
  }
  Tally tally;
  Map map;
  Reference ref;
  size_t buckets = map.GetShape().buckets;
  uint64_t rehashes = 0;
  const uint64_t phase = operations / 8 + 1;
  for (uint64_t op = 0; op < operations; ++op) {
    const uint64_t r = ckf::SplitmixNext(&rng);
    // Odd phases draw from a quarter of the key space: the map shrinks by erasures of the rest.
    const uint64_t space = (op / phase) % 2 == 0 ? keySpace : keySpace / 4 + 1;
    uint64_t index = (r >> 16) % space;
    uint64_t key = index == 0 ? 0 : index * 0x9E3779B97F4A7C15ULL;  // spread, and key 0 itself
    if ((r & 0xF0) == 0) key = index;  // small dense keys too
    Step(env, &map, &ref, op, r, key);
    Check(env, map, ref, op, op % 1024 == 0 || op + 1 == operations, &tally, &buckets, &rehashes);
  }

  Map crowded;
  Reference crowdedRef;
  size_t crowdedBuckets = crowded.GetShape().buckets;
  uint64_t crowdedRehashes = 0;
  uint64_t candidate = rng | 1;
  const uint64_t target = 0x1234567ULL;  // every crafted key shares this key's buckets under the current seed
  for (uint64_t n = 0; n < kCrowdedKeys; ++n) {
    const auto homes = crowded.Candidates(target);
    uint64_t key = 0;
    do {
      key = ckf::SplitmixNext(&candidate);
    } while (key == 0 || crowdedRef.count(key) != 0 || crowded.Candidates(key) != homes);
    auto [slot, inserted] = crowded.Emplace(key, static_cast<uint32_t>(n));
    if (slot == nullptr || !inserted) Fail(env, operations + n, "crafted key not inserted");
    crowdedRef.emplace(key, static_cast<uint32_t>(n));
    Check(env, crowded, crowdedRef, operations + n, true, &tally, &crowdedBuckets, &crowdedRehashes);
  }
  for (const auto& [key, value] : crowdedRef) {
    const uint32_t* found = crowded.Find(key);
    if (found == nullptr || *found != value) Fail(env, operations + kCrowdedKeys, "crafted key lost");
  }

  const Map::Shape shape = map.GetShape();
  const Map::Shape crowdedShape = crowded.GetShape();
  Napi::Object out = Napi::Object::New(env);
  auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
  out.Set("maxSize", num(tally.maxSize));
  out.Set("maxStash", num(tally.maxStash));
  out.Set("growths", num(tally.growths));
  out.Set("reseeds", num(tally.reseeds));
  out.Set("secondBucket", num(shape.secondBucket + crowdedShape.secondBucket));
  out.Set("paths", num(shape.paths + crowdedShape.paths));
  out.Set("pathMoves", num(shape.pathMoves + crowdedShape.pathMoves));
  return out;
}

}  // namespace

void InitBucketMapCheck(Napi::Env env, Napi::Object exports) {
  exports.Set("checkBucketMap", Napi::Function::New(env, CheckBucketMap, "checkBucketMap"));
}

}  // namespace testing
}  // namespace kvrelay
