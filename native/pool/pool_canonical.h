// Types of the raw canonical-hash operations (ckf_operations.json): owner counting and physical
// admission of canonical hashes without lineage. Test and bench surfaces only (the production addon
// applies engine events); the operations themselves are PoolFilterState methods (pool_canonical.cc).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace kvrelay {
namespace pool {

// Outcomes (ckf_operations.json record_fields.outcome). Stable numbers: ApplyCanonicalBatch returns
// them in a Uint8Array.
enum class RawOutcome : uint8_t {
  kInserted,
  kOwnerBumped,
  kCapacityExhausted,
  kRemoved,
  kOwnerDecremented,
  kReleasedNotResident,
  kUnknownRemoval,
  kReofferInserted,
  kReofferOmitted,
  kReofferAlreadyResident,
  kReofferUnowned,
  kInvariantViolation,
};
constexpr uint8_t kLastRawOutcome = static_cast<uint8_t>(RawOutcome::kInvariantViolation);
const char* RawOutcomeName(RawOutcome o);

struct RawResult {
  RawOutcome outcome;
  uint32_t owners;
  uint32_t kicks;
  uint64_t rngDraws;
  std::vector<std::pair<uint32_t, uint64_t>> changed;  // (bucket, new word), first-touch order
};

// Raw canonical operation kinds for ApplyCanonicalBatch.
enum class CanonicalOp : uint8_t { kInsert = 0, kRemove = 1 };

}  // namespace pool
}  // namespace kvrelay
