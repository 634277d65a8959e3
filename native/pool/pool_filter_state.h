// The pool actor's state (spec hashing-ckf-cbi1.md §4.2-§4.6): per-source lineage, owner counting with
// one physical fingerprint per resident canonical hash, the cuckoo filter and the publication window.
// Pure C++, no N-API; single-threaded (the N-API wrapper serializes access).
// Its methods live in one file per concept: pool_filter_state.cc (the lineage/ownership state
// machine and the window), pool_plan.cc (planning and prefetching batches), pool_canonical.cc (the
// raw canonical-hash operations).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/bucket_map.h"
#include "core/ckf.h"
#include "core/process_secret.h"
#include "pool/dirty_window.h"
#include "pool/packed_batch.h"
#include "pool/pool_canonical.h"

namespace kvrelay {
namespace pool {

// The largest tracked-block limit: an owner count (31 bits, see Ownership) then never overflows.
constexpr uint64_t kMaxTrackedBlocks = (uint64_t{1} << 31) - 1;
// The most blocks a pool reserves its tables for (Reservation): ~3 GiB of tables mapped up front, past
// any pool's filter (2^24 buckets hold ~53 M). The relay's config bounds it lower.
constexpr uint64_t kMaxReservedBlocks = uint64_t{1} << 26;

// The most sources a reservation names (Reservation::sources): past any endpoint's workers x ranks.
constexpr size_t kMaxReservedSources = size_t{1} << 16;

// Tables sized at construction for an operator-stated capacity (limits.reservePoolBlocks): the owner
// table for `blocks` canonical hashes, and each source's lineage table for `perSource` ids, from a
// budget of `blocks` lineage entries over all sources (a source dropped gives its share back), so
// that sources beyond the ones the deployment named cannot reserve without bound. The named
// `sources`' tables are made with the owner table, under one pause of the populating thread: made
// at a source's first event instead, each mapping waited for that thread's fault in progress (8
// sources' first events stalled their thread 34 ms). A source not named makes its table when it
// first appears. Past a reservation, or without one, the tables grow as they fill.
struct Reservation {
  uint64_t blocks = 0;
  uint64_t perSource = 0;  // at most blocks
  std::vector<std::pair<uint64_t, uint32_t>> sources;  // (workerId, dpRank), at most kMaxReservedSources
};

// Bytes the process's pool states hold for their tables together (each state's MemoryBytes as last
// counted: at construction, after every apply, and until it is destroyed), and the most they held at
// once since the last ResetPeak. A new generation of a pool must not reserve while its predecessor
// still holds its tables: the peak shows it if one did.
struct ProcessMemory {
  uint64_t liveBytes;
  uint64_t peakBytes;
};
ProcessMemory ProcessStateMemory();
// Starts a new peak from the bytes held now.
void ResetProcessStatePeak();

struct Counters {
  uint64_t capacityFailures = 0;
  uint64_t unknownRemovals = 0;
  uint64_t parentNotFound = 0;
  uint64_t invariantViolations = 0;
  // Stores rejected whole because the pool tracked maxTrackedBlocks lineage entries (kTrackedBlockLimit).
  uint64_t trackedBlockLimitRejections = 0;
};

// What an op will touch, worked out before it runs: its canonical hash and filter address. Planning
// a chunk of ops first issues every table line they touch as prefetches, so the cache misses overlap
// instead of serializing. A plan reads the tables as they were before the chunk ran, so it is only a
// hint: execution checks it against the live state and recomputes on a mismatch.
struct BlockPlan {
  uint64_t canonical;
  ckf::Prepared prepared;
  BucketPlace owner;    // the canonical hash's in the owner table
  BucketPlace lineage;  // the block's external id's in its source's lineage table (kNoPlace: none)
  bool valid;           // canonical, prepared and owner hold
};
constexpr BucketPlace kNoPlace{0, 0, BucketPlace::kNone};

// The chain origin a store plan assumed: the parent's canonical hash as planning saw it.
struct StoreOrigin {
  bool hasPrevious;
  uint64_t previous;
};

// How the pool's tables got where they are (BucketMap::Shape summed over the owner table and the
// lineage tables of the sources present): for tests and benches.
struct TableStats {
  uint64_t ownerGrowths;
  uint64_t ownerMigrated;
  uint64_t lineageGrowths;
  uint64_t lineageMigrated;
  uint64_t reservedLineageLeft;  // of the reservation's lineage budget
};

struct Stats {
  uint32_t bucketCount;
  uint64_t residentCount;
  uint64_t ownedHashes;
  uint64_t lineageEntries;
  uint64_t sourceCount;
  uint64_t pendingEvents;
  uint64_t dirtyBuckets;
  uint64_t rngState;
  uint64_t maxTrackedBlocks;
  Counters counters;
};

class PoolFilterState {
 public:
  // maxTrackedBlocks bounds the lineage entries (tracked blocks) of all sources together, at most
  // kMaxTrackedBlocks: a store that would pass it is rejected whole (kTrackedBlockLimit) and counted,
  // so hostile or runaway sources cannot grow the tables without limit; removals make room again.
  // Throws std::bad_alloc (a reservation's tables could not be mapped).
  PoolFilterState(uint32_t bucketCount, uint64_t seed, uint32_t maxKicks, uint64_t maxTrackedBlocks = kMaxTrackedBlocks,
                  Reservation reservation = {});
  ~PoolFilterState();

  // Engine events (§4.3-§4.5). Each counts one pending event, even when it fails or does nothing.
  // A store error leaves the state untouched; removals keep going after an error (first error wins).
  PoolError Store(const StoreEvent& ev);
  PoolError Remove(uint64_t workerId, uint32_t dpRank, const uint64_t* extIds, size_t count);
  PoolError Clear(uint64_t workerId, uint32_t dpRank);

  // Applies a batch that ValidatePackedBatch accepted; errorsOut has one entry per event.
  void ApplyBatch(const uint32_t* meta, size_t metaLen, const uint64_t* words, uint8_t* errorsOut);

  // Raw canonical-hash operations with owner counting (ckf_operations.json).
  RawResult InsertCanonical(uint64_t hash);
  RawResult RemoveCanonical(uint64_t hash);
  RawResult ReofferCanonical(uint64_t hash);
  // InsertCanonical / RemoveCanonical for many hashes in order, planned like ApplyBatch; outcomes
  // only (no write lists). Same state changes as the one-at-a-time calls.
  void ApplyCanonicalBatch(const CanonicalOp* ops, const uint64_t* hashes, size_t count, RawOutcome* outcomes);

  bool Contains(uint64_t hash) const { return filter_.Contains(hash); }
  uint32_t Owners(uint64_t hash) const;
  bool IsResident(uint64_t hash) const;

  // Publication window (§4.6). false: nothing to publish (the window is reset either way).
  bool Drain(std::vector<uint32_t>* buckets, std::vector<uint64_t>* values);
  bool HasPendingPublication() const { return pendingEvents_ > 0 || dirty_.size() > 0; }
  // Buckets touched since the window began: what a Drain walks.
  size_t DirtyBuckets() const { return dirty_.size(); }

  const ckf::Filter& filter() const { return filter_; }
  const Counters& counters() const { return counters_; }
  // Lineage entries over all sources (the tracked blocks maxTrackedBlocks bounds).
  uint64_t trackedBlocks() const { return lineageEntries_; }
  // Fingerprints in the filter (what its load is made of).
  uint64_t residentCount() const { return residentCount_; }
  Stats GetStats() const;
  // Walks every source: not for the apply path.
  TableStats GetTableStats() const;
  // Bytes the state holds for its tables: filter words, owner and lineage tables, the window's bitmap.
  // Recounts only the lineage tables looked up since the last call: every apply reports it, and a pool
  // of thousands of sources walked them all each time (~90 us per small apply at 4000 sources).
  size_t MemoryBytes() const;
  // For tests: MemoryBytes counted from every table.
  size_t RecountMemoryBytes() const;
  // For benches that measure the tables at rest: drains every table still migrating into its new one
  // and drops prepared successors now (time proportional to the tables, so never on the relay's
  // path). Throws std::bad_alloc.
  void SettleTables();
  // For tests: stores that ran without a plan (planning could not work out their chain's origin, or
  // the origin it assumed went stale), whose owner and filter lines nothing asked for ahead.
  uint64_t UnplannedStores() const { return unplannedStores_; }
  // A reservation's tables (the filter's words, the owner table, the named sources' lineage tables)
  // have every page in (faulted in on the populating thread after construction): until then a write
  // may fault a fresh page on the calling thread (2-30 ms for a huge page here), so the relay applies
  // off its event loops. True without a reservation. Walks the sources until it first holds.
  bool TablesPopulated() const;
  // For tests: the bucket count of each source's lineage table, in source order.
  std::vector<size_t> LineageBucketCounts() const;

 private:
  // Four bytes, so an owner-table slot is 12 (5 to a 64-byte bucket; the spec's u32 owner count loses its top bit, which
  // kMaxTrackedBlocks keeps out of reach for engine events: a hash has at most one owner per tracked
  // block; raw canonical ops, a test surface, report an overflow at this bound).
  struct Ownership {
    uint32_t owners : 31;
    uint32_t resident : 1;
  };
  static constexpr uint32_t kMaxOwners = (uint32_t{1} << 31) - 1;
  // External id -> canonical hash, and its share of MemoryBytes as last counted.
  struct Lineage : BucketMap<uint64_t> {
    using BucketMap<uint64_t>::BucketMap;
    size_t countedBytes = 0;
    bool touched = false;  // in touched_: recounted by the next MemoryBytes
    uint64_t reserved = 0;  // its share of the reservation's lineage budget, given back when dropped
  };
  using SourceKey = std::pair<uint64_t, uint32_t>;
  // A hash table finds a source in about two lines where a tree walked ~9 nodes at 512 sources. Keyed
  // with the process secret: worker ids can come from a peer (the Dynamo event plane), and a fixed mix
  // would let one pick ids that all land in one bucket.
  struct SourceKeyHash {
    size_t operator()(const SourceKey& key) const {
      return static_cast<size_t>(Fmix64(key.first ^ ProcessSecret() ^ (uint64_t{key.second} << 40)));
    }
  };

  // --- lineage/ownership state machine (pool_filter_state.cc)
  // Every lookup of a source marks it for MemoryBytes: any access may change what its table holds.
  Lineage* FindSource(uint64_t workerId, uint32_t dpRank);
  Lineage* GetOrCreateSource(uint64_t workerId, uint32_t dpRank);
  void Touch(Lineage* lineage) const;
  size_t FixedBytes() const;
  // Moves the process's total (ProcessStateMemory) from this state's share to `bytes`.
  void Report(size_t bytes) const { share_.Set(bytes); }
  // `lineage`: the source's, if known.
  void DropSourceIfEmpty(uint64_t workerId, uint32_t dpRank, const Lineage* lineage = nullptr);
  PoolError ExecuteStore(const StoreEvent& ev, const StoreOrigin& origin, const BlockPlan* plan);
  PoolError ExecuteRemoval(uint64_t workerId, uint32_t dpRank, const uint64_t* extIds, size_t count,
                           const BlockPlan* plan);
  PoolError RemoveFromSource(Lineage* lineage, const uint64_t* extIds, size_t count, const BlockPlan* plan);
  // Releases one owner of the hash `own` belongs to (addressed by p); false on an invariant violation
  // (nothing changed). `write` receives the physical write when the outcome is kRemoved.
  // Inline, like the rest of a block op's execution: as calls, their frames were ~7 % of a raw op.
  __attribute__((always_inline)) bool ReleaseOwner(Ownership* own, const BlockPlan& plan, RawOutcome* outcome,
                                                   ckf::Write* write) {
    if (own->owners > 1) {
      --own->owners;
      *outcome = RawOutcome::kOwnerDecremented;
      return true;
    }
    if (own->resident) {
      if (!filter_.Remove(plan.prepared, write)) return false;
      dirty_.Touch(write->bucket, write->before);
      --residentCount_;
      *outcome = RawOutcome::kRemoved;
    } else {
      *outcome = RawOutcome::kReleasedNotResident;
    }
    owners_.EraseFound(own, &plan.owner);
    return true;
  }
  // Admits a hash physically and marks its writes in the publication window; `log`, if given (the
  // raw single-op calls, which report their writes), also receives them and has room for maxKicks + 1.
  // The caller keeps the owner entry's resident bit.
  __attribute__((always_inline)) bool AdmitPhysical(const ckf::Prepared& p, uint32_t maxKicks, uint32_t* kicks,
                                                    std::vector<ckf::Write>* log = nullptr) {
    const bool inserted = filter_.Insert(p, maxKicks, kicks, [this, log](uint32_t bucket, uint64_t before) {
      dirty_.Touch(bucket, before);
      if (log != nullptr) log->push_back(ckf::Write{bucket, before});
    });
    if (inserted) ++residentCount_;
    return inserted;
  }
  // AdmitPhysical that sets the resident bit.
  __attribute__((always_inline)) bool InsertPhysical(const ckf::Prepared& p, Ownership* own, uint32_t maxKicks,
                                                     uint32_t* kicks, std::vector<ckf::Write>* log = nullptr) {
    if (!AdmitPhysical(p, maxKicks, kicks, log)) return false;
    own->resident = 1;
    return true;
  }

  // --- plan/prefetch pipeline (pool_plan.cc)
  // Lineage lines first (PrefetchIds), then the plan, which resolves lineage entries and prefetches
  // owner and filter lines. PlanBuffer: `buffer` sized for `blocks`, or null (no memory: execution
  // then works unplanned).
  BlockPlan* PlanBuffer(std::vector<BlockPlan>* buffer, size_t blocks);
  // Also writes each block's lineage place into `out`. `lineage`: the event's source, or null.
  void PrefetchIds(const PackedEvent& ev, const Lineage* lineage, BlockPlan* out);
  void PlanStore(const StoreEvent& ev, const Lineage* lineage, StoreOrigin* origin, BlockPlan* out);
  // The planned canonical hash of a block an earlier store of this chunk ends with, for a store whose
  // parent is not in its lineage table yet (a burst holding consecutive steps of one request): null
  // if none of the last kChainLookback planned stores ends with it.
  const uint64_t* PlannedChainEnd(uint64_t workerId, uint32_t dpRank, uint64_t extId) const;
  void PlanRemoval(const Lineage* lineage, const uint64_t* extIds, size_t count, BlockPlan* out);
  // Inline: every op runs it, and as a call it cost a frame and a vector-packed store of the plan.
  __attribute__((always_inline)) void PlanCanonical(uint64_t hash, BlockPlan* out) {
    const ckf::Prepared p = filter_.Prepare(hash);
    filter_.Prefetch(p);
    out->canonical = hash;
    // Field by field: a struct copy went through the stack, where an 8-byte load of the 2- and 4-byte
    // stores waited for them (no store forwarding across two stores).
    out->prepared.fp = p.fp;
    out->prepared.a = p.a;
    out->prepared.b = p.b;
    out->owner = owners_.Prefetch(hash);
    out->valid = true;
  }
  void ApplyChunk(uint8_t* errorsOut);
  // ApplyCanonicalBatch's planning of one block of ops.
  void PlanCanonicalBlock(const uint64_t* hashes, size_t count, BlockPlan* __restrict out);

  // --- raw canonical operations (pool_canonical.cc)
  RawOutcome InsertCanonicalCore(const BlockPlan& plan, uint32_t* kicks, std::vector<ckf::Write>* log = nullptr);
  RawOutcome RemoveCanonicalCore(const BlockPlan& plan, ckf::Write* write);
  RawResult FinishRaw(RawOutcome outcome, uint64_t hash, uint32_t kicks, uint64_t drawsBefore,
                      const std::vector<ckf::Write>& writes);

  // This state's share of ProcessStateMemory. The first member, so the last destroyed: the share
  // leaves the process's total only once every table was freed (unmapped, where the state is freed
  // under pages::UnmapOnCaller), not before, so that a pool's next generation never counts beside it.
  struct MemoryShare {
    size_t bytes = 0;
    void Set(size_t to);
    ~MemoryShare() { Set(0); }
  };
  mutable MemoryShare share_;
  ckf::Filter filter_;
  uint32_t maxKicks_;
  uint64_t maxTrackedBlocks_;
  DirtyWindow dirty_;
  // Each lineage on the heap: its address outlives rehashing (cachedSource_, touched_ keep it).
  std::unordered_map<SourceKey, std::unique_ptr<Lineage>, SourceKeyHash> sources_;
  // MemoryBytes' running total over the lineage tables, and the tables looked up since it last ran.
  mutable size_t lineageBytes_ = 0;
  mutable std::vector<Lineage*> touched_;
  uint64_t lineagesMade_ = 0;  // the next lineage table's growth phase, less one
  uint64_t reservedPerSource_;
  uint64_t lineageBudget_;  // lineage entries a new source may still reserve (Reservation)
  mutable bool populated_ = true;  // TablesPopulated held once (false from a reservation's construction)
  SourceKey cachedKey_{0, 0};
  Lineage* cachedSource_ = nullptr;
  BucketMap<Ownership> owners_;
  uint64_t residentCount_ = 0;
  uint64_t lineageEntries_ = 0;
  uint64_t pendingEvents_ = 0;
  uint64_t unplannedStores_ = 0;
  Counters counters_;

  // Blocks planned (and prefetched) at once: about three table lines each, so a chunk's lines stay in
  // L2 until it executes, and enough of them to keep the memory system busy.
  static constexpr size_t kPlanChunkBlocks = 512;
  // Planned stores PlannedChainEnd looks back over: a chain's next step is mostly a few events on,
  // and the bound keeps a chunk's planning linear whatever its events name.
  static constexpr size_t kChainLookback = 16;
  // ApplyCanonicalBatch plans a block of this many ops while the block before waits to run.
  static constexpr size_t kCanonicalBlock = 32;

  // Scratch, kept to avoid allocations on the hot path. Block-indexed unless noted.
  std::vector<PackedEvent> chunk_;  // event-indexed
  std::vector<StoreOrigin> origins_;  // event-indexed
  // The chunk's planned stores so far, by the block each ends with (PlannedChainEnd).
  struct ChainEnd {
    uint64_t workerId;
    uint32_t dpRank;
    uint64_t extId;
    uint64_t canonical;
  };
  std::vector<ChainEnd> chainEnds_;
  std::vector<const Lineage*> chunkSources_;  // event-indexed, valid while a chunk is planned
  std::vector<BlockPlan> plan_;
  std::vector<BlockPlan> clearPlan_;
  std::vector<BlockPlan> unplanned_;  // a store's blocks worked out at execution (no plan, or a stale one)
  std::vector<uint32_t> newBlocks_;
  std::vector<uint8_t> admit_;  // by newBlocks_ index: this block admits its hash physically
  std::vector<uint32_t> reoffers_;
  std::vector<uint64_t> clearScratch_;
  std::vector<ckf::Write> rawWrites_;  // the writes of a raw single op (InsertCanonical, ReofferCanonical)
};

}  // namespace pool
}  // namespace kvrelay
