// The packed engine-event batch: the one format every producer of pool events writes (the JS
// PoolEventBatch encoder, the native engine-message decoder) and the pool state reads. Layout:
//   meta:  kMetaStride u32 per event = [kind, dpRank, flags, startPosition, blockCount];
//   words: per event workerId, then
//          stored:  [parent ext id if kFlagParent], blockCount ext ids, blockCount tokens hashes;
//          removed: blockCount ext ids;
//          cleared: nothing (blockCount 0).
// Pure C++, no N-API. The numbers here are stable: they cross the N-API boundary and are exported to
// JavaScript as `packedBatchLayout`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvrelay {
namespace pool {

enum EventKind : uint32_t { kStored = 1, kRemoved = 2, kCleared = 3 };
constexpr uint32_t kFlagParent = 1;
constexpr uint32_t kFlagStart = 2;
constexpr uint32_t kKnownFlags = kFlagParent | kFlagStart;
constexpr size_t kMetaStride = 5;
// Field offsets inside one event's meta entry.
constexpr size_t kMetaKind = 0;
constexpr size_t kMetaDpRank = 1;
constexpr size_t kMetaFlags = 2;
constexpr size_t kMetaStart = 3;
constexpr size_t kMetaCount = 4;

// Per-event outcome, one byte per event in apply results.
enum class PoolError : uint8_t {
  kNone = 0,
  kParentBlockNotFound = 1,
  kInvalidBlockSequence = 2,
  kOwnershipDegreeOverflow = 3,
  kIndexerInvariantViolation = 4,
  kAllocationFailed = 5,
  // The store would take the pool past its tracked-block limit: rejected whole, state untouched.
  kTrackedBlockLimit = 6,
};
constexpr uint8_t kLastPoolError = static_cast<uint8_t>(PoolError::kTrackedBlockLimit);
// nullptr for kNone.
const char* PoolErrorName(PoolError e);

// A stored event's fields; removals use workerId, dpRank, extIds and count only.
struct StoreEvent {
  uint64_t workerId;
  uint32_t dpRank;
  bool hasParent;
  uint64_t parent;
  bool hasStart;
  uint32_t startPosition;
  const uint64_t* extIds;
  const uint64_t* tokensHashes;
  size_t count;
};

// One event of a packed batch, decoded (pointers into the batch's words).
struct PackedEvent {
  uint32_t kind;
  StoreEvent store;
};

// Checks the encoding; returns an empty string when it is well formed, else what is wrong.
std::string ValidatePackedBatch(const uint32_t* meta, size_t metaLen, size_t wordsLen);

// Words the event whose meta entry is `m` occupies (the batch must be valid).
inline size_t PackedEventWords(const uint32_t* m) {
  const size_t count = m[kMetaCount];
  if (m[kMetaKind] == kStored) return 1 + ((m[kMetaFlags] & kFlagParent) ? 1 : 0) + 2 * count;
  return 1 + count;
}

// Decodes the event whose meta entry is `m` and whose words start at `words` (the batch must be valid).
PackedEvent DecodePackedEvent(const uint32_t* m, const uint64_t* words);

}  // namespace pool
}  // namespace kvrelay
