// Raw canonical-hash operations of PoolFilterState (ckf_operations.json): owner counting and physical
// admission without lineage, one at a time with their write lists, or batched with outcomes only.
#include "pool_filter_state.h"

#include <algorithm>
#include <new>

namespace kvrelay {
namespace pool {

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

RawResult PoolFilterState::FinishRaw(RawOutcome outcome, uint64_t hash, uint32_t kicks, uint64_t drawsBefore,
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

__attribute__((always_inline)) inline RawOutcome PoolFilterState::InsertCanonicalCore(const BlockPlan& plan, uint32_t* kicks, std::vector<ckf::Write>* log) {
  ++pendingEvents_;
  *kicks = 0;
  Ownership* own = owners_.Emplace(plan.canonical, Ownership{0, 0}, plan.owner).first;
  if (own == nullptr) throw std::bad_alloc();  // as the owner table's growth did before it reported it
  if (own->owners == kMaxOwners) return RawOutcome::kInvariantViolation;
  ++own->owners;
  if (own->resident) return RawOutcome::kOwnerBumped;
  if (InsertPhysical(plan.prepared, own, maxKicks_, kicks, log)) return RawOutcome::kInserted;
  ++counters_.capacityFailures;
  return RawOutcome::kCapacityExhausted;
}

__attribute__((always_inline)) inline RawOutcome PoolFilterState::RemoveCanonicalCore(const BlockPlan& plan, ckf::Write* write) {
  ++pendingEvents_;
  Ownership* own = owners_.Find(plan.canonical, plan.owner);
  if (own == nullptr) {
    ++counters_.unknownRemovals;
    return RawOutcome::kUnknownRemoval;
  }
  RawOutcome outcome;
  if (!ReleaseOwner(own, plan, &outcome, write)) {
    ++counters_.invariantViolations;
    return RawOutcome::kInvariantViolation;
  }
  return outcome;
}

RawResult PoolFilterState::InsertCanonical(uint64_t hash) {
  const uint64_t drawsBefore = filter_.rngDraws();
  uint32_t kicks = 0;
  rawWrites_.clear();
  rawWrites_.reserve(size_t{maxKicks_} + 1);
  BlockPlan plan;
  PlanCanonical(hash, &plan);
  const RawOutcome outcome = InsertCanonicalCore(plan, &kicks, &rawWrites_);
  return FinishRaw(outcome, hash, kicks, drawsBefore, rawWrites_);
}

RawResult PoolFilterState::RemoveCanonical(uint64_t hash) {
  const uint64_t drawsBefore = filter_.rngDraws();
  ckf::Write write{};
  BlockPlan plan;
  PlanCanonical(hash, &plan);
  const RawOutcome outcome = RemoveCanonicalCore(plan, &write);
  std::vector<ckf::Write> writes;
  if (outcome == RawOutcome::kRemoved) writes.push_back(write);
  return FinishRaw(outcome, hash, 0, drawsBefore, writes);
}

void PoolFilterState::ApplyCanonicalBatch(const CanonicalOp* ops, const uint64_t* hashes, size_t count,
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
    const BlockPlan& plan = ring[i % kCanonicalRing];
    uint32_t kicks;
    ckf::Write write;
    outcomes[i] = ops[i] == CanonicalOp::kInsert ? InsertCanonicalCore(plan, &kicks) : RemoveCanonicalCore(plan, &write);
  }
}

RawResult PoolFilterState::ReofferCanonical(uint64_t hash) {
  ++pendingEvents_;
  const uint64_t drawsBefore = filter_.rngDraws();
  Ownership* own = owners_.Find(hash);
  if (own == nullptr) return FinishRaw(RawOutcome::kReofferUnowned, hash, 0, drawsBefore, {});
  if (own->resident) return FinishRaw(RawOutcome::kReofferAlreadyResident, hash, 0, drawsBefore, {});
  uint32_t kicks = 0;
  rawWrites_.clear();
  rawWrites_.reserve(1);
  if (InsertPhysical(filter_.Prepare(hash), own, 0, &kicks, &rawWrites_)) {
    return FinishRaw(RawOutcome::kReofferInserted, hash, kicks, drawsBefore, rawWrites_);
  }
  return FinishRaw(RawOutcome::kReofferOmitted, hash, kicks, drawsBefore, {});
}

}  // namespace pool
}  // namespace kvrelay
