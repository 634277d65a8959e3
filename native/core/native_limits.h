// Bounds on the work one N-API call may do. A synchronous call runs on the event loop, so its size is
// capped to a few milliseconds of work; an async call copies its inputs on the event loop before it
// is queued, so that copy is capped too. Pure C++; exported to JavaScript as `nativeLimits`
// (limits_napi.cc), where src/native reads them: these are the only definitions.
#pragma once
#include <cstddef>

namespace kvrelay {
namespace limits {

// Words of a packed batch (applyBatchInto) and ids of one store/remove call applied synchronously:
// 2^16 words is at most ~32 k blocks, a few milliseconds of apply.
constexpr size_t kMaxSyncBatchWords = size_t{1} << 16;
// Words of a packed batch applyBatchAsync copies before queueing (32 MiB, a few ms of memcpy).
constexpr size_t kMaxAsyncBatchWords = size_t{1} << 22;
// Filter words copied or encoded synchronously (words(), encodeSnapshotChunks): 2^20 words (8 MiB).
// Bigger filters go through copyWordsAsync / encodeSnapshotAsync.
constexpr size_t kMaxSyncFilterWords = size_t{1} << 20;
// Dirty buckets of a publication window ended on the calling thread (drainDelta): a walk and an
// encode of 2^14 images, tens of microseconds; a larger window ends on a worker (drainAsync).
constexpr size_t kMaxSyncWindowBuckets = size_t{1} << 14;
// Async calls one PoolFilterState holds in flight (queued, run in order by one worker): room for the
// next apply to be queued while one runs, so the pool's thread never idles for a round trip through
// the event loop, and for a drain or word copy behind them.
constexpr size_t kMaxQueuedPoolCalls = 3;
// Tokens + prompt offsets hashBatchAsync copies before queueing (64 MiB of u32).
constexpr size_t kMaxAsyncHashInputs = size_t{1} << 24;
// Tokens (+ prompt offsets) hashed synchronously (blockHashes, sequenceHashes, hashBatch): 2^22, about
// four million tokens, a few ms; xxh3() takes as many u32's worth of bytes. Larger inputs: hashBatchAsync.
constexpr size_t kMaxSyncHashInputs = size_t{1} << 22;

}  // namespace limits
}  // namespace kvrelay
