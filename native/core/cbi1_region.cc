#include "core/cbi1_region.h"

#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cbi1.h"

namespace kvrelay {
namespace cbi1 {
namespace {

// Regions smaller than this are cheap to fault in and are not kept.
constexpr size_t kMinPooledRegion = 1024 * 1024;
// At most one maximum snapshot (2^24 buckets, 32 chunks) stays idle.
constexpr size_t kMaxIdleBytes = (kMaxBucketCount / kSnapshotChunkBuckets) * kMaxFrameBytes;

std::mutex idleMutex;
std::vector<std::pair<size_t, uint8_t*>> idleRegions;
size_t idleBytes = 0;

}  // namespace

uint8_t* TakeRegion(size_t len) {
  if (len >= kMinPooledRegion) {
    std::lock_guard<std::mutex> lock(idleMutex);
    for (auto it = idleRegions.begin(); it != idleRegions.end(); ++it) {
      if (it->first == len) {
        uint8_t* region = it->second;
        idleRegions.erase(it);
        idleBytes -= len;
        return region;
      }
    }
  }
  return static_cast<uint8_t*>(std::malloc(len));
}

void GiveRegion(uint8_t* region, size_t len) {
  if (len >= kMinPooledRegion) {
    std::lock_guard<std::mutex> lock(idleMutex);
    if (idleBytes + len <= kMaxIdleBytes) {
      idleRegions.emplace_back(len, region);
      idleBytes += len;
      return;
    }
  }
  std::free(region);
}

}  // namespace cbi1
}  // namespace kvrelay
