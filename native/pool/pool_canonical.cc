// Raw canonical-hash operations of PoolFilterState (ckf_operations.json): owner counting and physical
// admission without lineage, one at a time with their write lists, or batched with outcomes only.
#include "pool/pool_filter_state.h"

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
  *kicks = 0;
  // A new entry starts at one owner, not resident: nothing to test.
  const auto [own, inserted] = owners_.Emplace(plan.canonical, Ownership{1, 0}, plan.owner);
  if (own == nullptr) throw std::bad_alloc();  // as the owner table's growth did before it reported it
  if (!inserted) {
    if (own->owners == kMaxOwners) return RawOutcome::kInvariantViolation;
    ++own->owners;
    if (own->resident) return RawOutcome::kOwnerBumped;
  }
  if (InsertPhysical(plan.prepared, own, maxKicks_, kicks, log)) return RawOutcome::kInserted;
  ++counters_.capacityFailures;
  return RawOutcome::kCapacityExhausted;
}

__attribute__((always_inline)) inline RawOutcome PoolFilterState::RemoveCanonicalCore(const BlockPlan& plan, ckf::Write* write) {
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
  ++pendingEvents_;
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
  ++pendingEvents_;
  const uint64_t drawsBefore = filter_.rngDraws();
  ckf::Write write{};
  BlockPlan plan;
  PlanCanonical(hash, &plan);
  const RawOutcome outcome = RemoveCanonicalCore(plan, &write);
  std::vector<ckf::Write> writes;
  if (outcome == RawOutcome::kRemoved) writes.push_back(write);
  return FinishRaw(outcome, hash, 0, drawsBefore, writes);
}

// Not inline: a call per block costs little, and a loop of its own keeps the hashing's constants and
// the tables' addresses in registers.
__attribute__((noinline)) void PoolFilterState::PlanCanonicalBlock(const uint64_t* hashes, size_t count,
                                                                   BlockPlan* __restrict out) {
  for (size_t i = 0; i < count; ++i) PlanCanonical(hashes[i], &out[i]);
}

void PoolFilterState::ApplyCanonicalBatch(const CanonicalOp* ops, const uint64_t* hashes, size_t count,
                                    RawOutcome* outcomes) {
  // A plan does not depend on the state, so the next kCanonicalBlock ops are planned (their lines
  // requested) before this block runs: the misses overlap the work instead of preceding it. Planning
  // and running a block each in a loop of their own keeps each loop's registers for its own work (one
  // loop planning op i + 32 while running op i spilled them to the stack and back every op).
  BlockPlan ring[2][kCanonicalBlock];
  // Every op counts one pending event; counted here at once, less those an exception left unrun.
  pendingEvents_ += count;
  size_t i = 0;
  try {
    PlanCanonicalBlock(hashes, std::min(count, kCanonicalBlock), ring[0]);
    for (size_t start = 0; start < count; start += kCanonicalBlock) {
      const size_t block = start / kCanonicalBlock;
      const size_t next = start + kCanonicalBlock;
      if (next < count) PlanCanonicalBlock(hashes + next, std::min(count - next, kCanonicalBlock), ring[(block + 1) % 2]);
      const BlockPlan* planned = ring[block % 2];
      const size_t end = std::min(count, start + kCanonicalBlock);
      for (; i < end; ++i) {
        const BlockPlan& p = planned[i - start];
        uint32_t kicks;
        ckf::Write write;
        outcomes[i] = ops[i] == CanonicalOp::kInsert ? InsertCanonicalCore(p, &kicks) : RemoveCanonicalCore(p, &write);
      }
    }
  } catch (...) {
    pendingEvents_ -= count - i - 1;
    throw;
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
