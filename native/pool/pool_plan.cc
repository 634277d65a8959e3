// The plan/prefetch pipeline of PoolFilterState: engine events and raw ops are planned a chunk at a
// time (canonical hashes, filter addresses, every table line prefetched) before they execute, so
// cache misses overlap (see BlockPlan in pool_filter_state.h).
#include "pool/pool_filter_state.h"

#include <new>

namespace kvrelay {
namespace pool {

BlockPlan* PoolFilterState::PlanBuffer(std::vector<BlockPlan>* buffer, size_t blocks) {
  try {
    buffer->resize(blocks);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return buffer->data();
}

void PoolFilterState::PrefetchIds(const PackedEvent& ev, const Lineage* lineage, BlockPlan* out) {
  if (ev.kind == kCleared) return;
  if (lineage == nullptr) {
    for (size_t i = 0; i < ev.store.count; ++i) out[i].lineage = kNoPlace;
    return;
  }
  if (ev.store.hasParent) lineage->Prefetch(ev.store.parent);
  for (size_t i = 0; i < ev.store.count; ++i) out[i].lineage = lineage->Prefetch(ev.store.extIds[i]);
}

const uint64_t* PoolFilterState::PlannedChainEnd(uint64_t workerId, uint32_t dpRank, uint64_t extId) const {
  const size_t from = chainEnds_.size() > kChainLookback ? chainEnds_.size() - kChainLookback : 0;
  for (size_t k = chainEnds_.size(); k-- > from;) {
    const ChainEnd& end = chainEnds_[k];
    if (end.extId == extId && end.workerId == workerId && end.dpRank == dpRank) return &end.canonical;
  }
  return nullptr;
}

void PoolFilterState::PlanStore(const StoreEvent& ev, const Lineage* lineage, StoreOrigin* origin, BlockPlan* out) {
  const uint64_t* parent = ev.hasParent && lineage != nullptr ? lineage->Find(ev.parent) : nullptr;
  // Not stored yet: perhaps the last block of an earlier store of this chunk, whose planned hash is
  // then the origin (execution compares it with the parent's actual hash, as for any plan). Without
  // it such a store ran unplanned: its owner and filter lines were never asked for ahead.
  if (ev.hasParent && parent == nullptr) parent = PlannedChainEnd(ev.workerId, ev.dpRank, ev.parent);
  *origin = StoreOrigin{parent != nullptr, parent != nullptr ? *parent : 0};
  if (ev.hasParent && parent == nullptr) {
    // Not stored yet, nor planned in this chunk: execution works it out.
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
  if (ev.count > 0) chainEnds_.push_back(ChainEnd{ev.workerId, ev.dpRank, ev.extIds[ev.count - 1], previous});
}

void PoolFilterState::PlanRemoval(const Lineage* lineage, const uint64_t* extIds, size_t count, BlockPlan* out) {
  for (size_t i = 0; i < count; ++i) {
    const uint64_t* canonical = lineage != nullptr ? lineage->Find(extIds[i], out[i].lineage) : nullptr;
    if (canonical == nullptr) {
      out[i].valid = false;
    } else {
      PlanCanonical(*canonical, &out[i]);
    }
  }
}

PoolError PoolFilterState::Store(const StoreEvent& ev) {
  BlockPlan* plan = PlanBuffer(&plan_, ev.count);
  StoreOrigin origin{false, 0};
  if (plan != nullptr) {
    const Lineage* lineage = FindSource(ev.workerId, ev.dpRank);
    PrefetchIds(PackedEvent{kStored, ev}, lineage, plan);
    chainEnds_.clear();
    PlanStore(ev, lineage, &origin, plan);
  }
  return ExecuteStore(ev, origin, plan);
}

PoolError PoolFilterState::Remove(uint64_t workerId, uint32_t dpRank, const uint64_t* extIds, size_t count) {
  BlockPlan* plan = PlanBuffer(&plan_, count);
  if (plan != nullptr) {
    const PackedEvent ev{kRemoved, StoreEvent{workerId, dpRank, false, 0, false, 0, extIds, nullptr, count}};
    const Lineage* lineage = FindSource(workerId, dpRank);
    PrefetchIds(ev, lineage, plan);
    PlanRemoval(lineage, extIds, count, plan);
  }
  return ExecuteRemoval(workerId, dpRank, extIds, count, plan);
}

void PoolFilterState::ApplyBatch(const uint32_t* meta, size_t metaLen, const uint64_t* words, uint8_t* errorsOut) {
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
      if (!chunk_.empty() && blocks + m[kMetaCount] > kPlanChunkBlocks) break;
      chunk_.push_back(DecodePackedEvent(m, words + w));
      blocks += m[kMetaCount];
      w += PackedEventWords(m);
      ++e;
    }
    ApplyChunk(errorsOut + first);
  }
}

void PoolFilterState::ApplyChunk(uint8_t* errorsOut) {
  size_t blocks = 0;
  for (const PackedEvent& ev : chunk_) blocks += ev.store.count;
  BlockPlan* plan = PlanBuffer(&plan_, blocks);
  origins_.resize(chunk_.size());
  chunkSources_.resize(chunk_.size());
  if (plan != nullptr) {
    // Planning changes nothing, so each event's source is looked up once for both passes.
    size_t b = 0;
    for (size_t k = 0; k < chunk_.size(); ++k) {
      const PackedEvent& ev = chunk_[k];
      chunkSources_[k] = ev.kind == kCleared ? nullptr : FindSource(ev.store.workerId, ev.store.dpRank);
      PrefetchIds(ev, chunkSources_[k], plan + b);
      b += ev.store.count;
    }
    b = 0;
    chainEnds_.clear();
    for (size_t k = 0; k < chunk_.size(); ++k) {
      const StoreEvent& ev = chunk_[k].store;
      if (chunk_[k].kind == kStored) {
        PlanStore(ev, chunkSources_[k], &origins_[k], plan + b);
      } else if (chunk_[k].kind == kRemoved) {
        PlanRemoval(chunkSources_[k], ev.extIds, ev.count, plan + b);
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

}  // namespace pool
}  // namespace kvrelay
