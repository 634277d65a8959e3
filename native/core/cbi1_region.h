// Memory for encoded snapshots. A relay re-encodes a pool's snapshot for new subscribers, always
// with the same size; reusing memory whose pages are already faulted in makes encoding run at
// copy speed instead of paying ~0.5 ms per MiB of fresh pages. Thread-safe: the encoder takes
// regions on a worker thread, finalizers give them back on the JavaScript thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrelay {
namespace cbi1 {

// nullptr when out of memory.
uint8_t* TakeRegion(size_t len);
// Keeps the region for reuse while the idle total stays within the cap, else frees it.
void GiveRegion(uint8_t* region, size_t len);

}  // namespace cbi1
}  // namespace kvrelay
