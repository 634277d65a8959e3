#include "pool_state.h"

#include <algorithm>
#include <new>

namespace kvrelay {
namespace pool {

const char* PoolErrorName(PoolError e) {
  switch (e) {
    case PoolError::kNone: return nullptr;
    case PoolError::kParentBlockNotFound: return "ParentBlockNotFound";
    case PoolError::kInvalidBlockSequence: return "InvalidBlockSequence";
    case PoolError::kOwnershipDegreeOverflow: return "OwnershipDegreeOverflow";
    case PoolError::kIndexerInvariantViolation: return "IndexerInvariantViolation";
    case PoolError::kAllocationFailed: return "AllocationFailed";
  }
  return "Unknown";
}

const char* RawOutcomeName(RawOutcome o) {
  switch (o) {
    case RawOutcome::kInserted: return "inserted";
    case RawOutcome::kOwnerBumped: return "owner_bumped";
    case RawOutcome::kCapacityExhausted: return "capacity_exhausted";
    case RawOutcome::kRemoved: return "removed";
    case RawOutcome::kOwnerDecremented: return "owner_decremented";
    case RawOutcome::kReleasedNotResident: return "released_not_resident";
    case RawOutcome::kUnknownRemoval: return "unknown_removal";
    case RawOutcome::kReofferInserted: return "reoffer_inserted";
    case RawOutcome::kReofferOmitted: return "reoffer_omitted";
    case RawOutcome::kReofferAlreadyResident: return "reoffer_already_resident";
    case RawOutcome::kReofferUnowned: return "reoffer_unowned";
    case RawOutcome::kInvariantViolation: return "invariant_violation";
  }
  return "unknown";
}

PoolState::PoolState(uint32_t bucketCount, uint64_t seed, uint32_t maxKicks)
    : filter_(bucketCount, seed), maxKicks_(maxKicks), dirty_(bucketCount) {
  chunk_.reserve(kPlanChunkBlocks);
  origins_.reserve(kPlanChunkBlocks);
  plan_.reserve(kPlanChunkBlocks);
}

PoolState::Lineage* PoolState::FindSource(uint64_t workerId, uint32_t dpRank) {
  const SourceKey key{workerId, dpRank};
  if (cachedSource_ != nullptr && cachedKey_ == key) return cachedSource_;
  auto it = sources_.find(key);
  if (it == sources_.end()) return nullptr;
  cachedKey_ = key;
  cachedSource_ = it->second.get();
  return cachedSource_;
}

PoolState::Lineage* PoolState::GetOrCreateSource(uint64_t workerId, uint32_t dpRank) {
  Lineage* existing = FindSource(workerId, dpRank);
  if (existing != nullptr) return existing;
  auto& slot = sources_[SourceKey{workerId, dpRank}];
  slot = std::make_unique<Lineage>();
  return slot.get();
}

void PoolState::DropSourceIfEmpty(uint64_t workerId, uint32_t dpRank) {
  auto it = sources_.find(SourceKey{workerId, dpRank});
  if (it == sources_.end() || !it->second->empty()) return;
  if (cachedSource_ == it->second.get()) cachedSource_ = nullptr;
  sources_.erase(it);
}

void PoolState::MarkWrites() {
  for (const ckf::Write& w : filter_.writes()) dirty_.Touch(w.bucket, w.before);
}

bool PoolState::InsertPhysical(const ckf::Prepared& p, Ownership* own, uint32_t maxKicks, uint32_t* kicks) {
  if (!filter_.Insert(p, maxKicks, kicks)) return false;
  own->resident = 1;
  ++residentCount_;
  MarkWrites();
  return true;
}

BlockPlan* PoolState::PlanBuffer(std::vector<BlockPlan>* buffer, size_t blocks) {
  try {
    buffer->resize(blocks);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return buffer->data();
}

void PoolState::PrefetchIds(const PackedEvent& ev) {
  if (ev.kind == kCleared) return;
  const Lineage* lineage = FindSource(ev.store.workerId, ev.store.dpRank);
  if (lineage == nullptr) return;
  if (ev.store.hasParent) lineage->Prefetch(ev.store.parent);
  for (size_t i = 0; i < ev.store.count; ++i) lineage->Prefetch(ev.store.extIds[i]);
}

void PoolState::PlanCanonical(uint64_t hash, BlockPlan* out) {
  *out = BlockPlan{hash, filter_.Prepare(hash), true};
  owners_.Prefetch(hash);
  filter_.Prefetch(out->prepared);
}

void PoolState::PlanStore(const StoreEvent& ev, StoreOrigin* origin, BlockPlan* out) {
  const Lineage* lineage = ev.hasParent ? FindSource(ev.workerId, ev.dpRank) : nullptr;
  const uint64_t* parent = lineage != nullptr ? lineage->Find(ev.parent) : nullptr;
  *origin = StoreOrigin{parent != nullptr, parent != nullptr ? *parent : 0};
  if (ev.hasParent && parent == nullptr) {
    // Not stored yet (perhaps by an earlier event of this chunk): execution works it out.
    for (size_t i = 0; i < ev.count; ++i) out[i].valid = false;
    return;
  }
  uint64_t previous = origin->previous;
  bool hasPrevious = origin->hasPrevious;
  for (size_t i = 0; i < ev.count; ++i) {
    previous = hasPrevious ? hashing::NextSequenceHash(previous, ev.tokensHashes[i]) : ev.tokensHashes[i];
    hasPrevious = true;
    PlanCanonical(previous, &out[i]);
  }
}

void PoolState::PlanRemoval(const Lineage* lineage, const uint64_t* extIds, size_t count, BlockPlan* out) {
  for (size_t i = 0; i < count; ++i) {
    const uint64_t* canonical = lineage != nullptr ? lineage->Find(extIds[i]) : nullptr;
    if (canonical == nullptr) {
      out[i].valid = false;
    } else {
      PlanCanonical(*canonical, &out[i]);
    }
  }
}

PoolError PoolState::Store(const StoreEvent& ev) {
  BlockPlan* plan = PlanBuffer(&plan_, ev.count);
  StoreOrigin origin{false, 0};
  if (plan != nullptr) {
    PrefetchIds(PackedEvent{kStored, ev});
    PlanStore(ev, &origin, plan);
  }
  return ExecuteStore(ev, origin, plan);
}

PoolError PoolState::ExecuteStore(const StoreEvent& ev, const StoreOrigin& origin, const BlockPlan* plan) {
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
    canonicals_.resize(n);
    prepared_.resize(n);
    newBlocks_.reserve(n);
    newOwners_.reserve(n);
    reoffers_.reserve(n);
  } catch (const std::bad_alloc&) {
    DropSourceIfEmpty(ev.workerId, ev.dpRank);
    return PoolError::kAllocationFailed;
  }
  newBlocks_.clear();
  newOwners_.clear();
  reoffers_.clear();

  // The canonical hashes follow from the parent's alone, so a plan made from the same parent holds.
  if (plan != nullptr && plan[0].valid && origin.hasPrevious == hasPrevious && origin.previous == previous) {
    for (size_t i = 0; i < n; ++i) {
      canonicals_[i] = plan[i].canonical;
      prepared_[i] = plan[i].prepared;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      canonicals_[i] = hasPrevious ? hashing::NextSequenceHash(previous, ev.tokensHashes[i]) : ev.tokensHashes[i];
      prepared_[i] = filter_.Prepare(canonicals_[i]);
      previous = canonicals_[i];
      hasPrevious = true;
    }
  }

  // Lineage first (Reserve above guarantees no rehash, so a failure can be undone key by key).
  PoolError error = PoolError::kNone;
  for (size_t i = 0; i < n; ++i) {
    auto [mapped, inserted] = lineage->Emplace(ev.extIds[i], canonicals_[i]);
    if (inserted) {
      newBlocks_.push_back(static_cast<uint32_t>(i));
    } else if (*mapped != canonicals_[i]) {
      error = PoolError::kInvalidBlockSequence;
      break;
    } else {
      reoffers_.push_back(static_cast<uint32_t>(i));
    }
  }
  if (error == PoolError::kNone) {
    for (uint32_t i : newBlocks_) {
      Ownership* own = owners_.Emplace(canonicals_[i], Ownership{0, 0}).first;
      if (own->owners == UINT32_MAX) {
        error = PoolError::kOwnershipDegreeOverflow;
        break;
      }
      ++own->owners;
      newOwners_.push_back(own);
    }
    if (error != PoolError::kNone) {
      for (size_t k = newOwners_.size(); k-- > 0;) {
        Ownership* own = owners_.Find(canonicals_[newBlocks_[k]]);
        if (--own->owners == 0) owners_.EraseFound(own);
      }
    }
  }
  if (error != PoolError::kNone) {
    for (uint32_t i : newBlocks_) lineage->Erase(ev.extIds[i]);
    DropSourceIfEmpty(ev.workerId, ev.dpRank);
    return error;
  }
  lineageEntries_ += newBlocks_.size();

  // Physical admission: full relocation for new owners of non-resident hashes...
  uint32_t kicks = 0;
  for (size_t k = 0; k < newOwners_.size(); ++k) {
    if (newOwners_[k]->resident) continue;
    if (!InsertPhysical(prepared_[newBlocks_[k]], newOwners_[k], maxKicks_, &kicks)) ++counters_.capacityFailures;
  }
  // ...then a relocation-free retry for re-offered omitted hashes that are not also candidates.
  auto sameHashIn = [this](const std::vector<uint32_t>& blocks, size_t limit, uint64_t canonical) {
    return std::any_of(blocks.begin(), blocks.begin() + limit,
                       [&](uint32_t b) { return canonicals_[b] == canonical; });
  };
  for (size_t k = 0; k < reoffers_.size(); ++k) {
    const uint64_t canonical = canonicals_[reoffers_[k]];
    Ownership* own = owners_.Find(canonical);
    if (own == nullptr || own->resident) continue;  // null only if the tables were already inconsistent
    if (sameHashIn(newBlocks_, newBlocks_.size(), canonical) || sameHashIn(reoffers_, k, canonical)) continue;
    InsertPhysical(prepared_[reoffers_[k]], own, 0, &kicks);
  }
  return PoolError::kNone;
}

bool PoolState::ReleaseOwner(Ownership* own, const ckf::Prepared& p, RawOutcome* outcome, ckf::Write* write) {
  if (own->owners > 1) {
    --own->owners;
    *outcome = RawOutcome::kOwnerDecremented;
    return true;
  }
  if (own->resident) {
    if (!filter_.Remove(p, write)) return false;
    dirty_.Touch(write->bucket, write->before);
    --residentCount_;
    *outcome = RawOutcome::kRemoved;
  } else {
    *outcome = RawOutcome::kReleasedNotResident;
  }
  owners_.EraseFound(own);
  return true;
}

PoolError PoolState::RemoveFromSource(Lineage* lineage, const uint64_t* extIds, size_t count,
                                      const BlockPlan* plan) {
  PoolError first = PoolError::kNone;
  for (size_t i = 0; i < count; ++i) {
    // Looked up again: an id repeated in the list, or one stored earlier in the chunk, differs from the plan.
    const uint64_t* found = lineage->Find(extIds[i]);
    if (found == nullptr) {
      ++counters_.unknownRemovals;
      continue;
    }
    const uint64_t canonical = *found;
    const bool planned = plan != nullptr && plan[i].valid && plan[i].canonical == canonical;
    const ckf::Prepared p = planned ? plan[i].prepared : filter_.Prepare(canonical);
    RawOutcome outcome;
    ckf::Write write{};
    Ownership* own = owners_.Find(canonical);
    if (own == nullptr || !ReleaseOwner(own, p, &outcome, &write)) {
      // The lineage entry stays: state is as before this id.
      ++counters_.invariantViolations;
      if (first == PoolError::kNone) first = PoolError::kIndexerInvariantViolation;
      continue;
    }
    lineage->EraseFound(found);
    --lineageEntries_;
  }
  return first;
}

PoolError PoolState::Remove(uint64_t workerId, uint32_t dpRank, const uint64_t* extIds, size_t count) {
  BlockPlan* plan = PlanBuffer(&plan_, count);
  if (plan != nullptr) {
    const PackedEvent ev{kRemoved, StoreEvent{workerId, dpRank, false, 0, false, 0, extIds, nullptr, count}};
    PrefetchIds(ev);
    PlanRemoval(FindSource(workerId, dpRank), extIds, count, plan);
  }
  return ExecuteRemoval(workerId, dpRank, extIds, count, plan);
}

PoolError PoolState::ExecuteRemoval(uint64_t workerId, uint32_t dpRank, const uint64_t* extIds, size_t count,
                                    const BlockPlan* plan) {
  ++pendingEvents_;
  Lineage* lineage = FindSource(workerId, dpRank);
  if (lineage == nullptr) {
    counters_.unknownRemovals += count;
    return PoolError::kNone;
  }
  const PoolError error = RemoveFromSource(lineage, extIds, count, plan);
  DropSourceIfEmpty(workerId, dpRank);
  return error;
}

PoolError PoolState::Clear(uint64_t workerId, uint32_t dpRank) {
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
  if (plan != nullptr) PlanRemoval(lineage, clearScratch_.data(), clearScratch_.size(), plan);
  const PoolError error = RemoveFromSource(lineage, clearScratch_.data(), clearScratch_.size(), plan);
  DropSourceIfEmpty(workerId, dpRank);
  return error;
}

std::string PoolState::ValidateBatch(const uint32_t* meta, size_t metaLen, const uint64_t* /*words*/,
                                     size_t wordsLen) {
  if (metaLen % kMetaStride != 0) return "meta length is not a multiple of 5";
  uint64_t needed = 0;
  for (size_t e = 0; e < metaLen / kMetaStride; ++e) {
    const uint32_t* m = meta + e * kMetaStride;
    const uint32_t kind = m[0], flags = m[2], count = m[4];
    if (flags > (kFlagParent | kFlagStart)) return "event " + std::to_string(e) + ": unknown flags";
    needed += 1;  // workerId
    switch (kind) {
      case kStored:
        needed += (flags & kFlagParent ? 1 : 0) + 2 * uint64_t{count};
        break;
      case kRemoved:
      case kCleared:
        if (flags != 0) return "event " + std::to_string(e) + ": parent/start only apply to stored events";
        if (kind == kCleared && count != 0) return "event " + std::to_string(e) + ": cleared takes no blocks";
        needed += count;
        break;
      default:
        return "event " + std::to_string(e) + ": unknown kind " + std::to_string(kind);
    }
    if (needed > wordsLen) return "event " + std::to_string(e) + ": words array too short";
  }
  if (needed != wordsLen) return "words array longer than the events need";
  return std::string();
}

// Words an event occupies in the packed encoding.
static size_t EventWords(const uint32_t* m) {
  const size_t count = m[4];
  if (m[0] == kStored) return 1 + ((m[2] & kFlagParent) ? 1 : 0) + 2 * count;
  return 1 + count;
}

static PackedEvent Decode(const uint32_t* m, const uint64_t* words) {
  const uint32_t kind = m[0], flags = m[2], count = m[4];
  PackedEvent ev{kind, StoreEvent{words[0], m[1], false, 0, false, 0, nullptr, nullptr, count}};
  if (kind == kStored) {
    StoreEvent& s = ev.store;
    size_t w = 1;
    s.hasParent = (flags & kFlagParent) != 0;
    if (s.hasParent) s.parent = words[w++];
    s.hasStart = (flags & kFlagStart) != 0;
    s.startPosition = m[3];
    s.extIds = words + w;
    s.tokensHashes = words + w + count;
  } else if (kind == kRemoved) {
    ev.store.extIds = words + 1;
  }
  return ev;
}

void PoolState::ApplyBatch(const uint32_t* meta, size_t metaLen, const uint64_t* words, uint8_t* errorsOut) {
  const size_t events = metaLen / kMetaStride;
  size_t e = 0;
  size_t w = 0;
  while (e < events) {
    // A chunk: at least one event, then whole events while they fit kPlanChunkBlocks blocks.
    const size_t first = e;
    size_t blocks = 0;
    chunk_.clear();
    while (e < events && chunk_.size() < kPlanChunkBlocks) {
      const uint32_t* m = meta + e * kMetaStride;
      if (!chunk_.empty() && blocks + m[4] > kPlanChunkBlocks) break;
      chunk_.push_back(Decode(m, words + w));
      blocks += m[4];
      w += EventWords(m);
      ++e;
    }
    ApplyChunk(errorsOut + first);
  }
}

void PoolState::ApplyChunk(uint8_t* errorsOut) {
  size_t blocks = 0;
  for (const PackedEvent& ev : chunk_) blocks += ev.store.count;
  BlockPlan* plan = PlanBuffer(&plan_, blocks);
  origins_.resize(chunk_.size());
  if (plan != nullptr) {
    for (const PackedEvent& ev : chunk_) PrefetchIds(ev);
    size_t b = 0;
    for (size_t k = 0; k < chunk_.size(); ++k) {
      const StoreEvent& ev = chunk_[k].store;
      if (chunk_[k].kind == kStored) {
        PlanStore(ev, &origins_[k], plan + b);
      } else if (chunk_[k].kind == kRemoved) {
        PlanRemoval(FindSource(ev.workerId, ev.dpRank), ev.extIds, ev.count, plan + b);
      }
      b += ev.count;
    }
  }
  size_t b = 0;
  for (size_t k = 0; k < chunk_.size(); ++k) {
    const StoreEvent& ev = chunk_[k].store;
    const BlockPlan* blockPlan = plan != nullptr ? plan + b : nullptr;
    PoolError error = PoolError::kNone;
    if (chunk_[k].kind == kStored) {
      error = ExecuteStore(ev, origins_[k], blockPlan);
    } else if (chunk_[k].kind == kRemoved) {
      error = ExecuteRemoval(ev.workerId, ev.dpRank, ev.extIds, ev.count, blockPlan);
    } else {
      error = Clear(ev.workerId, ev.dpRank);
    }
    errorsOut[k] = static_cast<uint8_t>(error);
    b += ev.count;
  }
}

RawResult PoolState::FinishRaw(RawOutcome outcome, uint64_t hash, uint32_t kicks, uint64_t drawsBefore,
                               const std::vector<ckf::Write>& writes) {
  RawResult r{outcome, Owners(hash), kicks, filter_.rngDraws() - drawsBefore, {}};
  std::vector<std::pair<uint32_t, uint64_t>> originals;
  for (const ckf::Write& w : writes) {
    const bool seen = std::any_of(originals.begin(), originals.end(),
                                  [&](const std::pair<uint32_t, uint64_t>& o) { return o.first == w.bucket; });
    if (!seen) originals.emplace_back(w.bucket, w.before);
  }
  for (const auto& [bucket, original] : originals) {
    if (filter_.word(bucket) != original) r.changed.emplace_back(bucket, filter_.word(bucket));
  }
  return r;
}

RawOutcome PoolState::InsertCanonicalCore(uint64_t hash, const ckf::Prepared& p, uint32_t* kicks) {
  ++pendingEvents_;
  *kicks = 0;
  Ownership* own = owners_.Emplace(hash, Ownership{0, 0}).first;
  if (own->owners == UINT32_MAX) return RawOutcome::kInvariantViolation;
  ++own->owners;
  if (own->resident) return RawOutcome::kOwnerBumped;
  if (InsertPhysical(p, own, maxKicks_, kicks)) return RawOutcome::kInserted;
  ++counters_.capacityFailures;
  return RawOutcome::kCapacityExhausted;
}

RawOutcome PoolState::RemoveCanonicalCore(uint64_t hash, const ckf::Prepared& p, ckf::Write* write) {
  ++pendingEvents_;
  Ownership* own = owners_.Find(hash);
  if (own == nullptr) {
    ++counters_.unknownRemovals;
    return RawOutcome::kUnknownRemoval;
  }
  RawOutcome outcome;
  if (!ReleaseOwner(own, p, &outcome, write)) {
    ++counters_.invariantViolations;
    return RawOutcome::kInvariantViolation;
  }
  return outcome;
}

RawResult PoolState::InsertCanonical(uint64_t hash) {
  const uint64_t drawsBefore = filter_.rngDraws();
  uint32_t kicks = 0;
  const RawOutcome outcome = InsertCanonicalCore(hash, filter_.Prepare(hash), &kicks);
  const std::vector<ckf::Write> none;
  return FinishRaw(outcome, hash, kicks, drawsBefore, outcome == RawOutcome::kInserted ? filter_.writes() : none);
}

RawResult PoolState::RemoveCanonical(uint64_t hash) {
  const uint64_t drawsBefore = filter_.rngDraws();
  ckf::Write write{};
  const RawOutcome outcome = RemoveCanonicalCore(hash, filter_.Prepare(hash), &write);
  std::vector<ckf::Write> writes;
  if (outcome == RawOutcome::kRemoved) writes.push_back(write);
  return FinishRaw(outcome, hash, 0, drawsBefore, writes);
}

void PoolState::ApplyCanonicalBatch(const CanonicalOp* ops, const uint64_t* hashes, size_t count,
                                    RawOutcome* outcomes) {
  // A plan does not depend on the state, so op i + kCanonicalLead is planned (its lines requested)
  // while op i runs: the misses overlap the work instead of preceding it.
  BlockPlan ring[kCanonicalRing];
  const size_t lead = std::min(count, kCanonicalLead);
  for (size_t i = 0; i < lead; ++i) PlanCanonical(hashes[i], &ring[i % kCanonicalRing]);
  for (size_t i = 0; i < count; ++i) {
    if (i + kCanonicalLead < count) {
      PlanCanonical(hashes[i + kCanonicalLead], &ring[(i + kCanonicalLead) % kCanonicalRing]);
    }
    const ckf::Prepared& p = ring[i % kCanonicalRing].prepared;
    uint32_t kicks = 0;
    ckf::Write write{};
    outcomes[i] = ops[i] == CanonicalOp::kInsert ? InsertCanonicalCore(hashes[i], p, &kicks)
                                                 : RemoveCanonicalCore(hashes[i], p, &write);
  }
}

RawResult PoolState::ReofferCanonical(uint64_t hash) {
  ++pendingEvents_;
  const uint64_t drawsBefore = filter_.rngDraws();
  Ownership* own = owners_.Find(hash);
  if (own == nullptr) return FinishRaw(RawOutcome::kReofferUnowned, hash, 0, drawsBefore, {});
  if (own->resident) return FinishRaw(RawOutcome::kReofferAlreadyResident, hash, 0, drawsBefore, {});
  uint32_t kicks = 0;
  if (InsertPhysical(filter_.Prepare(hash), own, 0, &kicks)) {
    return FinishRaw(RawOutcome::kReofferInserted, hash, kicks, drawsBefore, filter_.writes());
  }
  return FinishRaw(RawOutcome::kReofferOmitted, hash, kicks, drawsBefore, {});
}

uint32_t PoolState::Owners(uint64_t hash) const {
  const Ownership* own = owners_.Find(hash);
  return own == nullptr ? 0 : own->owners;
}

bool PoolState::IsResident(uint64_t hash) const {
  const Ownership* own = owners_.Find(hash);
  return own != nullptr && own->resident != 0;
}

bool PoolState::Drain(std::vector<uint32_t>* buckets, std::vector<uint64_t>* values) {
  buckets->clear();
  values->clear();
  if (pendingEvents_ == 0 && dirty_.size() == 0) return false;
  const auto& dirtyBuckets = dirty_.buckets();
  const auto& originals = dirty_.originals();
  for (size_t i = 0; i < dirtyBuckets.size(); ++i) {
    if (i + 8 < dirtyBuckets.size()) __builtin_prefetch(filter_.words() + dirtyBuckets[i + 8]);
    const uint64_t current = filter_.word(dirtyBuckets[i]);
    if (current != originals[i]) {
      buckets->push_back(dirtyBuckets[i]);
      values->push_back(current);
    }
  }
  dirty_.Reset();
  pendingEvents_ = 0;
  return !buckets->empty();
}

Stats PoolState::GetStats() const {
  return Stats{filter_.bucketCount(), residentCount_,      owners_.size(),         lineageEntries_,
               sources_.size(),       pendingEvents_,      dirty_.size(),          filter_.rngState(),
               counters_};
}

}  // namespace pool
}  // namespace kvrelay
