// The lineage/ownership state machine of PoolFilterState (§4.3-§4.5) and its publication window
// (§4.6); execution of planned events. Planning lives in pool_plan.cc, raw canonical ops in
// pool_canonical.cc.
#include "pool/pool_filter_state.h"

#include <algorithm>
#include <atomic>
#include <new>

#include "core/page_populator.h"

namespace kvrelay {
namespace pool {

PoolFilterState::PoolFilterState(uint32_t bucketCount, uint64_t seed, uint32_t maxKicks, uint64_t maxTrackedBlocks,
                                 Reservation reservation)
    : filter_(bucketCount, seed),
      maxKicks_(maxKicks),
      maxTrackedBlocks_(maxTrackedBlocks < kMaxTrackedBlocks ? maxTrackedBlocks : kMaxTrackedBlocks),
      dirty_(bucketCount),
      reservedPerSource_(std::min(reservation.perSource, reservation.blocks)),
      lineageBudget_(reservation.blocks) {
  chunk_.reserve(kPlanChunkBlocks);
  origins_.reserve(kPlanChunkBlocks);
  chainEnds_.reserve(kPlanChunkBlocks);  // a chunk's stores at most: planning never allocates for it
  plan_.reserve(kPlanChunkBlocks);
  if (reservation.blocks > 0) {
    // Every reserved table mapped under one pause of the populating thread (pages::Populator::Pause):
    // only the first mapping may wait for a fault it has in progress, where each waited for one.
    const pages::AddressSpaceChange change;
    owners_ = BucketMap<Ownership>(0, reservation.blocks);
    for (const auto& source : reservation.sources) GetOrCreateSource(source.first, source.second);
    // Its pages after the tables' (their first writes are the likelier), faulted in as theirs are.
    filter_.PopulateInBackground();
    populated_ = false;
  }
  Report(MemoryBytes());
}

// The tables go with the members; share_, the last of them, then leaves ProcessStateMemory.
PoolFilterState::~PoolFilterState() = default;

namespace {
std::atomic<uint64_t> liveStateBytes{0};
std::atomic<uint64_t> peakStateBytes{0};

void RaisePeak(uint64_t live) {
  uint64_t peak = peakStateBytes.load(std::memory_order_relaxed);
  while (live > peak && !peakStateBytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}
}  // namespace

ProcessMemory ProcessStateMemory() {
  return ProcessMemory{liveStateBytes.load(std::memory_order_relaxed), peakStateBytes.load(std::memory_order_relaxed)};
}

void ResetProcessStatePeak() { peakStateBytes.store(liveStateBytes.load(std::memory_order_relaxed), std::memory_order_relaxed); }

void PoolFilterState::MemoryShare::Set(size_t to) {
  if (to == bytes) return;
  if (to > bytes) {
    RaisePeak(liveStateBytes.fetch_add(to - bytes, std::memory_order_relaxed) + (to - bytes));
  } else {
    liveStateBytes.fetch_sub(bytes - to, std::memory_order_relaxed);
  }
  bytes = to;
}

PoolFilterState::Lineage* PoolFilterState::FindSource(uint64_t workerId, uint32_t dpRank) {
  const SourceKey key{workerId, dpRank};
  if (cachedSource_ == nullptr || cachedKey_ != key) {
    auto it = sources_.find(key);
    if (it == sources_.end()) return nullptr;
    cachedKey_ = key;
    cachedSource_ = it->second.get();
  }
  Touch(cachedSource_);
  return cachedSource_;
}

void PoolFilterState::Touch(Lineage* lineage) const {
  if (lineage->touched) return;
  lineage->touched = true;
  touched_.push_back(lineage);
}

PoolFilterState::Lineage* PoolFilterState::GetOrCreateSource(uint64_t workerId, uint32_t dpRank) {
  Lineage* existing = FindSource(workerId, dpRank);
  if (existing != nullptr) return existing;
  // Each its own growth phase: sources that publish alike grow their tables at different sizes.
  const uint64_t share = std::min(reservedPerSource_, lineageBudget_);
  auto made = std::make_unique<Lineage>(++lineagesMade_, share);
  made->reserved = share;
  lineageBudget_ -= share;
  // Room for every source: a lookup then never allocates (Touch), so it cannot throw mid-operation.
  touched_.reserve(sources_.size() + 1);
  Lineage* lineage = made.get();
  sources_.emplace(SourceKey{workerId, dpRank}, std::move(made));
  Touch(lineage);
  return lineage;
}

void PoolFilterState::DropSourceIfEmpty(uint64_t workerId, uint32_t dpRank, const Lineage* lineage) {
  // Most calls find the source still holding blocks: no map lookup for them.
  if (lineage != nullptr && !lineage->empty()) return;
  auto it = sources_.find(SourceKey{workerId, dpRank});
  if (it == sources_.end() || !it->second->empty()) return;
  Lineage* dropped = it->second.get();
  if (cachedSource_ == dropped) cachedSource_ = nullptr;
  lineageBytes_ -= dropped->countedBytes;
  lineageBudget_ += dropped->reserved;
  if (dropped->touched) touched_.erase(std::find(touched_.begin(), touched_.end(), dropped));
  sources_.erase(it);
}

PoolError PoolFilterState::ExecuteStore(const StoreEvent& ev, const StoreOrigin& origin, const BlockPlan* plan) {
  ++pendingEvents_;
  if (ev.count == 0) return PoolError::kNone;
  Lineage* lineage = FindSource(ev.workerId, ev.dpRank);
  uint64_t previous = 0;
  bool hasPrevious = false;
  if (ev.hasParent) {
    const uint64_t* parent = lineage != nullptr ? lineage->Find(ev.parent) : nullptr;
    if (parent == nullptr) {
      ++counters_.parentNotFound;
      return PoolError::kParentBlockNotFound;
    }
    previous = *parent;
    hasPrevious = true;
  } else if (ev.hasStart && ev.startPosition != 0) {
    return PoolError::kInvalidBlockSequence;
  }

  const size_t n = ev.count;
  try {
    lineage = GetOrCreateSource(ev.workerId, ev.dpRank);
    lineage->Reserve(n);
    owners_.Reserve(n);
    newBlocks_.reserve(n);
    admit_.reserve(n);
    reoffers_.reserve(n);
  } catch (const std::bad_alloc&) {
    DropSourceIfEmpty(ev.workerId, ev.dpRank);
    return PoolError::kAllocationFailed;
  }
  newBlocks_.clear();
  admit_.clear();
  reoffers_.clear();

  // The canonical hashes follow from the parent's alone, so a plan made from the same parent holds.
  const BlockPlan* blocks = plan;
  if (plan == nullptr || !plan[0].valid || origin.hasPrevious != hasPrevious || origin.previous != previous) {
    ++unplannedStores_;
    try {
      unplanned_.resize(n);
    } catch (const std::bad_alloc&) {
      DropSourceIfEmpty(ev.workerId, ev.dpRank);
      return PoolError::kAllocationFailed;
    }
    for (size_t i = 0; i < n; ++i) {
      previous = hasPrevious ? hashing::NextSequenceHash(previous, ev.tokensHashes[i]) : ev.tokensHashes[i];
      hasPrevious = true;
      unplanned_[i] = BlockPlan{previous, filter_.Prepare(previous), owners_.PlaceOf(previous),
                                plan != nullptr ? plan[i].lineage : kNoPlace, true};
    }
    blocks = unplanned_.data();
  }

  // Lineage first; a failure is undone key by key. Reserve above makes room, but an Emplace may still
  // move entries (a cuckoo path, a drain step) or fail to allocate a table under another seed: no
  // lineage pointer is held across Emplace calls.
  PoolError error = PoolError::kNone;
  for (size_t i = 0; i < n; ++i) {
    auto [mapped, inserted] = lineage->Emplace(ev.extIds[i], blocks[i].canonical, blocks[i].lineage);
    if (mapped == nullptr) {
      error = PoolError::kAllocationFailed;
      break;
    }
    if (inserted) {
      newBlocks_.push_back(static_cast<uint32_t>(i));
    } else if (*mapped != blocks[i].canonical) {
      error = PoolError::kInvalidBlockSequence;
      break;
    } else {
      reoffers_.push_back(static_cast<uint32_t>(i));
    }
  }
  if (error == PoolError::kNone && lineageEntries_ + newBlocks_.size() > maxTrackedBlocks_) {
    ++counters_.trackedBlockLimitRejections;
    error = PoolError::kTrackedBlockLimit;
  }
  if (error == PoolError::kNone) {
    // Owner entries may move on each Emplace (cuckoo paths, drain steps), so none is held across the
    // loop. The first new block of a hash that is not resident claims its admission here (resident
    // set now, undone if the admission fails), so the admission below needs no owner lookup.
    size_t owned = 0;
    for (; owned < newBlocks_.size(); ++owned) {
      const BlockPlan& block = blocks[newBlocks_[owned]];
      // A new entry starts at one owner with its admission claimed: nothing to test.
      const auto [own, inserted] = owners_.Emplace(block.canonical, Ownership{1, 1}, block.owner);
      if (own == nullptr) {
        error = PoolError::kAllocationFailed;
        break;
      }
      if (inserted) {
        admit_.push_back(1);
        continue;
      }
      if (own->owners == kMaxOwners) {
        error = PoolError::kOwnershipDegreeOverflow;
        break;
      }
      ++own->owners;
      admit_.push_back(own->resident == 0);
      own->resident = 1;
    }
    if (error != PoolError::kNone) {
      for (size_t k = owned; k-- > 0;) {
        const BlockPlan& block = blocks[newBlocks_[k]];
        Ownership* own = owners_.Find(block.canonical, block.owner);
        if (admit_[k]) own->resident = 0;
        if (--own->owners == 0) owners_.EraseFound(own, &block.owner);
      }
    }
  }
  if (error != PoolError::kNone) {
    for (uint32_t i : newBlocks_) lineage->EraseFound(lineage->Find(ev.extIds[i]));
    DropSourceIfEmpty(ev.workerId, ev.dpRank, lineage);
    return error;
  }
  lineageEntries_ += newBlocks_.size();

  // Physical admission: full relocation for new owners of non-resident hashes...
  uint32_t kicks = 0;
  bool omitted = false;
  for (size_t k = 0; k < newBlocks_.size(); ++k) {
    const BlockPlan& block = blocks[newBlocks_[k]];
    if (admit_[k]) {
      if (AdmitPhysical(block.prepared, maxKicks_, &kicks)) continue;
      ++counters_.capacityFailures;
      owners_.Find(block.canonical, block.owner)->resident = 0;
      omitted = true;
    } else if (omitted) {
      // A later block of a hash whose admission just failed tries again, as every new block of a
      // non-resident hash does (rare: the same hash twice in one event, and a full filter).
      Ownership* own = owners_.Find(block.canonical, block.owner);
      if (!own->resident && !InsertPhysical(block.prepared, own, maxKicks_, &kicks)) ++counters_.capacityFailures;
    }
  }
  // ...then a relocation-free retry for re-offered omitted hashes that are not also candidates.
  auto sameHashIn = [blocks](const std::vector<uint32_t>& list, size_t limit, uint64_t canonical) {
    return std::any_of(list.begin(), list.begin() + limit, [&](uint32_t b) { return blocks[b].canonical == canonical; });
  };
  for (size_t k = 0; k < reoffers_.size(); ++k) {
    const BlockPlan& block = blocks[reoffers_[k]];
    Ownership* own = owners_.Find(block.canonical, block.owner);
    if (own == nullptr || own->resident) continue;  // null only if the tables were already inconsistent
    if (sameHashIn(newBlocks_, newBlocks_.size(), block.canonical) || sameHashIn(reoffers_, k, block.canonical)) continue;
    InsertPhysical(block.prepared, own, 0, &kicks);
  }
  return PoolError::kNone;
}

PoolError PoolFilterState::RemoveFromSource(Lineage* lineage, const uint64_t* extIds, size_t count,
                                      const BlockPlan* plan) {
  PoolError first = PoolError::kNone;
  for (size_t i = 0; i < count; ++i) {
    // Looked up again: an id repeated in the list, or one stored earlier in the chunk, differs from the plan.
    const uint64_t* found = plan != nullptr ? lineage->Find(extIds[i], plan[i].lineage) : lineage->Find(extIds[i]);
    if (found == nullptr) {
      ++counters_.unknownRemovals;
      continue;
    }
    const uint64_t canonical = *found;
    const bool planned = plan != nullptr && plan[i].valid && plan[i].canonical == canonical;
    BlockPlan unplanned;
    if (!planned) unplanned = BlockPlan{canonical, filter_.Prepare(canonical), owners_.PlaceOf(canonical), kNoPlace, true};
    const BlockPlan& block = planned ? plan[i] : unplanned;
    RawOutcome outcome;
    ckf::Write write{};
    Ownership* own = owners_.Find(canonical, block.owner);
    if (own == nullptr || !ReleaseOwner(own, block, &outcome, &write)) {
      // The lineage entry stays: state is as before this id.
      ++counters_.invariantViolations;
      if (first == PoolError::kNone) first = PoolError::kIndexerInvariantViolation;
      continue;
    }
    lineage->EraseFound(found);  // still valid: only the owner table changed since the Find
    --lineageEntries_;
  }
  return first;
}

PoolError PoolFilterState::ExecuteRemoval(uint64_t workerId, uint32_t dpRank, const uint64_t* extIds, size_t count,
                                    const BlockPlan* plan) {
  ++pendingEvents_;
  Lineage* lineage = FindSource(workerId, dpRank);
  if (lineage == nullptr) {
    counters_.unknownRemovals += count;
    return PoolError::kNone;
  }
  const PoolError error = RemoveFromSource(lineage, extIds, count, plan);
  DropSourceIfEmpty(workerId, dpRank, lineage);
  return error;
}

PoolError PoolFilterState::Clear(uint64_t workerId, uint32_t dpRank) {
  ++pendingEvents_;
  Lineage* lineage = FindSource(workerId, dpRank);
  if (lineage == nullptr) return PoolError::kNone;
  clearScratch_.clear();
  try {
    clearScratch_.reserve(lineage->size());
  } catch (const std::bad_alloc&) {
    return PoolError::kAllocationFailed;
  }
  lineage->ForEach([this](uint64_t ext, uint64_t) { clearScratch_.push_back(ext); });
  // Its own plan buffer: a clear runs in the middle of an ApplyBatch chunk whose plan is in plan_.
  BlockPlan* plan = PlanBuffer(&clearPlan_, clearScratch_.size());
  if (plan != nullptr) {
    for (size_t i = 0; i < clearScratch_.size(); ++i) plan[i].lineage = lineage->PlaceOf(clearScratch_[i]);
    PlanRemoval(lineage, clearScratch_.data(), clearScratch_.size(), plan);
  }
  const PoolError error = RemoveFromSource(lineage, clearScratch_.data(), clearScratch_.size(), plan);
  DropSourceIfEmpty(workerId, dpRank, lineage);
  return error;
}

uint32_t PoolFilterState::Owners(uint64_t hash) const {
  const Ownership* own = owners_.Find(hash);
  return own == nullptr ? 0 : own->owners;
}

bool PoolFilterState::IsResident(uint64_t hash) const {
  const Ownership* own = owners_.Find(hash);
  return own != nullptr && own->resident != 0;
}

bool PoolFilterState::Drain(std::vector<uint32_t>* buckets, std::vector<uint64_t>* values) {
  if (pendingEvents_ == 0 && dirty_.size() == 0) {
    buckets->clear();
    values->clear();
    return false;
  }
  // Sized for every dirty bucket, then cut to the changed ones: no capacity check and no branch per
  // bucket (two push_backs were most of a drain's ~40 instructions per op). Not cleared first, so
  // only what grows past the previous drain's size is zero-filled.
  buckets->resize(dirty_.size());
  values->resize(dirty_.size());
  uint32_t* outBuckets = buckets->data();
  uint64_t* outValues = values->data();
  size_t changed = 0;
  dirty_.Drain(filter_.words(), [&](uint32_t bucket, uint64_t current, bool differs) {
    outBuckets[changed] = bucket;
    outValues[changed] = current;
    changed += differs ? 1 : 0;
  });
  buckets->resize(changed);
  values->resize(changed);
  pendingEvents_ = 0;
  return changed != 0;
}

Stats PoolFilterState::GetStats() const {
  return Stats{filter_.bucketCount(), residentCount_, owners_.size(),     lineageEntries_,    sources_.size(),
               pendingEvents_,        dirty_.size(),  filter_.rngState(), maxTrackedBlocks_, counters_};
}

TableStats PoolFilterState::GetTableStats() const {
  const auto owner = owners_.GetShape();
  TableStats out{owner.growths, owner.migrated, 0, 0, lineageBudget_};
  for (const auto& entry : sources_) {
    const auto shape = entry.second->GetShape();
    out.lineageGrowths += shape.growths;
    out.lineageMigrated += shape.migrated;
  }
  return out;
}

size_t PoolFilterState::MemoryBytes() const {
  for (Lineage* lineage : touched_) {
    lineageBytes_ -= lineage->countedBytes;
    lineage->countedBytes = lineage->MemoryBytes();
    lineageBytes_ += lineage->countedBytes;
    lineage->touched = false;
  }
  touched_.clear();
  const size_t bytes = FixedBytes() + lineageBytes_;
  Report(bytes);
  return bytes;
}

size_t PoolFilterState::RecountMemoryBytes() const {
  size_t bytes = FixedBytes();
  for (const auto& entry : sources_) bytes += entry.second->MemoryBytes();
  return bytes;
}

// MemoryBytes apart from what the lineage tables hold.
size_t PoolFilterState::FixedBytes() const {
  // A source's hash node (its value and the next link) and its lineage object, and the buckets' links.
  return size_t{filter_.bucketCount()} * sizeof(uint64_t) + dirty_.MemoryBytes() + owners_.MemoryBytes() +
         sources_.size() * (sizeof(decltype(sources_)::value_type) + sizeof(void*) + sizeof(Lineage)) +
         sources_.bucket_count() * sizeof(void*);
}

void PoolFilterState::SettleTables() {
  owners_.Settle();
  for (auto& entry : sources_) {
    entry.second->Settle();
    Touch(entry.second.get());
  }
}

bool PoolFilterState::TablesPopulated() const {
  if (populated_) return true;
  if (!filter_.Populated() || !owners_.Populated()) return false;
  for (const auto& entry : sources_) {
    if (!entry.second->Populated()) return false;
  }
  populated_ = true;
  return true;
}

std::vector<size_t> PoolFilterState::LineageBucketCounts() const {
  std::vector<std::pair<SourceKey, size_t>> bySource;
  for (const auto& entry : sources_) bySource.emplace_back(entry.first, entry.second->GetShape().buckets);
  std::sort(bySource.begin(), bySource.end());
  std::vector<size_t> counts;
  for (const auto& entry : bySource) counts.push_back(entry.second);
  return counts;
}

}  // namespace pool
}  // namespace kvrelay
