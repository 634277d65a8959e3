#include "bindings/relay/pool_wrap.h"

#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "core/native_limits.h"
#include "bindings/relay/pool_batch_napi.h"
#include "bindings/relay/pool_js.h"
#include "bindings/relay/pool_window.h"

namespace kvrelay {

using pool::PoolFilterState;

Napi::Function PoolFilterStateWrap::Define(Napi::Env env) {
  using W = PoolFilterStateWrap;
  return DefineClass(env, "PoolFilterState",
                     {
                         InstanceMethod<&W::ApplyBatchInto>("applyBatchInto"),
                         InstanceMethod<&W::ApplyBatchAsync>("applyBatchAsync"),
                         InstanceMethod<&W::Store>("store"),
                         InstanceMethod<&W::Remove>("remove"),
                         InstanceMethod<&W::Clear>("clear"),
                         InstanceMethod<&W::Contains>("contains"),
                         InstanceMethod<&W::Owners>("owners"),
                         InstanceMethod<&W::IsResident>("isResident"),
                         InstanceMethod<&W::PendingEvents>("pendingEvents"),
                         InstanceMethod<&W::HasPendingPublication>("hasPendingPublication"),
                         InstanceMethod<&W::Drain>("drain"),
                         InstanceMethod<&W::DrainAsync>("drainAsync"),
                         InstanceMethod<&W::DrainDelta>("drainDelta"),
                         InstanceMethod<&W::DirtyBuckets>("dirtyBuckets"),
                         InstanceMethod<&W::Stats>("stats"),
                         InstanceMethod<&W::TableStats>("tableStats"),
                         InstanceMethod<&W::StateBytes>("stateBytes"),
                         InstanceMethod<&W::TablesPopulated>("tablesPopulated"),
                         InstanceMethod<&W::Words>("words"),
                         InstanceMethod<&W::CopyWordsAsync>("copyWordsAsync"),
                         InstanceMethod<&W::Close>("close"),
                         InstanceMethod<&W::Release>("release"),
                     });
}

PoolFilterStateWrap::PoolFilterStateWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PoolFilterStateWrap>(info) {
  const pooljs::FilterArgs a = pooljs::FilterArgsOf(info);
  try {
    state_ = std::make_unique<PoolFilterState>(a.bucketCount, a.seed, a.maxKicks, a.maxTrackedBlocks, a.reservation);
  } catch (const std::bad_alloc&) {
    args::ThrowCoded(info.Env(), "AllocationFailed", "cannot allocate the pool state");
  }
}

PoolFilterState& PoolFilterStateWrap::Ready(Napi::Env env) {
  if (inFlight_ > 0) args::ThrowCoded(env, "PoolBusy", "an async call on this PoolFilterState is still in flight");
  if (!state_) args::ThrowCoded(env, "PoolClosed", "PoolFilterState is closed");
  return *state_;
}

PoolFilterStateWrap::ApplySummary PoolFilterStateWrap::ApplySummary::Of(const pool::PoolFilterState& s,
                                                                       const pool::Counters& before) {
  return ApplySummary{s.counters().capacityFailures - before.capacityFailures,
                      s.counters().unknownRemovals - before.unknownRemovals, s.trackedBlocks(), s.residentCount(),
                      s.MemoryBytes()};
}

Napi::Object PoolFilterStateWrap::Summary(Napi::Env env, Napi::Uint8Array errors, const ApplySummary& summary) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("errors", errors);
  out.Set("capacityFailures", Napi::Number::New(env, static_cast<double>(summary.capacityFailures)));
  out.Set("unknownRemovals", Napi::Number::New(env, static_cast<double>(summary.unknownRemovals)));
  out.Set("trackedBlocks", Napi::Number::New(env, static_cast<double>(summary.trackedBlocks)));
  out.Set("residentBlocks", Napi::Number::New(env, static_cast<double>(summary.residentBlocks)));
  out.Set("stateBytes", Napi::Number::New(env, static_cast<double>(summary.stateBytes)));
  return out;
}

// applyBatchInto(meta, words, errors: Uint8Array, summary: Float64Array): applies a packed batch, its
// result written into the caller's arrays, which it reuses call after call: no result object, no property
// names and no errors array are made per apply (most of a small apply's cost on the calling thread,
// issue 30 item 2). errors[i]: event i's PoolError number; summary: kApplySummarySlots numbers.
Napi::Value PoolFilterStateWrap::ApplyBatchInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PoolFilterState& s = Ready(env);
  CopyPackedBatchArg(info, 0, limits::kMaxSyncBatchWords, &batch_);
  auto errors = args::U8Array(args::Arg(info, 2), "errors");
  auto summary = args::Typed<double>(args::Arg(info, 3), napi_float64_array, "summary (Float64Array)");
  if (errors.ElementLength() < batch_.events()) {
    throw Napi::RangeError::New(env, "errors must hold one byte per event (" + std::to_string(batch_.events()) + ")");
  }
  if (summary.ElementLength() < kApplySummarySlots) {
    throw Napi::RangeError::New(env, "summary must hold " + std::to_string(kApplySummarySlots) + " numbers");
  }
  const pool::Counters before = s.counters();
  s.ApplyBatch(batch_.meta.data(), batch_.meta.size(), batch_.words.data(), errors.Data());
  const ApplySummary sum = ApplySummary::Of(s, before);
  double* out = summary.Data();
  out[0] = static_cast<double>(sum.capacityFailures);
  out[1] = static_cast<double>(sum.unknownRemovals);
  out[2] = static_cast<double>(sum.trackedBlocks);
  out[3] = static_cast<double>(sum.residentBlocks);
  out[4] = static_cast<double>(sum.stateBytes);
  return env.Undefined();
}

namespace {
bool NullOrUndefined(const Napi::Value& v) { return v.IsNull() || v.IsUndefined(); }

// The ids of one synchronous store/remove, bounded like a synchronous batch.
Napi::BigUint64Array IdsArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  auto ids = args::U64Array(args::Arg(info, i), what);
  if (ids.ElementLength() > limits::kMaxSyncBatchWords) {
    throw Napi::RangeError::New(info.Env(), std::string(what) + " too long: at most " +
                                                std::to_string(limits::kMaxSyncBatchWords) + " ids per call");
  }
  return ids;
}
}  // namespace

// store(workerId, dpRank, parent: bigint|null, startPosition: number|null, extIds, tokensHashes)
Napi::Value PoolFilterStateWrap::Store(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PoolFilterState& s = Ready(env);
  pool::StoreEvent ev{};
  ev.workerId = args::U64(args::Arg(info, 0), "workerId");
  ev.dpRank = args::U32(args::Arg(info, 1), "dpRank");
  ev.hasParent = !NullOrUndefined(args::Arg(info, 2));
  if (ev.hasParent) ev.parent = args::U64(info[2], "parent");
  ev.hasStart = !NullOrUndefined(args::Arg(info, 3));
  if (ev.hasStart) ev.startPosition = args::U32(info[3], "startPosition");
  auto ext = IdsArg(info, 4, "extIds");
  auto tokens = IdsArg(info, 5, "tokensHashes");
  if (ext.ElementLength() != tokens.ElementLength()) {
    throw Napi::RangeError::New(env, "extIds and tokensHashes must have the same length");
  }
  ev.extIds = ext.Data();
  ev.tokensHashes = tokens.Data();
  ev.count = ext.ElementLength();
  return pooljs::ErrorValue(env, s.Store(ev));
}

Napi::Value PoolFilterStateWrap::Remove(const Napi::CallbackInfo& info) {
  PoolFilterState& s = Ready(info.Env());
  const uint64_t worker = args::U64(args::Arg(info, 0), "workerId");
  const uint32_t dpRank = args::U32(args::Arg(info, 1), "dpRank");
  auto ext = IdsArg(info, 2, "extIds");
  return pooljs::ErrorValue(info.Env(), s.Remove(worker, dpRank, ext.Data(), ext.ElementLength()));
}

Napi::Value PoolFilterStateWrap::Clear(const Napi::CallbackInfo& info) {
  PoolFilterState& s = Ready(info.Env());
  const uint64_t worker = args::U64(args::Arg(info, 0), "workerId");
  const uint32_t dpRank = args::U32(args::Arg(info, 1), "dpRank");
  return pooljs::ErrorValue(info.Env(), s.Clear(worker, dpRank));
}

Napi::Value PoolFilterStateWrap::Contains(const Napi::CallbackInfo& info) {
  PoolFilterState& s = Ready(info.Env());
  return Napi::Boolean::New(info.Env(), s.Contains(args::U64(args::Arg(info, 0), "hash")));
}

Napi::Value PoolFilterStateWrap::Owners(const Napi::CallbackInfo& info) {
  PoolFilterState& s = Ready(info.Env());
  return Napi::Number::New(info.Env(), s.Owners(args::U64(args::Arg(info, 0), "hash")));
}

Napi::Value PoolFilterStateWrap::IsResident(const Napi::CallbackInfo& info) {
  PoolFilterState& s = Ready(info.Env());
  return Napi::Boolean::New(info.Env(), s.IsResident(args::U64(args::Arg(info, 0), "hash")));
}

Napi::Value PoolFilterStateWrap::PendingEvents(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Ready(info.Env()).GetStats().pendingEvents));
}

Napi::Value PoolFilterStateWrap::HasPendingPublication(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), Ready(info.Env()).HasPendingPublication());
}

namespace {
// A window ended on the calling thread is bounded: `call` walks at most `limit` dirty buckets.
void RequireSyncWindow(Napi::Env env, const PoolFilterState& s, size_t limit, const char* call) {
  if (s.DirtyBuckets() <= limit) return;
  throw Napi::RangeError::New(env, std::string(call) + " ends windows of at most " + std::to_string(limit) +
                                       " dirty buckets on the calling thread; use drainAsync()");
}
}  // namespace

Napi::Value PoolFilterStateWrap::Drain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PoolFilterState& s = Ready(env);
  RequireSyncWindow(env, s, limits::kMaxSyncFilterWords, "drain()");
  return pooljs::DrainToJs(env, &s, &drainBuckets_, &drainValues_);
}

Napi::Value PoolFilterStateWrap::DrainDelta(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PoolFilterState& s = Ready(env);
  args::RequireCount(info, 1, "drainDelta(end: null | { dcId, baseSequence, sequence })");
  const WindowEnd end = WindowEndArg(info[0]);
  RequireSyncWindow(env, s, limits::kMaxSyncWindowBuckets, "drainDelta()");
  WindowDrain drain;
  const char* error = nullptr;
  if (!drain.Run(&s, end, &error)) args::ThrowCoded(env, "AllocationFailed", error);
  return drain.ToJs(env);
}

Napi::Value PoolFilterStateWrap::DirtyBuckets(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Ready(info.Env()).DirtyBuckets()));
}

Napi::Value PoolFilterStateWrap::Stats(const Napi::CallbackInfo& info) {
  return pooljs::StatsToJs(info.Env(), Ready(info.Env()).GetStats());
}

// tableStats(): the tables' growths and moves (pool::TableStats); walks every source.
Napi::Value PoolFilterStateWrap::TableStats(const Napi::CallbackInfo& info) {
  return pooljs::TableStatsToJs(info.Env(), Ready(info.Env()).GetTableStats());
}

Napi::Value PoolFilterStateWrap::StateBytes(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Ready(info.Env()).MemoryBytes()));
}

Napi::Value PoolFilterStateWrap::TablesPopulated(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), Ready(info.Env()).TablesPopulated());
}

Napi::Value PoolFilterStateWrap::Words(const Napi::CallbackInfo& info) {
  return pooljs::WordsToJs(info.Env(), Ready(info.Env()));
}

Napi::Value PoolFilterStateWrap::Close(const Napi::CallbackInfo& info) {
  if (inFlight_ > 0) args::ThrowCoded(info.Env(), "PoolBusy", "cannot close while an async call is in flight");
  state_.reset();
  return info.Env().Undefined();
}

namespace {

// () -> { liveBytes, peakBytes }: pool::ProcessStateMemory, every thread's pool states together.
Napi::Value PoolStateMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 0) throw Napi::TypeError::New(env, "poolStateMemory() takes no arguments");
  const pool::ProcessMemory m = pool::ProcessStateMemory();
  Napi::Object out = Napi::Object::New(env);
  out.Set("liveBytes", Napi::Number::New(env, static_cast<double>(m.liveBytes)));
  out.Set("peakBytes", Napi::Number::New(env, static_cast<double>(m.peakBytes)));
  return out;
}

Napi::Value ResetPoolStatePeak(const Napi::CallbackInfo& info) {
  if (info.Length() != 0) throw Napi::TypeError::New(info.Env(), "resetPoolStatePeak() takes no arguments");
  pool::ResetProcessStatePeak();
  return info.Env().Undefined();
}

}  // namespace

void InitPool(Napi::Env env, Napi::Object exports) {
  exports.Set("PoolFilterState", PoolFilterStateWrap::Define(env));
  exports.Set("poolStateMemory", Napi::Function::New(env, PoolStateMemory, "poolStateMemory"));
  exports.Set("resetPoolStatePeak", Napi::Function::New(env, ResetPoolStatePeak, "resetPoolStatePeak"));
}

}  // namespace kvrelay
