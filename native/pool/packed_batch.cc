#include "pool/packed_batch.h"

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
    case PoolError::kTrackedBlockLimit: return "TrackedBlockLimit";
  }
  return "Unknown";
}

std::string ValidatePackedBatch(const uint32_t* meta, size_t metaLen, size_t wordsLen) {
  if (metaLen % kMetaStride != 0) return "meta length is not a multiple of " + std::to_string(kMetaStride);
  uint64_t needed = 0;
  for (size_t e = 0; e < metaLen / kMetaStride; ++e) {
    const uint32_t* m = meta + e * kMetaStride;
    const uint32_t kind = m[kMetaKind], flags = m[kMetaFlags], count = m[kMetaCount];
    if (flags > kKnownFlags) return "event " + std::to_string(e) + ": unknown flags";
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

PackedEvent DecodePackedEvent(const uint32_t* m, const uint64_t* words) {
  const uint32_t kind = m[kMetaKind], flags = m[kMetaFlags], count = m[kMetaCount];
  PackedEvent ev{kind, StoreEvent{words[0], m[kMetaDpRank], false, 0, false, 0, nullptr, nullptr, count}};
  if (kind == kStored) {
    StoreEvent& s = ev.store;
    size_t w = 1;
    s.hasParent = (flags & kFlagParent) != 0;
    if (s.hasParent) s.parent = words[w++];
    s.hasStart = (flags & kFlagStart) != 0;
    s.startPosition = m[kMetaStart];
    s.extIds = words + w;
    s.tokensHashes = words + w + count;
  } else if (kind == kRemoved) {
    ev.store.extIds = words + 1;
  }
  return ev;
}

}  // namespace pool
}  // namespace kvrelay
