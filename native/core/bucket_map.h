// Bucketed cuckoo u64 -> V map for 4- and 8-byte values: the pool's owner table (canonical hash ->
// owner count + resident bit, 4 bytes) and its lineage tables (engine block id -> canonical hash,
// 8 bytes). Every raw canonical op and every engine block does one owner lookup on a random key, and
// linear probing at the lean load band walked long runs there (the backward-shift erase and the scan
// of a miss were most of the instructions per op, BENCHMARKS.md "Lean state vs speed"). Here:
// - a bucket is one 64-byte line. 4-byte values: 5 keys, their 5 values, a used mask and an overflow
//   count. 8-byte values leave no spare bytes: 4 keys and 4 values, the keys packed at the front (key
//   0 marks the free slots), and a lookup that misses the first line always reads the second;
// - a key has two candidate buckets and goes to the one with more free slots (the first on a tie);
//   when both are full a cuckoo path (found first, then executed) makes room, else the key waits in a
//   small stash; a stash at its limit makes the table move to another seed;
// - the first bucket's overflow count (4-byte values) says how many keys homed there live in their
//   second bucket, so a lookup reads the second line only when that count is non-zero: at most two
//   lines (both are prefetched), plus the stash when it is not empty;
// - an erase clears its slot (8-byte values: the bucket's last key moves into it): O(1);
// - the load stays in [0.66, 0.85]: 12.8 (16) bytes per slot, about what linear probing cost per entry
//   at [0.65, 0.81] with 12 (16) byte slots, and above 0.85 the cuckoo paths grow (each step a miss).
//   Growing by x1.29 moves each entry about 1 / (1.29 - 1) = 3.5 times over a table's growth (x1.21
//   from 0.70: 4.7): filling 10 M blocks over 64 sources took 7.8-8.1 s instead of 9.5-10.1, while
//   the memory at rest stays at most 3.4 + 28.8 / 0.66 = 47 B per block (filter, owner, lineage;
//   41-44.5 measured).
//
// No operation takes time proportional to the table (BENCHMARKS.md "Incremental growth"): the pool
// applies engine events synchronously on the relay's event loop, where a synchronous rehash of a few
// hundred thousand entries stalled every stream for tens of ms, and 64 lineage tables growing in step
// for hundreds. So growth, and a move to another seed, start a new table and drain the old one into it
// kDrainSteps buckets per insertion and per erase; lookups read the new table, then the old one where
// it is not drained yet. The new table is sized so that the drain ends before it could need to grow
// (Invariant checks it): an insertion never finishes a drain at once. The fallbacks that do work in
// proportion to a table: Reserve asking for more than a drain leaves room for finishes it (bounded by
// kDrainSteps buckets per reserved key), and a new key that the new table's stash cannot take
// mid-drain (keys crafted against its seed) rebuilds at once under another seed. Around that:
// - a table prepares its successor at load 0.83 and has its pages faulted in on another thread
//   (ZeroedBuffer::PopulateInBackground), because the first insertions into a fresh table touch all
//   of its pages, and zeroing them was most of a growth's cost left on the event loop; a table whose
//   successor is not in yet takes keys past 0.85 (up to 0.92) rather than switch to it;
// - a drain gives the old table's pages back as it passes them (ZeroedBuffer::ReleaseFront), so the
//   transient peak (both tables) falls while it drains, and no 100+ MiB munmap (~10 ms in small
//   pages) comes at its end; the populating thread keeps them a few seconds for the next successor
//   (pages::WarmPages), which so needs few fresh pages.
//
// An insertion may move other entries (a cuckoo path, a drain step, a rebuild), and an erase may move
// an entry of its bucket or the stash, or drain: a pointer from Find or Emplace is valid only until the
// next Emplace, Reserve or erase.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/ckf.h"
#include "core/process_secret.h"
#include "core/zeroed_buffer.h"

namespace kvrelay {

// A key's candidate buckets in a BucketMap's table for new keys, worked out ahead of the operation
// that uses them (the pool plans a chunk of ops, and prefetches their lines, before it runs them), so
// the operation does not hash the key again. Valid until that table is replaced (a growth, another
// seed): the operations that take one check its generation and hash again if it is stale.
struct BucketPlace {
  // Never a table's generation: the operation hashes the key itself.
  static constexpr uint32_t kNone = 1;
  uint32_t first;
  uint32_t second;
  uint32_t generation;
};

template <typename V>
class BucketMap {
  static_assert((sizeof(V) == 4 || sizeof(V) == 8) && std::is_trivially_copyable<V>::value,
                "a BucketMap value is 4 or 8 plain bytes");
  // Room in the line for a used mask and an overflow count (5 x 12 bytes + 4).
  static constexpr bool kCounted = sizeof(V) == 4;

 public:
  static constexpr int kSlots = kCounted ? 5 : 4;
  // Past this many buckets a table is mapped memory, and a map's growths are staggered (growthPhase).
  static constexpr size_t kStaggerBuckets = 1024;
  // Old buckets drained per insertion and per erase. Growth from the top of the band to 0.66 leaves
  // room for 0.19 of the new slots before the next growth, and 2 per insertion do (StartMigration
  // sizes the table so that the drain always ends in time). Each step moves up to kSlots entries to
  // random lines, so while a table drains its insertions cost several times the others: with 4, a
  // 1-source pool filling at 1 M blocks/s applied slower than its engines published for ~100-300 ms
  // at each growth, and the deltas of those stretches waited 20-80 ms (event->delta p99 31-81 ms,
  // bench/delta-latency); with 2, 8-20 ms, at the same ingest rate (bench/ingest-scale) and the same
  // memory at rest. The price: tables drain for twice as long, so more of them hold both tables at
  // once (the peak over a 10 M-block fill over 64 sources rose from 60 to 63.5 B per block RSS).
  // Measured 2026-12-05 (BENCHMARKS.md); 4 had been chosen before the growth step was x1.29, when
  // it also filled faster than 2.
  static constexpr size_t kDrainSteps = 2;
  // Cuckoo path length bound: in this load band a path averages under two moves (bench/filter).
  static constexpr int kMaxPath = 32;
  // The most entries one Emplace or erase moves (drain steps with their cuckoo paths, then the key's
  // own path); only the fallbacks above move more. Typical operations move none or a few.
  static constexpr uint64_t kMaxMovesPerOp = kDrainSteps * kSlots * (kMaxPath + 1) + kMaxPath;

  // The public part of a fresh table's seed; the process secret (core/process_secret.h) is mixed in.
  static constexpr uint64_t kInitialSeed = 0x2545F4914F6CDD1DULL;

  BucketMap() : BucketMap(0) {}
  // Maps given different growth phases (any numbers; consecutive ones spread best) grow at different
  // sizes once past kStaggerBuckets. The pool's lineage tables fill in step when their sources
  // publish alike, and without it they all grew, and drained, within the same few insertions: 8 or 64
  // drains at once made a pool's apply slower than its engines published (BENCHMARKS.md, 2026-12-05).
  explicit BucketMap(uint64_t growthPhase)
      : table_(kMinBuckets, kInitialSeed ^ ProcessSecret()), stagger_(StaggerOf(growthPhase)) {}
  // A map whose first table already holds `reserved` keys in the load band (an operator-stated
  // capacity, limits.reservePoolBlocks): filling it to there takes no growth, no drain and no move to
  // a successor, which were two thirds of a growing pool's apply time (BENCHMARKS.md "Growth against
  // no growth"). The table is mapped lazily and its pages are faulted in on the populating thread, as
  // a growth's successor's are, so constructing it costs the caller an mmap, not the zeroing. Past
  // `reserved` the map grows as any other. Throws std::bad_alloc.
  BucketMap(uint64_t growthPhase, size_t reserved) : BucketMap(growthPhase) {
    if (reserved == 0) return;
    Table reservedTable(CapacityFor(reserved), table_.seed);
    reservedTable.buckets.PopulateInBackground();
    reservedTable.buckets.Use();  // written from the first key on, while its pages come in
    table_ = std::move(reservedTable);
    NextGeneration();
    SetLimits();
  }

  size_t size() const { return Entries() + (hasZero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // The table keys go to has no page left for the populating thread to fault in (or none asked).
  bool Populated() const { return table_.buckets.Populated(); }
  // Bytes of the buckets and stashes the map holds (its heap footprint apart from the object itself):
  // both tables while a drain runs, less the old table's pages already given back.
  size_t MemoryBytes() const { return table_.HeldBytes() + old_.HeldBytes() + next_.HeldBytes(); }

  __attribute__((always_inline)) BucketPlace PlaceOf(uint64_t key) const { return PlaceFor(table_.HomesOf(key)); }

  __attribute__((always_inline)) V* Find(uint64_t key) {
    if (key == 0) return hasZero_ ? &zeroValue_ : nullptr;
    return FindAt(key, table_.HomesOf(key));
  }
  const V* Find(uint64_t key) const { return const_cast<BucketMap*>(this)->Find(key); }
  __attribute__((always_inline)) V* Find(uint64_t key, const BucketPlace& place) {
    if (key == 0) return hasZero_ ? &zeroValue_ : nullptr;
    return FindAt(key, HomesAt(key, place));
  }
  const V* Find(uint64_t key, const BucketPlace& place) const { return const_cast<BucketMap*>(this)->Find(key, place); }

  // Makes room for `extra` more keys, so that the next `extra` Emplace calls allocate no table (they
  // may still move entries, start draining into a table prepared here, and rebuild under another seed
  // when the stash fills). During a drain that leaves less room than `extra`, finishes the drain first
  // (at most kDrainSteps old buckets per reserved key). Throws std::bad_alloc.
  void Reserve(size_t extra) {
    if (Fits(Entries() + extra)) return;
    const uint64_t before = moved_;
    if (Migrating()) {
      ++finishes_;
      FinishMigration();
    }
    if (!Pending() || MaxEntries(next_.buckets.size()) < Entries() + extra) Prepare(CapacityFor(Entries() + extra));
    NoteMoves(before);
  }

  // Inserts key -> value if absent. Returns the value slot and whether it was inserted; the slot is
  // null only when a needed table could not be allocated (the map then holds what it held).
  __attribute__((always_inline)) std::pair<V*, bool> Emplace(uint64_t key, const V& value) {
    if (key == 0) return EmplaceZero(value);
    return EmplaceAt(key, value, table_.HomesOf(key));
  }
  __attribute__((always_inline)) std::pair<V*, bool> Emplace(uint64_t key, const V& value, const BucketPlace& place) {
    if (key == 0) return EmplaceZero(value);
    return EmplaceAt(key, value, HomesAt(key, place));
  }

  // Erases the entry whose value Find or Emplace just returned; `place`, if given, is its key's.
  __attribute__((always_inline)) void EraseFound(const V* value, const BucketPlace* place = nullptr) {
    if (value == &zeroValue_) {
      hasZero_ = false;
    } else if (!Migrating()) {
      table_.EraseAt(value, 0, [&](uint64_t key) { return place != nullptr ? HomesAt(key, *place) : table_.HomesOf(key); });
      if (table_.size < dropLimit_) DropPrepared();  // back in the band: no growth soon
    } else {
      EraseMigrating(value);
    }
  }


  // Drains the old table now (time proportional to what is left of it). Internally the fallback of
  // Reserve and of a growth after a failed allocation. Throws std::bad_alloc (the drain stops where it
  // was).
  void FinishMigration() {
    while (Migrating()) {
      if (!Drain(kSlots)) throw std::bad_alloc();
    }
  }
  // For benches that measure a table at rest: no drain and no prepared successor.
  void Settle() {
    FinishMigration();
    DropPrepared();
  }

  // How the entries got placed and moved, for tests and benches: every counter moves on a slow path.
  struct Shape {
    size_t buckets;     // of the table new keys go to
    size_t oldBuckets;  // of the table being drained; 0: none
    size_t stashed;     // entries in the stashes now
    uint64_t secondBucket;  // placements into a key's second bucket
    uint64_t paths;         // placements that moved other entries along a cuckoo path
    uint64_t pathMoves;     // entries those paths moved
    uint64_t growths;       // migrations to a bigger table
    uint64_t prepared;      // successors prepared (see Prepare)
    uint64_t reseeds;       // migrations under another seed (a stash at its limit)
    uint64_t migrated;      // entries the drains moved
    uint64_t finishes;      // drains finished synchronously (Reserve past the room a drain leaves)
    uint64_t rebuilds;      // synchronous rebuilds (a full stash during a drain)
    uint64_t maxOpMoves;    // the most entries one Emplace, erase or Reserve moved
  };
  Shape GetShape() const {
    return Shape{table_.buckets.size(), old_.buckets.size(), table_.stash.size() + old_.stash.size(),
                 secondBucket_, paths_, pathMoves_, growths_, prepared_, reseeds_, migrated_, finishes_, rebuilds_,
                 maxOpMoves_};
  }

  // For tests: which table holds the key (key != 0): 0 neither, 1 the one new keys go to, 2 the one
  // being drained.
  int Holder(uint64_t key) const {
    Table* t = const_cast<Table*>(&table_);
    if (FindIn(t, key, table_.HomesOf(key), 0) != nullptr) return 1;
    if (!Migrating()) return 0;
    return FindIn(const_cast<Table*>(&old_), key, old_.HomesOf(key), cursor_) != nullptr ? 2 : 0;
  }

  // For tests: the key's two candidate buckets in the table new keys go to (key != 0).
  std::pair<size_t, size_t> Candidates(uint64_t key) const {
    const Homes h = table_.HomesOf(key);
    return {h.first, h.second};
  }

  // For tests and fuzzing: null when the structure is consistent, else what is wrong. Every bucketed
  // key sits in one of its candidate buckets of its table (the old table's from the cursor on), the
  // used masks match the keys, each overflow count matches the keys living in their second bucket (or
  // stays saturated; in the old table at least matches), no key is in both tables, size() counts
  // every entry, and a drain in progress ends before its table would grow.
  const char* Invariant() const {
    if (const char* broken = TableInvariant(table_, 0, false)) return broken;
    if (next_.size != 0 || !next_.stash.empty()) return "entries in a prepared table";
    if (Pending() && Migrating()) return "a table prepared during a drain";
    if (!Fits(Entries()) && (Migrating() || !Pending() || Entries() > WaitEntries(table_.buckets.size()))) {
      return "entries past the load bound";
    }
    if (!Migrating()) return old_.size == 0 && old_.stash.empty() ? nullptr : "entries in a table not draining";
    if (const char* broken = TableInvariant(old_, cursor_, true)) return broken;
    if (old_.size == 0) return "a drained table kept";
    bool both = false;
    ForEachIn(old_, cursor_, [&](uint64_t key, const V&) {
      if (FindIn(const_cast<Table*>(&table_), key, table_.HomesOf(key), 0) != nullptr) both = true;
    });
    if (both) return "a key in both tables";
    if (DrainStepsLeft() > kDrainSteps * (MaxEntries(table_.buckets.size()) - Entries())) {
      return "the drain would not end before the table grows";
    }
    return nullptr;
  }

  template <typename F>
  void ForEach(F f) const {
    if (hasZero_) f(uint64_t{0}, zeroValue_);
    ForEachIn(table_, 0, f);
    if (Migrating()) ForEachIn(old_, cursor_, f);
  }

  // Both candidate buckets: an insertion reads both (placement compares their free slots), and a
  // lookup reads the second whenever the first's overflow count is non-zero, or always with 8-byte
  // values (prefetching only the first line cost ~40 % of the raw canonical rate); during a drain also
  // the old table's lines not drained yet. Into L2 (prefetcht2): callers issue hundreds at once, and
  // L1-targeted prefetches stall on the few L1 miss buffers while L2-targeted ones keep ~2x more misses
  // in flight (measured).
  // always_inline: GCC marks a prefetch-only function const and drops the call as dead.
  // Returns the key's place.
  __attribute__((always_inline)) BucketPlace Prefetch(uint64_t key) const {
    const Homes h = table_.HomesOf(key);
    __builtin_prefetch(&table_.buckets[h.first], 0, 1);
    __builtin_prefetch(&table_.buckets[h.second], 0, 1);
    if (__builtin_expect(Migrating(), 0)) {
      const Homes o = old_.HomesOf(key);
      if (o.first >= cursor_) __builtin_prefetch(&old_.buckets[o.first], 0, 1);
      if (o.second >= cursor_) __builtin_prefetch(&old_.buckets[o.second], 0, 1);
    }
    return PlaceFor(h);
  }

 private:
  static constexpr unsigned kFull = (1u << kSlots) - 1;
  // Used slots of a bucket by its used mask (no popcnt instruction in the baseline x86-64 build).
  static constexpr uint8_t kUsedSlots[32] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                             1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5};
  struct alignas(64) CountedBucket {
    uint64_t keys[5];  // 0: empty (key 0 itself lives in zeroValue_)
    V values[5];
    // Keys whose first bucket is this one that live in their second bucket. Saturates: at the top it
    // stays there until the table is replaced (lookups then always read the second line).
    uint8_t overflow;
    uint8_t used;  // bit s: slot s holds a key
    uint8_t unused[2];
  };
  struct alignas(64) PlainBucket {
    uint64_t keys[4];  // 0: empty
    V values[4];
  };
  using Bucket = std::conditional_t<kCounted, CountedBucket, PlainBucket>;
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");
  struct Entry {
    uint64_t key;
    V value;
  };
  struct Homes {
    size_t first;
    size_t second;
  };

  // Grow when an insertion would pass kMaxLoad, to kGrowToLoad (x1.29).
  static constexpr size_t kMaxLoadPer1024 = 870;     // 0.85
  static constexpr size_t kGrowToLoadPer1024 = 676;  // 0.66
  // A table prepares its successor at kPrepareLoad, so that the successor's pages are in by kMaxLoad
  // (ZeroedBuffer::PopulateInBackground), and drops it again below kDropLoad. The lead is 0.02 of the
  // slots: on a machine that zeroes memory at GB/s that is far more than the population takes at any
  // ingest rate; on the project's VM, whose host backs fresh pages at ~0.5 GB/s, not always: the
  // table then waits for them up to kWaitLoad (past it the pages not reached yet fault in on use).
  static constexpr size_t kPrepareLoadPer1024 = 850;  // 0.83
  static constexpr size_t kDropLoadPer1024 = 819;     // 0.80
  // How far past kMaxLoad a table takes keys while its successor's pages come in (WaitsForSuccessor).
  // A successor sized from kMaxLoad still holds a drain from here (StartMigration's room), and the
  // cuckoo paths, longer up here, are cheaper than the page faults they spare.
  static constexpr size_t kWaitLoadPer1024 = 942;  // 0.92
  static constexpr size_t kMinBuckets = 4;
  // Stash room of a fresh table: at least this, and twice what a rebuild left there, so keys a seed
  // cannot place (crafted, or very unlucky) cost a rebuild only after the stash doubled.
  static constexpr size_t kMinStash = 8;
  // How far ahead of the drain an old bucket's keys have their new lines asked for (Plan): one bucket
  // ahead left most of the moves waiting for memory; with 4 drain steps, 3 filled 6 M blocks of 1 source
  // in 1.72-1.76 s instead of 2.05-2.18 (bench/pool-memory's fill), 7 no faster.
  static constexpr size_t kPlanAhead = 3;
  static constexpr size_t kPlanRing = kPlanAhead + 1;
  // Drained buckets per ReleaseFront call: a huge page of them (what it gives back at a time).
  static constexpr size_t kReleaseBuckets = pages::kHugePage / 64;

  // A growth's step, less one, in 1/1024: from kMaxLoad down to kGrowToLoad (x1.29).
  static constexpr size_t kGrowthStepPer1024 = kMaxLoadPer1024 * 1024 / kGrowToLoadPer1024 - 1024;
  // A growth phase's fraction of a growth step (0 for phase 0), in 1/1024: the golden ratio's
  // multiples, so that any run of consecutive phases spreads evenly.
  static size_t StaggerOf(uint64_t phase) {
    const uint64_t fraction = (phase * 0x9E3779B97F4A7C15ULL) >> 32;  // of 2^32
    return static_cast<size_t>((fraction * kGrowthStepPer1024) >> 32);
  }
  size_t CapacityFor(size_t entries) const {
    size_t buckets = entries * 1024 / (kGrowToLoadPer1024 * kSlots) + 1;
    // Once, at the growth past kStaggerBuckets: every later growth sizes from the entries the table
    // then holds, so the later tables keep the offset, and their loads stay in the band.
    if (table_.buckets.size() < kStaggerBuckets && buckets >= kStaggerBuckets) buckets += buckets * stagger_ / 1024;
    return buckets < kMinBuckets ? kMinBuckets : buckets;
  }
  static size_t MaxEntries(size_t buckets) { return buckets * kSlots * kMaxLoadPer1024 / 1024; }
  static size_t PrepareEntries(size_t buckets) { return buckets * kSlots * kPrepareLoadPer1024 / 1024; }
  static size_t WaitEntries(size_t buckets) { return buckets * kSlots * kWaitLoadPer1024 / 1024; }
  bool Fits(size_t entries) const { return entries <= MaxEntries(table_.buckets.size()); }
  size_t Entries() const { return table_.size + old_.size; }
  bool Migrating() const { return old_.buckets.size() != 0; }
  bool Pending() const { return next_.buckets.size() != 0; }

  static unsigned UsedMask(const Bucket& b) {
    if constexpr (kCounted) {
      return b.used;
    } else {
      return unsigned{b.keys[0] != 0} | unsigned{b.keys[1] != 0} << 1 | unsigned{b.keys[2] != 0} << 2 |
             unsigned{b.keys[3] != 0} << 3;
    }
  }
  // Bit s: slot s holds `key` (not 0). SSE2 is in every x86-64 (no -march needed): two 32-bit
  // compares make a 64-bit one.
  __attribute__((always_inline)) static unsigned MatchMask(const Bucket& b, uint64_t key) {
#if defined(__SSE2__)
    const __m128i k = _mm_set1_epi64x(static_cast<long long>(key));
    __m128i low = _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b.keys)), k);
    __m128i high = _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b.keys + 2)), k);
    low = _mm_and_si128(low, _mm_shuffle_epi32(low, _MM_SHUFFLE(2, 3, 0, 1)));
    high = _mm_and_si128(high, _mm_shuffle_epi32(high, _MM_SHUFFLE(2, 3, 0, 1)));
    unsigned mask = static_cast<unsigned>(_mm_movemask_pd(_mm_castsi128_pd(low))) |
                    static_cast<unsigned>(_mm_movemask_pd(_mm_castsi128_pd(high))) << 2;
    if constexpr (kSlots == 5) mask |= unsigned{b.keys[4] == key} << 4;
    return mask;
#else
    unsigned mask = 0;
    for (int s = 0; s < kSlots; ++s) mask |= unsigned{b.keys[s] == key} << s;
    return mask;
#endif
  }
  // With 8-byte values a bucket keeps its keys packed (slots [0, used) hold keys, the rest are 0), so
  // two key tests find how many slots are used and the first free one: counting zero keys took ~16
  // instructions per line, and an insertion reads two.
  static int UsedSlots(const Bucket& b) {
    if constexpr (kCounted) {
      return kUsedSlots[b.used];
    } else {
      if (b.keys[1] != 0) return b.keys[3] != 0 ? 4 : b.keys[2] != 0 ? 3 : 2;
      return b.keys[0] != 0 ? 1 : 0;
    }
  }
  static int FreeSlots(const Bucket& b) { return kSlots - UsedSlots(b); }
  // -1: full.
  static int FirstFree(const Bucket& b) {
    if constexpr (kCounted) {
      return b.used == kFull ? -1 : __builtin_ctz(~unsigned{b.used});
    } else {
      const int used = UsedSlots(b);
      return used == kSlots ? -1 : used;
    }
  }

  // The buckets and stash under one seed and size. A migration keeps two: the one new keys go to and
  // the one being drained into it.
  struct Table {
    ZeroedBuffer<Bucket> buckets;
    std::vector<Entry> stash;
    size_t stashLimit = kMinStash;
    size_t size = 0;  // entries in buckets and stash
    uint64_t seed = 0;
    uint64_t walk = 0;  // picks cuckoo-path victims

    Table() = default;
    // At most 2^32 buckets (256 GiB), so that places hold 32-bit indices.
    Table(size_t bucketCount, uint64_t s) : buckets(CheckedCount(bucketCount)), seed(s), walk(s) {
      stash.reserve(stashLimit);
    }
    static size_t CheckedCount(size_t bucketCount) {
      if (bucketCount > UINT32_MAX) throw std::bad_alloc();
      return bucketCount;
    }

    size_t HeldBytes() const { return buckets.HeldBytes() + stash.capacity() * sizeof(Entry); }

    // A multiply, then two multiply-high range reductions (any bucket count): the first bucket is the
    // high half of m * n, the second the same reduction of its low half, which is uniform and
    // independent of the first (over the m that share a first bucket, m * n mod 2^64 steps through
    // every value once). The second differs from the first. Measured against a second product of m
    // (m * c, reduced the same way): ~30 % fewer cuckoo paths in the load band and 4 instructions less
    // per lookup.
    Homes HomesOf(uint64_t key) const {
      const uint64_t n = buckets.size();
      // Keyed: the seed holds the process secret (a public seed let ~17 crafted ids fill a bucket
      // pair and the stash, each batch a synchronous rebuild, issue 26 item 3), and the finalizer
      // makes every bucket bit depend on every key bit, so no choice of key differences carries
      // through the multiply to a known place.
      const uint64_t m = Fmix64(key ^ seed);
      const unsigned __int128 scaled = static_cast<unsigned __int128>(m) * n;
      const size_t first = static_cast<size_t>(scaled >> 64);
      size_t second = static_cast<size_t>((static_cast<unsigned __int128>(static_cast<uint64_t>(scaled)) * n) >> 64);
      if (second == first) second = first + 1 == n ? 0 : first + 1;
      return Homes{first, second};
    }

    V* Put(size_t bucket, int slot, uint64_t key, const V& value) {
      Bucket& b = buckets[bucket];
      if constexpr (kCounted) b.used = static_cast<uint8_t>(b.used | (1u << slot));
      b.keys[slot] = key;
      b.values[slot] = value;
      return &b.values[slot];
    }
    // Empties a slot; with 8-byte values the bucket's last key moves into it (same bucket: its
    // candidates hold).
    __attribute__((always_inline)) void Clear(size_t bucket, int slot) {
      Bucket& b = buckets[bucket];
      if constexpr (kCounted) {
        b.keys[slot] = 0;
        b.used = static_cast<uint8_t>(b.used & ~(1u << slot));
      } else {
        const int last = UsedSlots(b) - 1;
        b.keys[slot] = b.keys[last];
        b.values[slot] = b.values[last];
        b.keys[last] = 0;
      }
    }
    // A key (its homes h) arrives in or leaves bucket b: keeps its first bucket's overflow count. A
    // drained first bucket (below `from`) is no longer counted: its page may be gone.
    void Arrived(const Homes& h, size_t b) {
      if constexpr (kCounted) {
        uint8_t& overflow = buckets[h.first].overflow;
        if (b == h.second && overflow != 0xFF) ++overflow;
      }
    }
    // Left selects rather than branches: which of its buckets an erased key leaves is a coin flip, and
    // the branch mispredicted ~0.4 times per erase (callgrind --branch-sim). b is one of h, so the
    // line written is one the erase reads anyway.
    void Left(const Homes& h, size_t b, size_t from) {
      if constexpr (kCounted) {
        if (h.first < from) return;
        uint8_t& overflow = buckets[h.first].overflow;
        overflow = static_cast<uint8_t>(overflow - ((b == h.second) & (overflow != 0xFF)));
      }
    }

    bool Holds(const V* value) const {
      const char* p = reinterpret_cast<const char*>(value);
      const char* base = reinterpret_cast<const char*>(buckets.data());
      if (p >= base && p < base + buckets.size() * sizeof(Bucket)) return true;
      const char* stashBase = reinterpret_cast<const char*>(stash.data());
      return p >= stashBase && p < stashBase + stash.size() * sizeof(Entry);
    }
    // Buckets below `from` are drained.
    __attribute__((always_inline)) void EraseAt(const V* value, size_t from) {
      EraseAt(value, from, [this](uint64_t key) { return HomesOf(key); });
    }
    // homesOf(key): the homes of the key erased (only 4-byte values keep overflow counts).
    template <typename HomesFn>
    __attribute__((always_inline)) void EraseAt(const V* value, size_t from, HomesFn&& homesOf) {
      const char* p = reinterpret_cast<const char*>(value);
      const char* base = reinterpret_cast<const char*>(buckets.data());
      // The stash is almost always empty: then the value is in a bucket, no bounds to compare.
      if (stash.empty() || (p >= base && p < base + buckets.size() * sizeof(Bucket))) {
        const size_t offset = static_cast<size_t>(p - base);
        const size_t bucket = offset / sizeof(Bucket);
        const int slot = static_cast<int>((offset % sizeof(Bucket) - offsetof(Bucket, values)) / sizeof(V));
        if constexpr (kCounted) Left(homesOf(buckets[bucket].keys[slot]), bucket, from);
        Clear(bucket, slot);
      } else {
        const Entry* e = reinterpret_cast<const Entry*>(p - offsetof(Entry, value));
        stash[static_cast<size_t>(e - stash.data())] = stash.back();
        stash.pop_back();
      }
      --size;
    }
  };

  struct Step {
    size_t bucket;
    int slot;
  };

  // Buckets of t below `from` are drained and never read (their pages may have been given back), so
  // their overflow counts do not say whether a key lives in its second bucket.
  __attribute__((always_inline)) static V* FindIn(Table* t, uint64_t key, const Homes& h, size_t from) {
    bool spill = true;
    if (h.first >= from) {
      Bucket& first = t->buckets[h.first];
      for (int s = 0; s < kSlots; ++s) {
        if (first.keys[s] == key) return &first.values[s];
      }
      if constexpr (kCounted) spill = first.overflow != 0;
    }
    if (spill && h.second >= from) {
      Bucket& second = t->buckets[h.second];
      for (int s = 0; s < kSlots; ++s) {
        if (second.keys[s] == key) return &second.values[s];
      }
    }
    for (Entry& e : t->stash) {
      if (e.key == key) return &e.value;
    }
    return nullptr;
  }

  __attribute__((always_inline)) std::pair<V*, bool> EmplaceZero(const V& value) {
    if (hasZero_) return {&zeroValue_, false};
    hasZero_ = true;
    zeroValue_ = value;
    return {&zeroValue_, true};
  }
  // Find's lookup in the owner table (4-byte values). There Find mostly looks for keys that are
  // present (releases of owners), and which line and slot hold one is a coin flip per key: both lines
  // are compared whole and the slot selected, where the compare chains and the overflow test
  // mispredicted ~0.6 times per raw canonical op (callgrind --branch-sim: 2.04 -> 1.46 per op, for
  // ~20 instructions more per op; raw canonical ops ~10 % faster in wall clock, engine events the
  // same). Lineage tables keep FindIn: there it was slower. Insertions keep FindIn too: their keys
  // are mostly absent, and its chains then predict well.
  __attribute__((always_inline)) static V* FindSelected(Table* t, uint64_t key, const Homes& h) {
    const unsigned slots = MatchMask(t->buckets[h.first], key) | MatchMask(t->buckets[h.second], key) << 8;
    if (slots == 0) {
      for (Entry& e : t->stash) {
        if (e.key == key) return &e.value;
      }
      return nullptr;
    }
    const unsigned s = static_cast<unsigned>(__builtin_ctz(slots));
    const size_t bucket = h.first ^ ((h.first ^ h.second) & (size_t{0} - (s >> 3)));
    return &t->buckets[bucket].values[s & 7];
  }
  __attribute__((always_inline)) V* FindAt(uint64_t key, const Homes& h) {
    V* found = kCounted ? FindSelected(&table_, key, h) : FindIn(&table_, key, h, 0);
    if (found != nullptr || !Migrating()) return found;
    return FindIn(&old_, key, old_.HomesOf(key), cursor_);
  }
  __attribute__((always_inline)) std::pair<V*, bool> EmplaceAt(uint64_t key, const V& value, const Homes& h) {
    V* found = FindIn(&table_, key, h, 0);
    if (found != nullptr) return {found, false};
    if (table_.size < fastLimit_) {
      V* placed = PlaceInCandidate(&table_, key, value, h);
      if (placed != nullptr) return {placed, true};
    }
    return EmplaceSlow(key, value, h);
  }

  // An absent key: into the candidate bucket with more free slots (the first on a tie). null: both full.
  __attribute__((always_inline)) V* PlaceInCandidate(Table* t, uint64_t key, const V& value, const Homes& h) {
    const Bucket& a = t->buckets[h.first];
    const Bucket& b = t->buckets[h.second];
    const int freeA = FreeSlots(a);
    const int freeB = FreeSlots(b);
    if (freeA > 0 && freeA >= freeB) {
      ++t->size;
      return t->Put(h.first, FirstFree(a), key, value);
    }
    if (freeB > 0) {
      ++t->size;
      ++secondBucket_;
      t->Arrived(h, h.second);
      return t->Put(h.second, FirstFree(b), key, value);
    }
    return nullptr;
  }
  // Else along a cuckoo path, else into the stash. null: no path and the stash at its limit (nothing
  // changed).
  V* Place(Table* t, uint64_t key, const V& value, const Homes& h) {
    V* placed = PlaceInCandidate(t, key, value, h);
    if (placed == nullptr) placed = PlaceByMove(t, key, value, h);
    if (placed == nullptr) placed = PlaceByPath(t, key, value, h);
    if (placed != nullptr || t->stash.size() >= t->stashLimit) return placed;
    ++t->size;
    t->stash.push_back(Entry{key, value});
    return &t->stash.back().value;
  }

  __attribute__((noinline)) void EraseMigrating(const V* value) {
    if (table_.Holds(value)) {
      table_.EraseAt(value, 0);
    } else {
      old_.EraseAt(value, cursor_);
      if (old_.size == 0) EndMigration();
    }
    const uint64_t before = moved_;
    Drain(kDrainSteps);
    NoteMoves(before);
  }

  // Moves to a bigger table (the prepared successor if it is big enough) and drains this insertion's
  // share into it. Throws std::bad_alloc.
  void Grow() {
    // Mid-drain only after a failed allocation left the drain behind (see Invariant).
    if (Migrating()) {
      ++finishes_;
      FinishMigration();
    }
    if (!Pending() || MaxEntries(next_.buckets.size()) < Entries() + 1) Prepare(CapacityFor(Entries() + 1));
    Switch();
    Drain(kDrainSteps);  // this insertion's share too: StartMigration's sizing counts on it
  }
  // Past kMaxLoad, the table keeps taking keys (up to kWaitLoad) while its prepared successor's pages
  // are still coming in: switching then had this thread fault in (zero) the rest of them, since a
  // fresh table's random insertions touch every page within a few thousand keys. On the project's VM
  // (~1.5 ms per MiB) a 1-source pool growing at 1 M blocks/s stalled 30-60 ms at a time for it.
  bool WaitsForSuccessor(size_t entries) const {
    return !Migrating() && Pending() && entries <= WaitEntries(table_.buckets.size()) && !next_.buckets.Populated();
  }

  // Emplace of an absent key past the fast path: both candidates full, or a drain to advance, or the
  // table at its load bound.
  __attribute__((noinline)) std::pair<V*, bool> EmplaceSlow(uint64_t key, const V& value, Homes h) {
    if (Migrating()) {
      V* found = FindIn(&old_, key, old_.HomesOf(key), cursor_);
      if (found != nullptr) return {found, false};
    }
    const uint64_t before = moved_;
    try {
      // The drain moves entries of the old table only into this one, and the key is in neither.
      if (Migrating()) Drain(kDrainSteps);
      if (!Migrating() && !Pending() && Entries() + 1 > PrepareEntries(table_.buckets.size())) {
        try {
          Prepare(CapacityFor(MaxEntries(table_.buckets.size()) + 1));
        } catch (const std::bad_alloc&) {
          // The growth itself tries again.
        }
      }
      const bool full = !Fits(Entries() + 1);
      const bool waiting = full && WaitsForSuccessor(Entries() + 1);
      if (full && !waiting) {
        Grow();
        h = table_.HomesOf(key);
      }
      V* placed = Place(&table_, key, value, h);
      if (placed == nullptr && waiting) {
        // Past kMaxLoad the paths are long, and this key found none: the successor now.
        Grow();
        placed = Place(&table_, key, value, table_.HomesOf(key));
      }
      if (placed == nullptr) {
        // Neither a cuckoo path nor stash room (the load fits, so the keys are unlucky or crafted under
        // this seed): another seed. A fresh table, or a rebuilt one (its stash at most half full), has
        // a place for the key.
        Reseed();
        Drain(kDrainSteps);
        placed = Place(&table_, key, value, table_.HomesOf(key));
      }
      NoteMoves(before);
      return {placed, true};
    } catch (const std::bad_alloc&) {
      NoteMoves(before);
      return {nullptr, false};
    }
  }

  // Both candidate buckets full: one of their 2 * kSlots keys can almost always move to its other
  // bucket (a path of one move). Those buckets are all asked for before any is read, so the search
  // costs about one memory latency, where each step of a random walk costs one (a walk averaged ~1.7
  // steps in the load band, and its misses were a large part of an insertion's time). The first key
  // (first bucket, lowest slot) whose other bucket has room moves there; the new key takes its slot
  // (with 8-byte values the slot stays used and the victim goes to the end of its other bucket: both
  // stay packed). Both layouts: for the lineage tables at a steady size it halved the entries moved
  // (the walks' 1.9 moves per path) and cut ~15 % off an erase-plus-insert (BENCHMARKS.md "2026-12-05").
  // null: none has room (then the random walk).
  V* PlaceByMove(Table* t, uint64_t key, const V& value, const Homes& h) {
    size_t other[2 * kSlots];
    Homes victims[2 * kSlots];
    for (int c = 0; c < 2; ++c) {
      const size_t bucket = c == 0 ? h.first : h.second;
      for (int s = 0; s < kSlots; ++s) {
        const Homes vh = t->HomesOf(t->buckets[bucket].keys[s]);
        victims[c * kSlots + s] = vh;
        other[c * kSlots + s] = bucket == vh.first ? vh.second : vh.first;
        __builtin_prefetch(&t->buckets[other[c * kSlots + s]], 1, 1);
      }
    }
    for (int i = 0; i < 2 * kSlots; ++i) {
      const int free = FirstFree(t->buckets[other[i]]);
      if (free < 0) continue;
      const size_t from = i < kSlots ? h.first : h.second;
      const int slot = i % kSlots;
      Bucket& b = t->buckets[from];
      t->Put(other[i], free, b.keys[slot], b.values[slot]);
      t->Left(victims[i], from, 0);
      t->Arrived(victims[i], other[i]);
      ++t->size;
      ++paths_;
      ++pathMoves_;
      ++moved_;
      t->Arrived(h, from);
      return t->Put(from, slot, key, value);
    }
    return nullptr;
  }

  // Random-walk cuckoo path from one of the key's full buckets to a free slot, found without moving
  // anything (so a failed search changes nothing), then executed from the free end backwards.
  V* PlaceByPath(Table* t, uint64_t key, const V& value, const Homes& h) {
    Step path[kMaxPath];
    size_t bucket = (ckf::SplitmixNext(&t->walk) & 1) != 0 ? h.first : h.second;
    for (int len = 0; len < kMaxPath; ++len) {
      const uint64_t r = ckf::SplitmixNext(&t->walk);
      int slot = static_cast<int>(r % kSlots);
      // A slot already on the path would be moved twice: take the next one that is not.
      for (int tries = 0; tries < kSlots && OnPath(path, len, bucket, slot); ++tries) slot = (slot + 1) % kSlots;
      if (OnPath(path, len, bucket, slot)) return nullptr;
      path[len] = Step{bucket, slot};
      const uint64_t victim = t->buckets[bucket].keys[slot];
      const Homes vh = t->HomesOf(victim);
      const size_t next = bucket == vh.first ? vh.second : vh.first;
      const int free = FirstFree(t->buckets[next]);
      if (free < 0) {
        bucket = next;
        continue;
      }
      // Execute: each victim moves one step on, last first, then the key takes the path's start.
      size_t to = next;
      int toSlot = free;
      for (int i = len; i >= 0; --i) {
        Bucket& from = t->buckets[path[i].bucket];
        const uint64_t k = from.keys[path[i].slot];
        const Homes kh = t->HomesOf(k);
        t->Put(to, toSlot, k, from.values[path[i].slot]);
        t->Left(kh, path[i].bucket, 0);
        t->Arrived(kh, to);
        to = path[i].bucket;
        toSlot = path[i].slot;
      }
      ++t->size;
      ++paths_;
      pathMoves_ += static_cast<uint64_t>(len) + 1;
      moved_ += static_cast<uint64_t>(len) + 1;
      t->Arrived(h, to);
      return t->Put(to, toSlot, key, value);
    }
    return nullptr;
  }
  static bool OnPath(const Step* path, int len, size_t bucket, int slot) {
    for (int i = 0; i < len; ++i) {
      if (path[i].bucket == bucket && path[i].slot == slot) return true;
    }
    return false;
  }

  // An entry moving into table t from an older table or a rebuild: never refused, a full stash doubles
  // its limit for it (as a rebuild used to leave the limit at twice what it stashed). Throws
  // std::bad_alloc (t unchanged).
  void Move(Table* t, uint64_t key, const V& value, const Homes& h) {
    if (Place(t, key, value, h) == nullptr) {
      t->stash.reserve(2 * t->stashLimit);
      t->stashLimit *= 2;
      Place(t, key, value, h);
    }
  }

  // Old buckets (then stash entries, kSlots to a step) left to drain.
  size_t DrainStepsLeft() const {
    return old_.buckets.size() - cursor_ + (old_.stash.size() + kSlots - 1) / kSlots;
  }

  // Moves the entries of the next `steps` old buckets, then of the old stash, into the table; ends the
  // migration when the old table is empty. Drained slots are left as they are (nothing reads below
  // the cursor), and the old overflow counts are not lowered for them: there they are upper bounds,
  // which only costs a lookup a second line. false: an allocation failed (the entry stays where it
  // was).
  bool Drain(size_t steps) {
    for (; steps > 0 && Migrating(); --steps) {
      size_t moved = 0;
      int s = 0;
      try {
        if (cursor_ < old_.buckets.size()) {
          const Bucket& b = old_.buckets[cursor_];
          // The next bucket's entries go to random lines of the new table: ask for them now, and keep
          // their candidates for when it drains (a drain step that computed them twice cost ~15 %
          // of the instructions of a growing pool).
          if (cursor_ + kPlanAhead < old_.buckets.size()) Plan(cursor_ + kPlanAhead);
          const Planned* planned = planned_[cursor_ % kPlanRing];
          const bool valid = plannedFor_[cursor_ % kPlanRing] == cursor_;
          for (; s < kSlots; ++s) {
            const uint64_t key = b.keys[s];
            if (key == 0) continue;
            const bool known = valid && planned[s].key == key;
            Move(&table_, key, b.values[s], known ? planned[s].homes : table_.HomesOf(key));
            --old_.size;
            ++moved;
          }
          ++cursor_;
          if (cursor_ % kReleaseBuckets == 0) old_.buckets.ReleaseFront(cursor_);
        } else {
          for (; s < kSlots && !old_.stash.empty(); ++s) {
            const Entry e = old_.stash.back();
            Move(&table_, e.key, e.value, table_.HomesOf(e.key));
            old_.stash.pop_back();
            --old_.size;
            ++moved;
          }
        }
      } catch (const std::bad_alloc&) {
        // The bucket's entries moved so far leave it (nothing else clears a slot the drain passed).
        if (cursor_ < old_.buckets.size()) {
          // Last first: a packed bucket moves its last key (not moved yet) into each cleared slot.
          for (int d = s; d-- > 0;) {
            if (old_.buckets[cursor_].keys[d] != 0) old_.Clear(cursor_, d);
          }
        }
        migrated_ += moved;
        moved_ += moved;
        return false;
      }
      migrated_ += moved;
      moved_ += moved;
      if (old_.size == 0) EndMigration();
    }
    return true;
  }

  // The successor of a table near the top of its band: allocated, and its pages faulted in on another
  // thread while this table takes its last keys. Same seed: keys keep their relative places. Throws
  // std::bad_alloc.
  void Prepare(size_t bucketCount) {
    Table next(bucketCount, table_.seed);
    next.buckets.PopulateInBackground();
    next_ = std::move(next);
    ++prepared_;
    SetLimits();
  }
  void DropPrepared() {
    next_ = Table();
    SetLimits();
  }
  void Switch() {
    StartMigration(std::move(next_));
    next_ = Table();
    ++growths_;
    SetLimits();
  }
  // The fast paths' bounds: an insertion leaves it to prepare a successor, to grow, or while draining;
  // an erase, to drop a successor no longer needed.
  void SetLimits() {
    const size_t buckets = table_.buckets.size();
    fastLimit_ = Migrating() ? 0 : Pending() ? MaxEntries(buckets) : PrepareEntries(buckets);
    dropLimit_ = Pending() ? buckets * kSlots * kDropLoadPer1024 / 1024 : 0;
  }

  // The new-table candidates of an old bucket's keys, prefetched kPlanAhead buckets ahead of the drain.
  void Plan(size_t bucket) {
    const Bucket& b = old_.buckets[bucket];
    Planned* planned = planned_[bucket % kPlanRing];
    for (int t = 0; t < kSlots; ++t) {
      const uint64_t key = b.keys[t];
      planned[t].key = key;
      if (key == 0) continue;
      planned[t].homes = table_.HomesOf(key);
      __builtin_prefetch(&table_.buckets[planned[t].homes.first], 0, 1);
      __builtin_prefetch(&table_.buckets[planned[t].homes.second], 0, 1);
    }
    plannedFor_[bucket % kPlanRing] = bucket;
  }

  // Replaces the table by `next` (empty); the old one drains into it. Sized up, if need be (a new
  // allocation), so that the drain ends before the new table could need to grow (each insertion
  // drains kDrainSteps old buckets). Throws std::bad_alloc (the map unchanged).
  void StartMigration(Table&& next) {
    const size_t steps = table_.buckets.size() + (table_.stash.size() + kSlots - 1) / kSlots;
    const size_t room = table_.size + (steps + kDrainSteps - 1) / kDrainSteps;
    if (MaxEntries(next.buckets.size()) < room) next = Table(CapacityFor(room), next.seed);
    old_ = std::move(table_);
    table_ = std::move(next);
    table_.buckets.Use();
    NextGeneration();
    cursor_ = 0;
    std::fill(std::begin(plannedFor_), std::end(plannedFor_), SIZE_MAX);
    SetLimits();
    if (old_.size == 0) EndMigration();
  }
  void EndMigration() {
    old_ = Table();
    cursor_ = 0;
    SetLimits();
  }

  // A key found neither a path nor stash room. Not draining: migrate to a table under the next seed
  // (grown if the load is past where growth would take it). Draining: rebuild everything under the
  // next seed now (the fallback; it needs keys crafted against the new table's seed).
  void Reseed() {
    uint64_t seedState = table_.seed;
    const uint64_t seed = ckf::SplitmixNext(&seedState);
    const size_t bucketCount = std::max(table_.buckets.size(), CapacityFor(Entries() + 1));
    if (!Migrating()) {
      StartMigration(Table(bucketCount, seed));
      DropPrepared();
      ++reseeds_;
      return;
    }
    Table next(bucketCount, seed);
    auto move = [this, &next](uint64_t key, const V& value) {
      Move(&next, key, value, next.HomesOf(key));
      ++moved_;
    };
    ForEachIn(table_, 0, move);
    ForEachIn(old_, cursor_, move);
    if (2 * next.stash.size() > next.stashLimit) {
      next.stash.reserve(2 * next.stash.size());
      next.stashLimit = 2 * next.stash.size();
    }
    table_ = std::move(next);
    NextGeneration();
    EndMigration();
    ++rebuilds_;
  }

  template <typename F>
  static void ForEachIn(const Table& t, size_t from, F&& f) {
    for (size_t b = from; b < t.buckets.size(); ++b) {
      const Bucket& bucket = t.buckets[b];
      for (int s = 0; s < kSlots; ++s) {
        if (bucket.keys[s] != 0) f(bucket.keys[s], bucket.values[s]);
      }
    }
    for (const Entry& e : t.stash) f(e.key, e.value);
  }

  // Buckets of t below `from` are drained (stale, maybe given back: not read). A table being drained
  // keeps upper bounds in its overflow counts.
  const char* TableInvariant(const Table& t, size_t from, bool draining) const {
    std::vector<uint32_t> overflow(t.buckets.size(), 0);
    size_t entries = 0;
    for (size_t b = from; b < t.buckets.size(); ++b) {
      const Bucket& bucket = t.buckets[b];
      for (int s = 0; s < kSlots; ++s) {
        const bool used = (UsedMask(bucket) >> s) & 1;
        if (used != (bucket.keys[s] != 0)) return "used mask differs from the keys";
        if (!used) continue;
        ++entries;
        const Homes h = t.HomesOf(bucket.keys[s]);
        if (b == h.second) {
          ++overflow[h.first];
        } else if (b != h.first) {
          return "key outside its candidate buckets";
        }
      }
      if ((UsedMask(bucket) >> kSlots) != 0) return "used mask past the slots";
      if (!kCounted && UsedMask(bucket) != (1u << UsedSlots(bucket)) - 1) return "keys not packed";
    }
    if constexpr (kCounted) {
      for (size_t b = from; b < t.buckets.size(); ++b) {
        const uint8_t count = t.buckets[b].overflow;
        if (count != 0xFF && (draining ? count < overflow[b] : count != overflow[b])) {
          return "overflow count differs from the keys";
        }
      }
    }
    for (const Entry& e : t.stash) {
      if (e.key == 0) return "key 0 in the stash";
    }
    if (entries + t.stash.size() != t.size) return "size differs from the entries";
    if (t.stash.size() > t.stashLimit || t.stash.capacity() < t.stashLimit) return "stash past its reserved limit";
    return nullptr;
  }

  // Places carry the generation of the table they were made in. It names one table of one map in the
  // process (a place made for one source's lineage map must not pass in a map created after it was
  // dropped), so it comes from a process-wide counter; even, so that kNone never matches. It wraps
  // after 2^31 tables, far more than any plan outlives.
  static uint32_t FreshGeneration() {
    static std::atomic<uint32_t> counter{0};
    return counter.fetch_add(2, std::memory_order_relaxed) + 2;
  }
  void NextGeneration() { generation_ = FreshGeneration(); }
  __attribute__((always_inline)) BucketPlace PlaceFor(const Homes& h) const {
    return BucketPlace{static_cast<uint32_t>(h.first), static_cast<uint32_t>(h.second), generation_};
  }
  __attribute__((always_inline)) Homes HomesAt(uint64_t key, const BucketPlace& place) const {
    if (place.generation == generation_) return Homes{place.first, place.second};
    return table_.HomesOf(key);
  }

  void NoteMoves(uint64_t before) {
    if (moved_ - before > maxOpMoves_) maxOpMoves_ = moved_ - before;
  }

  Table table_;  // where new keys go
  uint32_t generation_ = FreshGeneration();  // of table_: see FreshGeneration
  Table old_;    // being drained into table_; no buckets: none
  size_t cursor_ = 0;  // old_ buckets below it are drained
  // Entries table_ takes before an insertion leaves the fast path, and below which an erase drops the
  // prepared successor (SetLimits: one compare instead of several tests per operation).
  size_t fastLimit_ = PrepareEntries(kMinBuckets);
  size_t dropLimit_ = 0;
  Table next_;  // prepared successor, its pages coming in; no buckets: none
  struct Planned {
    uint64_t key;
    Homes homes;
  };
  Planned planned_[kPlanRing][kSlots];  // by the old bucket they were planned for, modulo kPlanRing
  static_assert(kPlanRing == 4, "plannedFor_ starts with every slot unplanned");
  size_t plannedFor_[kPlanRing] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  size_t stagger_;  // StaggerOf(growthPhase)
  bool hasZero_ = false;
  V zeroValue_{};
  uint64_t secondBucket_ = 0;
  uint64_t paths_ = 0;
  uint64_t pathMoves_ = 0;
  uint64_t growths_ = 0;
  uint64_t prepared_ = 0;
  uint64_t reseeds_ = 0;
  uint64_t migrated_ = 0;
  uint64_t finishes_ = 0;
  uint64_t rebuilds_ = 0;
  uint64_t moved_ = 0;
  uint64_t maxOpMoves_ = 0;
};

}  // namespace kvrelay
