// Bucketed cuckoo u64 -> V map for 4-byte values: the pool's owner table (canonical hash -> owner
// count + resident bit). Every raw canonical op and every engine block does one owner lookup on a
// random key, and U64Map's linear probing at the lean load band walked long runs there (the
// backward-shift erase and the scan of a miss were most of the instructions per op, BENCHMARKS.md
// "Lean state vs speed"). Here:
// - a bucket is one 64-byte line: 5 keys, their 5 values, a used mask and an overflow count;
// - a key has two candidate buckets and goes to the one with more free slots (the first on a tie);
//   when both are full a cuckoo path (found first, then executed) makes room, else the key waits in a
//   small stash; a stash at its limit makes the table rebuild under another seed;
// - the first bucket's overflow count says how many keys homed there live in their second bucket, so
//   a lookup reads the second line only when that count is non-zero: at most two lines (both are
//   prefetched), plus the stash when it is not empty;
// - an erase clears its slot: O(1), nothing moves;
// - the load stays in [0.70, 0.85]: at 12.8 bytes per slot that is about U64Map's bytes per entry
//   (12-byte slots at [0.65, 0.81]), and above 0.85 the cuckoo paths grow (each step a cache miss).
// Unlike U64Map, an insertion may move other entries (a cuckoo path, or a rebuild), and an erase may
// move a stash entry: a pointer from Find or Emplace is valid only until the next Emplace, Reserve or
// erase.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "ckf.h"
#include "zeroed_buffer.h"

namespace kvrelay {

template <typename V>
class BucketMap {
  static_assert(sizeof(V) == 4 && std::is_trivially_copyable<V>::value, "a BucketMap value is 4 plain bytes");

 public:
  BucketMap() : table_(kMinBuckets, kInitialSeed) {}

  size_t size() const { return table_.size + (hasZero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // Bytes of the buckets and the stash (the map's heap footprint apart from the object itself).
  size_t MemoryBytes() const {
    return table_.buckets.size() * sizeof(Bucket) + table_.stash.capacity() * sizeof(Entry);
  }

  V* Find(uint64_t key) {
    if (key == 0) return hasZero_ ? &zeroValue_ : nullptr;
    return FindAt(key, table_.HomesOf(key));
  }
  const V* Find(uint64_t key) const { return const_cast<BucketMap*>(this)->Find(key); }

  // Makes room for `extra` more keys, so that the next `extra` Emplace calls do not grow the table
  // (they may still move entries, and rebuild at the same size when the stash fills). Throws
  // std::bad_alloc.
  void Reserve(size_t extra) {
    if (!Fits(table_.size + extra)) Rehash(CapacityFor(table_.size + extra));
  }

  // Inserts key -> value if absent. Returns the value slot and whether it was inserted; the slot is
  // null only when a needed rebuild could not allocate (the map is then unchanged).
  std::pair<V*, bool> Emplace(uint64_t key, const V& value) {
    if (key == 0) {
      if (hasZero_) return {&zeroValue_, false};
      hasZero_ = true;
      zeroValue_ = value;
      return {&zeroValue_, true};
    }
    const Homes h = table_.HomesOf(key);
    V* found = FindAt(key, h);
    if (found != nullptr) return {found, false};
    try {
      if (!Fits(table_.size + 1)) {
        Rehash(CapacityFor(table_.size + 1));
        return {table_.Place(key, value, table_.HomesOf(key)), true};
      }
      V* placed = table_.Place(key, value, h);
      if (placed != nullptr) return {placed, true};
      // Neither a cuckoo path nor stash room (the load fits, so the keys are unlucky or crafted under
      // this seed): rebuild at the same size under another seed. The rebuilt stash is at most half
      // full, so the key then has a place.
      Rehash(table_.buckets.size());
      return {table_.Place(key, value, table_.HomesOf(key)), true};
    } catch (const std::bad_alloc&) {
      return {nullptr, false};
    }
  }

  // Erases the entry whose value Find or Emplace just returned.
  void EraseFound(const V* value) {
    if (value == &zeroValue_) {
      hasZero_ = false;
      return;
    }
    table_.EraseAt(value);
  }

  // How the entries got placed, for tests and benches: every counter only moves on a slow path.
  struct Shape {
    size_t buckets;
    size_t stashed;       // entries in the stash now
    uint64_t secondBucket;  // insertions into a key's second bucket
    uint64_t paths;       // insertions that moved other entries along a cuckoo path
    uint64_t pathMoves;   // entries those paths moved
    uint64_t rehashes;
  };
  Shape GetShape() const {
    return Shape{table_.buckets.size(), table_.stash.size(), table_.secondBucket, table_.paths, table_.pathMoves,
                 rehashes_};
  }

  // For tests: the key's two candidate buckets under the current seed (key != 0).
  std::pair<size_t, size_t> Candidates(uint64_t key) const {
    const Homes h = table_.HomesOf(key);
    return {h.first, h.second};
  }

  // For tests and fuzzing: null when the structure is consistent, else what is wrong. Every bucketed
  // key sits in one of its candidate buckets, the used masks match the keys, each overflow count
  // matches the keys living in their second bucket (or stays saturated), and size() counts every entry.
  const char* Invariant() const {
    std::vector<uint32_t> overflow(table_.buckets.size(), 0);
    size_t entries = 0;
    for (size_t b = 0; b < table_.buckets.size(); ++b) {
      const Bucket& bucket = table_.buckets[b];
      for (int s = 0; s < kSlots; ++s) {
        const bool used = (bucket.used >> s) & 1;
        if (used != (bucket.keys[s] != 0)) return "used mask differs from the keys";
        if (!used) continue;
        ++entries;
        const Homes h = table_.HomesOf(bucket.keys[s]);
        if (b == h.second) {
          ++overflow[h.first];
        } else if (b != h.first) {
          return "key outside its candidate buckets";
        }
      }
      if ((bucket.used >> kSlots) != 0) return "used mask past the slots";
    }
    for (size_t b = 0; b < table_.buckets.size(); ++b) {
      const uint8_t count = table_.buckets[b].overflow;
      if (count != 0xFF && count != overflow[b]) return "overflow count differs from the keys";
    }
    for (const Entry& e : table_.stash) {
      if (e.key == 0) return "key 0 in the stash";
    }
    if (entries + table_.stash.size() != table_.size) return "size differs from the entries";
    if (table_.stash.size() > table_.stashLimit || table_.stash.capacity() < table_.stashLimit) {
      return "stash past its reserved limit";
    }
    return nullptr;
  }

  template <typename F>
  void ForEach(F f) const {
    if (hasZero_) f(uint64_t{0}, zeroValue_);
    for (size_t b = 0; b < table_.buckets.size(); ++b) {
      const Bucket& bucket = table_.buckets[b];
      for (int s = 0; s < kSlots; ++s) {
        if (bucket.keys[s] != 0) f(bucket.keys[s], bucket.values[s]);
      }
    }
    for (const Entry& e : table_.stash) f(e.key, e.value);
  }

  // Both candidate buckets: an insertion reads both (placement compares their free slots), and a
  // lookup reads the second whenever the first's overflow count is non-zero (prefetching only the
  // first line cost ~40 % of the raw canonical rate). Into L2 like U64Map::Prefetch.
  // always_inline: GCC marks a prefetch-only function const and drops the call as dead.
  __attribute__((always_inline)) void Prefetch(uint64_t key) const {
    const Homes h = table_.HomesOf(key);
    __builtin_prefetch(&table_.buckets[h.first], 0, 1);
    __builtin_prefetch(&table_.buckets[h.second], 0, 1);
  }

 private:
  static constexpr int kSlots = 5;
  static constexpr uint8_t kFull = (1u << kSlots) - 1;
  // Free slots of a bucket by its used mask (no popcnt instruction in the baseline x86-64 build).
  static constexpr uint8_t kFreeSlots[32] = {5, 4, 4, 3, 4, 3, 3, 2, 4, 3, 3, 2, 3, 2, 2, 1,
                                             4, 3, 3, 2, 3, 2, 2, 1, 3, 2, 2, 1, 2, 1, 1, 0};
  struct alignas(64) Bucket {
    uint64_t keys[kSlots];  // 0: empty (key 0 itself lives in zeroValue_)
    V values[kSlots];
    // Keys whose first bucket is this one that live in their second bucket. Saturates: at the top it
    // stays there until a rehash (lookups then always read the second line).
    uint8_t overflow;
    uint8_t used;  // bit s: slot s holds a key
    uint8_t unused[2];
  };
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");
  struct Entry {
    uint64_t key;
    V value;
  };
  struct Homes {
    size_t first;
    size_t second;
  };

  // Grow when an insertion would pass kMaxLoad, to kGrowToLoad (x1.21).
  static constexpr size_t kMaxLoadPer1024 = 870;     // 0.85
  static constexpr size_t kGrowToLoadPer1024 = 717;  // 0.70
  static constexpr size_t kMinBuckets = 4;
  // Cuckoo path length bound: in this load band a path averages under two moves (bench/filter).
  static constexpr int kMaxPath = 32;
  // Stash room after a rehash: at least this, and twice what the rehash itself left there, so keys a
  // seed cannot place (crafted, or very unlucky) cost a rebuild only after the stash doubled.
  static constexpr size_t kMinStash = 8;
  static constexpr uint64_t kInitialSeed = 0x2545F4914F6CDD1DULL;

  static size_t CapacityFor(size_t entries) {
    const size_t buckets = entries * 1024 / (kGrowToLoadPer1024 * kSlots) + 1;
    return buckets < kMinBuckets ? kMinBuckets : buckets;
  }
  bool Fits(size_t entries) const { return entries * 1024 <= table_.buckets.size() * kSlots * kMaxLoadPer1024; }

  // The buckets and stash under one seed: Rehash builds a new one beside the old and swaps, so a
  // failed allocation leaves the map as it was.
  struct Table {
    ZeroedBuffer<Bucket> buckets;
    std::vector<Entry> stash;
    size_t stashLimit = kMinStash;
    size_t size = 0;  // entries in buckets and stash
    uint64_t seed;
    uint64_t walk;  // picks cuckoo-path victims
    uint64_t secondBucket = 0;
    uint64_t paths = 0;
    uint64_t pathMoves = 0;

    Table(size_t bucketCount, uint64_t s) : buckets(bucketCount), seed(s), walk(s) { stash.reserve(stashLimit); }

    // Two multiplies and two multiply-high range reductions (any bucket count); the second bucket
    // comes from a re-mixed product so that it is independent of the first, and differs from it.
    Homes HomesOf(uint64_t key) const {
      const uint64_t n = buckets.size();
      const uint64_t m = (key ^ seed) * 0x9E3779B97F4A7C15ULL;
      const size_t first = static_cast<size_t>((static_cast<unsigned __int128>(m) * n) >> 64);
      const uint64_t m2 = (m ^ (m >> 29)) * 0xBF58476D1CE4E5B9ULL;
      size_t second = static_cast<size_t>((static_cast<unsigned __int128>(m2) * n) >> 64);
      if (second == first) second = first + 1 == n ? 0 : first + 1;
      return Homes{first, second};
    }

    V* Put(size_t bucket, int slot, uint64_t key, const V& value) {
      Bucket& b = buckets[bucket];
      b.used = static_cast<uint8_t>(b.used | (1u << slot));
      b.keys[slot] = key;
      b.values[slot] = value;
      return &b.values[slot];
    }
    static int FreeSlot(const Bucket& b) { return b.used == kFull ? -1 : __builtin_ctz(~b.used); }
    // A key (its homes h) arrives in or leaves bucket b: keeps its first bucket's overflow count.
    void Arrived(const Homes& h, size_t b) {
      uint8_t& overflow = buckets[h.first].overflow;
      if (b == h.second && overflow != 0xFF) ++overflow;
    }
    void Left(const Homes& h, size_t b) {
      uint8_t& overflow = buckets[h.first].overflow;
      if (b == h.second && overflow != 0xFF) --overflow;
    }

    struct Step {
      size_t bucket;
      int slot;
    };

    // An absent key: into the candidate bucket with more free slots (the first on a tie), else along
    // a cuckoo path, else into the stash. null: no path and the stash at its limit (nothing changed).
    V* Place(uint64_t key, const V& value, const Homes& h) {
      const Bucket& a = buckets[h.first];
      const Bucket& b = buckets[h.second];
      const int freeA = kFreeSlots[a.used];
      const int freeB = kFreeSlots[b.used];
      if (freeA > 0 && freeA >= freeB) {
        ++size;
        return Put(h.first, FreeSlot(a), key, value);
      }
      if (freeB > 0) {
        ++size;
        ++secondBucket;
        Arrived(h, h.second);
        return Put(h.second, FreeSlot(b), key, value);
      }
      V* placed = PlaceByPath(key, value, h);
      if (placed != nullptr) return placed;
      if (stash.size() >= stashLimit) return nullptr;
      ++size;
      stash.push_back(Entry{key, value});
      return &stash.back().value;
    }

    // Random-walk cuckoo path from one of the key's full buckets to a free slot, found without moving
    // anything (so a failed search changes nothing), then executed from the free end backwards.
    V* PlaceByPath(uint64_t key, const V& value, const Homes& h) {
      Step path[kMaxPath];
      size_t bucket = (ckf::SplitmixNext(&walk) & 1) != 0 ? h.first : h.second;
      for (int len = 0; len < kMaxPath; ++len) {
        const uint64_t r = ckf::SplitmixNext(&walk);
        int slot = static_cast<int>(r % kSlots);
        // A slot already on the path would be moved twice: take the next one that is not.
        for (int tries = 0; tries < kSlots && OnPath(path, len, bucket, slot); ++tries) slot = (slot + 1) % kSlots;
        if (OnPath(path, len, bucket, slot)) return nullptr;
        path[len] = Step{bucket, slot};
        const uint64_t victim = buckets[bucket].keys[slot];
        const Homes vh = HomesOf(victim);
        const size_t next = bucket == vh.first ? vh.second : vh.first;
        const int free = FreeSlot(buckets[next]);
        if (free < 0) {
          bucket = next;
          continue;
        }
        // Execute: each victim moves one step on, last first, then the key takes the path's start.
        size_t to = next;
        int toSlot = free;
        for (int i = len; i >= 0; --i) {
          Bucket& from = buckets[path[i].bucket];
          const uint64_t k = from.keys[path[i].slot];
          const Homes kh = HomesOf(k);
          Put(to, toSlot, k, from.values[path[i].slot]);
          Left(kh, path[i].bucket);
          Arrived(kh, to);
          to = path[i].bucket;
          toSlot = path[i].slot;
        }
        ++size;
        ++paths;
        pathMoves += static_cast<uint64_t>(len) + 1;
        Arrived(h, to);
        return Put(to, toSlot, key, value);
      }
      return nullptr;
    }
    static bool OnPath(const Step* path, int len, size_t bucket, int slot) {
      for (int i = 0; i < len; ++i) {
        if (path[i].bucket == bucket && path[i].slot == slot) return true;
      }
      return false;
    }

    void EraseAt(const V* value) {
      const char* p = reinterpret_cast<const char*>(value);
      const char* base = reinterpret_cast<const char*>(buckets.data());
      if (p >= base && p < base + buckets.size() * sizeof(Bucket)) {
        const size_t offset = static_cast<size_t>(p - base);
        const size_t bucket = offset / sizeof(Bucket);
        const int slot = static_cast<int>((offset % sizeof(Bucket) - offsetof(Bucket, values)) / sizeof(V));
        Bucket& b = buckets[bucket];
        Left(HomesOf(b.keys[slot]), bucket);
        b.keys[slot] = 0;
        b.used = static_cast<uint8_t>(b.used & ~(1u << slot));
      } else {
        const Entry* e = reinterpret_cast<const Entry*>(p - offsetof(Entry, value));
        stash[static_cast<size_t>(e - stash.data())] = stash.back();
        stash.pop_back();
      }
      --size;
    }
  };
  V* FindAt(uint64_t key, const Homes& h) {
    Bucket& first = table_.buckets[h.first];
    for (int s = 0; s < kSlots; ++s) {
      if (first.keys[s] == key) return &first.values[s];
    }
    if (first.overflow != 0) {
      Bucket& second = table_.buckets[h.second];
      for (int s = 0; s < kSlots; ++s) {
        if (second.keys[s] == key) return &second.values[s];
      }
    }
    for (Entry& e : table_.stash) {
      if (e.key == key) return &e.value;
    }
    return nullptr;
  }

  // Builds a table of `bucketCount` buckets under the next seed holding every entry, then swaps it in.
  // Throws std::bad_alloc, leaving the map unchanged.
  void Rehash(size_t bucketCount) {
    uint64_t seedState = table_.seed;
    Table next(bucketCount, ckf::SplitmixNext(&seedState));
    auto place = [&next](uint64_t key, const V& value) {
      if (next.Place(key, value, next.HomesOf(key)) == nullptr) {
        ++next.size;
        next.stash.push_back(Entry{key, value});  // past the limit: the limit is reset below
      }
    };
    for (size_t b = 0; b < table_.buckets.size(); ++b) {
      const Bucket& bucket = table_.buckets[b];
      for (int s = 0; s < kSlots; ++s) {
        if (bucket.keys[s] != 0) place(bucket.keys[s], bucket.values[s]);
      }
    }
    for (const Entry& e : table_.stash) place(e.key, e.value);
    next.stashLimit = std::max(kMinStash, 2 * next.stash.size());
    next.stash.reserve(next.stashLimit);
    next.secondBucket += table_.secondBucket;
    next.paths += table_.paths;
    next.pathMoves += table_.pathMoves;
    std::swap(table_, next);
    ++rehashes_;
  }

  Table table_;
  uint64_t rehashes_ = 0;
  bool hasZero_ = false;
  V zeroValue_{};
};

}  // namespace kvrelay
