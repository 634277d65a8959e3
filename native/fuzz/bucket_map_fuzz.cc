// libFuzzer target: native/bucket_map.h against std::unordered_map, in both layouts at once (4-byte
// values: the owner table; 8-byte values: the lineage tables), every operation applied to both maps.
// Input = operations of [u8 op][u8 key index] or, when the op's top bit is set, [u8 op][u64 key]:
// indexed keys come from a small space (repeats, key 0, dense keys), raw keys are anything; tables
// grow from 4 buckets, so a few dozen insertions already start drains. Op 7 reserves (past the room
// a drain leaves when the key is large: a synchronous finish); op 6 with the top bit crowds: up to 4
// keys crafted to share the key's candidate buckets (stash, a move to another seed, mid-drain a
// rebuild). Every result must match, the invariants (candidate buckets, masks, overflow counts, both
// tables disjoint, the drain ending before the next growth, size) hold, and an operation without a
// fallback moves at most kMaxMovesPerOp entries.
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "core/bucket_map.h"
#include "fuzz_input.h"

using kvrelay::fuzz::Input;

namespace {

template <typename V>
struct Pair {
  kvrelay::BucketMap<V> map;
  std::unordered_map<uint64_t, V> ref;
  uint64_t ops = 0;

  void Emplace(uint64_t key, V value) {
    auto [slot, inserted] = map.Emplace(key, value);
    auto [it, refInserted] = ref.emplace(key, value);
    FUZZ_CHECK(slot != nullptr);
    FUZZ_CHECK(inserted == refInserted);
    FUZZ_CHECK(*slot == it->second);
  }

  void Apply(uint8_t op, uint64_t key, V value) {
    const auto before = map.GetShape();
    switch (op & 7) {
      case 0:
      case 1:
      case 2:
        Emplace(key, value);
        break;
      case 3: {
        const V* found = static_cast<const kvrelay::BucketMap<V>&>(map).Find(key);
        auto it = ref.find(key);
        FUZZ_CHECK((found != nullptr) == (it != ref.end()));
        FUZZ_CHECK(found == nullptr || *found == it->second);
        break;
      }
      case 4:
      case 5: {
        V* found = map.Find(key);
        if (found != nullptr) map.EraseFound(found);
        FUZZ_CHECK((found != nullptr) == (ref.erase(key) == 1));
        break;
      }
      case 6:
        if ((op & 0x80) != 0 && key != 0) {
          Crowd(key, value);
        } else {
          V* found = map.Find(key);
          if (found != nullptr) map.EraseFound(found);
          FUZZ_CHECK((found != nullptr) == (ref.erase(key) == 1));
        }
        break;
      default:
        map.Reserve(key % 4096);
    }
    FUZZ_CHECK(map.size() == ref.size());
    const auto after = map.GetShape();
    // The invariants read the whole map: after every operation while it is small, past that every 8th
    // and after each start or end of a migration (the checks were ~90 % of the run time).
    const bool turned = after.growths != before.growths || after.reseeds != before.reseeds ||
                        after.rebuilds != before.rebuilds || after.oldBuckets != before.oldBuckets;
    if (map.size() <= 64 || (++ops & 7) == 0 || turned) FUZZ_CHECK(map.Invariant() == nullptr);
    if (after.finishes == before.finishes && after.rebuilds == before.rebuilds && (op & 7) != 6) {
      const uint64_t moved = (after.migrated - before.migrated) + (after.pathMoves - before.pathMoves);
      FUZZ_CHECK(moved <= kvrelay::BucketMap<V>::kMaxMovesPerOp);
    }
  }

  // Keys sharing both candidate buckets of `target` in the table new keys go to (bounded search).
  void Crowd(uint64_t target, V value) {
    uint64_t candidate = target;
    for (int n = 0; n < 4; ++n) {
      const auto homes = map.Candidates(target);
      for (int tries = 0; tries < 1024; ++tries) {
        const uint64_t key = kvrelay::ckf::SplitmixNext(&candidate);
        if (key != 0 && map.Candidates(key) == homes) {
          Emplace(key, value);
          FUZZ_CHECK(map.Invariant() == nullptr);
          break;
        }
      }
    }
  }

  void CheckContents() {
    size_t seen = 0;
    map.ForEach([&](uint64_t key, const V& v) {
      ++seen;
      auto it = ref.find(key);
      FUZZ_CHECK(it != ref.end() && it->second == v);
    });
    FUZZ_CHECK(seen == ref.size());
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Pair<uint32_t> owners;
  Pair<uint64_t> lineage;
  uint32_t value = 0;
  while (in.Left() > 0) {
    const uint8_t op = in.Take<uint8_t>();
    uint64_t key;
    if (op & 0x80) {
      key = in.Take<uint64_t>();
    } else {
      const uint8_t index = in.Take<uint8_t>();
      key = (op & 0x40) ? index : index * 0x9E3779B97F4A7C15ULL;
    }
    ++value;
    owners.Apply(op, key, value);
    lineage.Apply(op, key, (uint64_t{value} << 32) | value);
    // Contents now and then mid-drain too (ForEach reads both tables).
    if ((value & 15) == 0) {
      owners.CheckContents();
      lineage.CheckContents();
    }
  }
  owners.CheckContents();
  lineage.CheckContents();
  return 0;
}
