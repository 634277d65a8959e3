// libFuzzer target: the owner table (bucket_map.h) against std::unordered_map. Input = operations of
// [u8 op][u8 key index] or, when the op's top bit is set, [u8 op][u64 key]: indexed keys come from a
// small space (repeats, key 0, dense keys), raw keys are anything. Every result must match, and the
// invariants (candidate buckets, used masks, overflow counts, size) must hold after every operation.
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "bucket_map.h"
#include "fuzz_input.h"

using kvrelay::fuzz::Input;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  kvrelay::BucketMap<uint32_t> map;
  std::unordered_map<uint64_t, uint32_t> ref;
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
    switch (op & 7) {
      case 0:
      case 1:
      case 2: {
        auto [slot, inserted] = map.Emplace(key, value);
        auto [it, refInserted] = ref.emplace(key, value);
        FUZZ_CHECK(slot != nullptr);
        FUZZ_CHECK(inserted == refInserted);
        FUZZ_CHECK(*slot == it->second);
        break;
      }
      case 3: {
        const uint32_t* found = map.Find(key);
        auto it = ref.find(key);
        FUZZ_CHECK((found != nullptr) == (it != ref.end()));
        FUZZ_CHECK(found == nullptr || *found == it->second);
        break;
      }
      case 4:
      case 5:
      case 6: {
        uint32_t* found = map.Find(key);
        if (found != nullptr) map.EraseFound(found);
        FUZZ_CHECK((found != nullptr) == (ref.erase(key) == 1));
        break;
      }
      default:
        map.Reserve(key % 128);
    }
    FUZZ_CHECK(map.size() == ref.size());
    FUZZ_CHECK(map.Invariant() == nullptr);
  }
  size_t seen = 0;
  map.ForEach([&](uint64_t key, uint32_t v) {
    ++seen;
    auto it = ref.find(key);
    FUZZ_CHECK(it != ref.end() && it->second == v);
  });
  FUZZ_CHECK(seen == ref.size());
  return 0;
}
