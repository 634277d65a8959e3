// N-API class PoolFilterState: owns one pool::PoolFilterState. Calls are serialized by the caller.
// Async calls (applyBatchAsync, drainAsync, copyWordsAsync; pool_workers.cc) may be queued behind
// each other, up to limits::kMaxQueuedPoolCalls, and run in the order they were made, one after
// another on one worker thread; while any is in flight every synchronous call throws
// Error{code: 'PoolBusy'}.
#pragma once
#include <napi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "bindings/relay/pool_batch_napi.h"
#include "pool/pool_filter_state.h"

namespace kvrelay {

class PoolTask;  // an async call (pool_workers.cc)

class PoolFilterStateWrap : public Napi::ObjectWrap<PoolFilterStateWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit PoolFilterStateWrap(const Napi::CallbackInfo& info);

  // The state, or a thrown PoolBusy / PoolClosed.
  pool::PoolFilterState& Ready(Napi::Env env);
  // Async calls (pool_workers.cc). Enter admits one more (a thrown PoolBusy past
  // limits::kMaxQueuedPoolCalls, PoolClosed) and Leave, on the main thread, ends it once it settled.
  void Enter(Napi::Env env);
  void Leave() { --inFlight_; }
  // Queues an admitted call; the pool's runner takes it after those queued before it.
  void Submit(Napi::Env env, std::unique_ptr<PoolTask> task);
  // A runner that gave its thread back with calls still queued: another takes them up.
  void Resume(Napi::Env env);
  // On the runner's thread: the next queued call, or null (the runner then ends; the next Submit
  // starts another).
  PoolTask* NextTask();
  pool::PoolFilterState* state() { return state_.get(); }
  // What an apply changed (counters since `before`) and left (sizes), taken on the applying thread.
  struct ApplySummary {
    uint64_t capacityFailures;
    uint64_t unknownRemovals;
    uint64_t trackedBlocks;
    uint64_t residentBlocks;
    uint64_t stateBytes;
    static ApplySummary Of(const pool::PoolFilterState& s, const pool::Counters& before);
  };
  // The result of an apply: { errors, capacityFailures, unknownRemovals, trackedBlocks, residentBlocks,
  // stateBytes }.
  static Napi::Object Summary(Napi::Env env, Napi::Uint8Array errors, const ApplySummary& summary);
  // Numbers applyBatchInto writes: capacityFailures, unknownRemovals, trackedBlocks, residentBlocks, stateBytes.
  static constexpr size_t kApplySummarySlots = 5;

 private:
  Napi::Value ApplyBatchInto(const Napi::CallbackInfo& info);
  Napi::Value ApplyBatchAsync(const Napi::CallbackInfo& info);  // pool_workers.cc
  Napi::Value Store(const Napi::CallbackInfo& info);
  Napi::Value Remove(const Napi::CallbackInfo& info);
  Napi::Value Clear(const Napi::CallbackInfo& info);
  Napi::Value Contains(const Napi::CallbackInfo& info);
  Napi::Value Owners(const Napi::CallbackInfo& info);
  Napi::Value IsResident(const Napi::CallbackInfo& info);
  Napi::Value PendingEvents(const Napi::CallbackInfo& info);
  Napi::Value HasPendingPublication(const Napi::CallbackInfo& info);
  // RangeError above limits::kMaxSyncFilterWords dirty buckets (use DrainAsync).
  Napi::Value Drain(const Napi::CallbackInfo& info);
  // Ends the window on a worker: encoded as a delta frame, or discarded and counted.
  Napi::Value DrainAsync(const Napi::CallbackInfo& info);  // pool_workers.cc
  // DrainAsync on the calling thread, for at most limits::kMaxSyncWindowBuckets dirty buckets.
  Napi::Value DrainDelta(const Napi::CallbackInfo& info);
  Napi::Value DirtyBuckets(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value TableStats(const Napi::CallbackInfo& info);
  Napi::Value StateBytes(const Napi::CallbackInfo& info);
  Napi::Value TablesPopulated(const Napi::CallbackInfo& info);
  Napi::Value Words(const Napi::CallbackInfo& info);
  Napi::Value CopyWordsAsync(const Napi::CallbackInfo& info);  // pool_workers.cc
  Napi::Value Close(const Napi::CallbackInfo& info);
  // Frees the state on the releaser's thread; a promise of the tables unmapped (pool_release.cc).
  Napi::Value Release(const Napi::CallbackInfo& info);

  std::unique_ptr<pool::PoolFilterState> state_;
  // Main thread only: async calls admitted and not yet settled.
  uint32_t inFlight_ = 0;
  // Shared with the runner's thread: calls queued and not yet taken, and whether a runner is on them.
  std::mutex tasksMutex_;
  std::deque<PoolTask*> tasks_;
  bool runnerActive_ = false;
  PackedBatch batch_;  // the synchronous apply's copy of its arguments (storage reused)
  std::vector<uint32_t> drainBuckets_;
  std::vector<uint64_t> drainValues_;
};

}  // namespace kvrelay
