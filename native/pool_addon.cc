// N-API class PoolState: owns one pool::PoolState. Calls are serialized by the caller; while an async
// call (applyBatchAsync, copyWordsAsync) is in flight every other call throws Error{code: 'PoolBusy'}.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "modules.h"
#include "napi_args.h"
#include "pool_state.h"

namespace kvrelay {
namespace {

using pool::PoolError;
using pool::PoolState;

Napi::Value ErrorValue(Napi::Env env, PoolError e) {
  const char* name = pool::PoolErrorName(e);
  return name == nullptr ? env.Null() : Napi::String::New(env, name);
}

// One error-name table for the packed results, indexed by PoolError value.
Napi::Array ErrorNames(Napi::Env env) {
  Napi::Array names = Napi::Array::New(env);
  for (uint8_t i = 0; i <= static_cast<uint8_t>(PoolError::kAllocationFailed); ++i) {
    names.Set(i, ErrorValue(env, static_cast<PoolError>(i)));
  }
  return names;
}

class PoolStateWrap : public Napi::ObjectWrap<PoolStateWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "PoolState",
                       {
                           InstanceMethod<&PoolStateWrap::ApplyBatch>("applyBatch"),
                           InstanceMethod<&PoolStateWrap::ApplyBatchAsync>("applyBatchAsync"),
                           InstanceMethod<&PoolStateWrap::Store>("store"),
                           InstanceMethod<&PoolStateWrap::Remove>("remove"),
                           InstanceMethod<&PoolStateWrap::Clear>("clear"),
                           InstanceMethod<&PoolStateWrap::InsertCanonical>("insertCanonical"),
                           InstanceMethod<&PoolStateWrap::RemoveCanonical>("removeCanonical"),
                           InstanceMethod<&PoolStateWrap::ReofferCanonical>("reofferCanonical"),
                           InstanceMethod<&PoolStateWrap::ApplyCanonicalBatch>("applyCanonicalBatch"),
                           InstanceMethod<&PoolStateWrap::Contains>("contains"),
                           InstanceMethod<&PoolStateWrap::Owners>("owners"),
                           InstanceMethod<&PoolStateWrap::IsResident>("isResident"),
                           InstanceMethod<&PoolStateWrap::PendingEvents>("pendingEvents"),
                           InstanceMethod<&PoolStateWrap::HasPendingPublication>("hasPendingPublication"),
                           InstanceMethod<&PoolStateWrap::Drain>("drain"),
                           InstanceMethod<&PoolStateWrap::Stats>("stats"),
                           InstanceMethod<&PoolStateWrap::Words>("words"),
                           InstanceMethod<&PoolStateWrap::CopyWordsAsync>("copyWordsAsync"),
                           InstanceMethod<&PoolStateWrap::Close>("close"),
                       });
  }

  explicit PoolStateWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PoolStateWrap>(info) {
    Napi::Env env = info.Env();
    const uint64_t bucketCount = args::U64(args::Arg(info, 0), "bucketCount", true);
    if (!ckf::IsValidBucketCount(bucketCount) || bucketCount > ckf::kMaxBucketCount) {
      throw Napi::RangeError::New(env, "bucketCount must be a power of two in [2, 2^24]");
    }
    const uint64_t seed = args::U64(args::Arg(info, 1), "seed");
    const uint32_t maxKicks = args::U32(args::Arg(info, 2), "maxKicks");
    if (maxKicks < 1 || maxKicks > ckf::kMaxKicks) {
      Napi::Error e = Napi::RangeError::New(env, "maxKicks must be in [1, 4096]");
      e.Set("code", Napi::String::New(env, "InvalidMaxKicks"));
      throw e;
    }
    try {
      state_ = std::make_unique<PoolState>(static_cast<uint32_t>(bucketCount), seed, maxKicks);
    } catch (const std::bad_alloc&) {
      args::ThrowCoded(env, "AllocationFailed", "cannot allocate the pool state");
    }
    errorNames_ = Napi::Persistent(ErrorNames(env));
  }

  PoolState& Ready(Napi::Env env) {
    if (busy_) args::ThrowCoded(env, "PoolBusy", "an async call on this PoolState is still in flight");
    if (!state_) args::ThrowCoded(env, "PoolClosed", "PoolState is closed");
    return *state_;
  }
  void SetBusy(bool busy) { busy_ = busy; }
  PoolState* state() { return state_.get(); }
  Napi::Object Summary(Napi::Env env, Napi::Uint8Array errors, uint64_t capacity, uint64_t unknown) {
    Napi::Object out = Napi::Object::New(env);
    out.Set("errors", errors);
    out.Set("errorNames", errorNames_.Value());
    out.Set("capacityFailures", Napi::Number::New(env, static_cast<double>(capacity)));
    out.Set("unknownRemovals", Napi::Number::New(env, static_cast<double>(unknown)));
    return out;
  }

 private:
  struct Batch {
    Napi::Uint32Array meta;
    Napi::BigUint64Array words;
    Napi::Uint8Array errors;
  };
  Batch ParseBatch(const Napi::CallbackInfo& info) {
    Batch b{args::U32Array(args::Arg(info, 0), "meta"), args::U64Array(args::Arg(info, 1), "words"), {}};
    const std::string problem =
        PoolState::ValidateBatch(b.meta.Data(), b.meta.ElementLength(), b.words.Data(), b.words.ElementLength());
    if (!problem.empty()) throw Napi::RangeError::New(info.Env(), "malformed event batch: " + problem);
    b.errors = Napi::Uint8Array::New(info.Env(), b.meta.ElementLength() / pool::kMetaStride);
    return b;
  }

  Napi::Value ApplyBatch(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    Batch b = ParseBatch(info);
    const pool::Counters before = s.counters();
    s.ApplyBatch(b.meta.Data(), b.meta.ElementLength(), b.words.Data(), b.errors.Data());
    return Summary(info.Env(), b.errors, s.counters().capacityFailures - before.capacityFailures,
                   s.counters().unknownRemovals - before.unknownRemovals);
  }

  Napi::Value ApplyBatchAsync(const Napi::CallbackInfo& info);
  Napi::Value CopyWordsAsync(const Napi::CallbackInfo& info);

  static bool NullOrUndefined(const Napi::Value& v) { return v.IsNull() || v.IsUndefined(); }

  // store(workerId, dpRank, parent: bigint|null, startPosition: number|null, extIds, tokensHashes)
  Napi::Value Store(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    PoolState& s = Ready(env);
    pool::StoreEvent ev{};
    ev.workerId = args::U64(args::Arg(info, 0), "workerId");
    ev.dpRank = args::U32(args::Arg(info, 1), "dpRank");
    ev.hasParent = !NullOrUndefined(args::Arg(info, 2));
    if (ev.hasParent) ev.parent = args::U64(info[2], "parent");
    ev.hasStart = !NullOrUndefined(args::Arg(info, 3));
    if (ev.hasStart) ev.startPosition = args::U32(info[3], "startPosition");
    auto ext = args::U64Array(args::Arg(info, 4), "extIds");
    auto tokens = args::U64Array(args::Arg(info, 5), "tokensHashes");
    if (ext.ElementLength() != tokens.ElementLength()) {
      throw Napi::RangeError::New(env, "extIds and tokensHashes must have the same length");
    }
    ev.extIds = ext.Data();
    ev.tokensHashes = tokens.Data();
    ev.count = ext.ElementLength();
    return ErrorValue(env, s.Store(ev));
  }

  Napi::Value Remove(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    const uint64_t worker = args::U64(args::Arg(info, 0), "workerId");
    const uint32_t dpRank = args::U32(args::Arg(info, 1), "dpRank");
    auto ext = args::U64Array(args::Arg(info, 2), "extIds");
    return ErrorValue(info.Env(), s.Remove(worker, dpRank, ext.Data(), ext.ElementLength()));
  }

  Napi::Value Clear(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    const uint64_t worker = args::U64(args::Arg(info, 0), "workerId");
    const uint32_t dpRank = args::U32(args::Arg(info, 1), "dpRank");
    return ErrorValue(info.Env(), s.Clear(worker, dpRank));
  }

  Napi::Value Raw(const Napi::CallbackInfo& info, pool::RawResult (PoolState::*op)(uint64_t)) {
    Napi::Env env = info.Env();
    PoolState& s = Ready(env);
    const pool::RawResult r = (s.*op)(args::U64(args::Arg(info, 0), "hash"));
    Napi::Object out = Napi::Object::New(env);
    out.Set("outcome", Napi::String::New(env, pool::RawOutcomeName(r.outcome)));
    out.Set("owners", Napi::Number::New(env, r.owners));
    out.Set("kicks", Napi::Number::New(env, r.kicks));
    out.Set("rngDraws", Napi::Number::New(env, static_cast<double>(r.rngDraws)));
    auto buckets = Napi::Uint32Array::New(env, r.changed.size());
    auto words = Napi::BigUint64Array::New(env, r.changed.size());
    for (size_t i = 0; i < r.changed.size(); ++i) {
      buckets[i] = r.changed[i].first;
      words[i] = r.changed[i].second;
    }
    out.Set("changedBuckets", buckets);
    out.Set("changedWords", words);
    out.Set("rngState", Napi::BigInt::New(env, s.filter().rngState()));
    return out;
  }
  Napi::Value InsertCanonical(const Napi::CallbackInfo& info) { return Raw(info, &PoolState::InsertCanonical); }
  Napi::Value RemoveCanonical(const Napi::CallbackInfo& info) { return Raw(info, &PoolState::RemoveCanonical); }
  Napi::Value ReofferCanonical(const Napi::CallbackInfo& info) { return Raw(info, &PoolState::ReofferCanonical); }

  // applyCanonicalBatch(ops: Uint8Array (0 insert, 1 remove), hashes: BigUint64Array)
  //   -> { outcomes: Uint8Array, outcomeNames: string[] }
  Napi::Value ApplyCanonicalBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    PoolState& s = Ready(env);
    auto ops = args::Typed<uint8_t>(args::Arg(info, 0), napi_uint8_array, "ops (Uint8Array)");
    auto hashes = args::U64Array(args::Arg(info, 1), "hashes");
    const size_t n = ops.ElementLength();
    if (hashes.ElementLength() != n) throw Napi::RangeError::New(env, "ops and hashes differ in length");
    for (size_t i = 0; i < n; ++i) {
      if (ops[i] > static_cast<uint8_t>(pool::CanonicalOp::kRemove)) {
        throw Napi::RangeError::New(env, "ops entries must be 0 (insert) or 1 (remove)");
      }
    }
    auto outcomes = Napi::Uint8Array::New(env, n);
    s.ApplyCanonicalBatch(reinterpret_cast<const pool::CanonicalOp*>(ops.Data()), hashes.Data(), n,
                          reinterpret_cast<pool::RawOutcome*>(outcomes.Data()));
    Napi::Array names = Napi::Array::New(env);
    for (uint8_t i = 0; i <= static_cast<uint8_t>(pool::RawOutcome::kInvariantViolation); ++i) {
      names.Set(i, Napi::String::New(env, pool::RawOutcomeName(static_cast<pool::RawOutcome>(i))));
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("outcomes", outcomes);
    out.Set("outcomeNames", names);
    return out;
  }

  Napi::Value Contains(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    return Napi::Boolean::New(info.Env(), s.Contains(args::U64(args::Arg(info, 0), "hash")));
  }
  Napi::Value Owners(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    return Napi::Number::New(info.Env(), s.Owners(args::U64(args::Arg(info, 0), "hash")));
  }
  Napi::Value IsResident(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    return Napi::Boolean::New(info.Env(), s.IsResident(args::U64(args::Arg(info, 0), "hash")));
  }
  Napi::Value PendingEvents(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(Ready(info.Env()).GetStats().pendingEvents));
  }
  Napi::Value HasPendingPublication(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), Ready(info.Env()).HasPendingPublication());
  }

  Napi::Value Drain(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    PoolState& s = Ready(env);
    if (!s.Drain(&drainBuckets_, &drainValues_)) return env.Null();
    auto buckets = Napi::Uint32Array::New(env, drainBuckets_.size());
    auto values = Napi::BigUint64Array::New(env, drainValues_.size());
    std::memcpy(buckets.Data(), drainBuckets_.data(), drainBuckets_.size() * sizeof(uint32_t));
    std::memcpy(values.Data(), drainValues_.data(), drainValues_.size() * sizeof(uint64_t));
    Napi::Object out = Napi::Object::New(env);
    out.Set("buckets", buckets);
    out.Set("values", values);
    return out;
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const pool::Stats st = Ready(env).GetStats();
    auto num = [&](uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
    Napi::Object out = Napi::Object::New(env);
    out.Set("bucketCount", num(st.bucketCount));
    out.Set("residentCount", num(st.residentCount));
    out.Set("ownedHashes", num(st.ownedHashes));
    out.Set("lineageEntries", num(st.lineageEntries));
    out.Set("sourceCount", num(st.sourceCount));
    out.Set("pendingEvents", num(st.pendingEvents));
    out.Set("dirtyBuckets", num(st.dirtyBuckets));
    out.Set("capacityFailures", num(st.counters.capacityFailures));
    out.Set("unknownRemovals", num(st.counters.unknownRemovals));
    out.Set("parentNotFound", num(st.counters.parentNotFound));
    out.Set("invariantViolations", num(st.counters.invariantViolations));
    out.Set("loadFactor", Napi::Number::New(env, static_cast<double>(st.residentCount) / (4.0 * st.bucketCount)));
    out.Set("rngState", Napi::BigInt::New(env, st.rngState));
    return out;
  }

  Napi::Value Words(const Napi::CallbackInfo& info) {
    PoolState& s = Ready(info.Env());
    const uint32_t n = s.filter().bucketCount();
    auto out = Napi::BigUint64Array::New(info.Env(), n);
    std::memcpy(out.Data(), s.filter().words(), size_t{n} * sizeof(uint64_t));
    return out;
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (busy_) args::ThrowCoded(info.Env(), "PoolBusy", "cannot close while an async call is in flight");
    state_.reset();
    return info.Env().Undefined();
  }

  std::unique_ptr<PoolState> state_;
  bool busy_ = false;
  Napi::Reference<Napi::Array> errorNames_;
  std::vector<uint32_t> drainBuckets_;
  std::vector<uint64_t> drainValues_;
};

// Base for the async calls: marks the pool busy, keeps the JS object alive, settles a Promise.
class PoolWorker : public Napi::AsyncWorker {
 public:
  PoolWorker(Napi::Env env, PoolStateWrap* wrap, const char* name)
      : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)), wrap_(wrap) {
    self_ = Napi::Persistent(wrap->Value());
    wrap_->SetBusy(true);
  }
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void OnOK() override {
    wrap_->SetBusy(false);
    deferred_.Resolve(Result());
  }
  void OnError(const Napi::Error& e) override {
    wrap_->SetBusy(false);
    deferred_.Reject(e.Value());
  }
  virtual Napi::Value Result() = 0;

  Napi::Promise::Deferred deferred_;
  PoolStateWrap* wrap_;
  Napi::ObjectReference self_;
};

class ApplyBatchWorker : public PoolWorker {
 public:
  ApplyBatchWorker(Napi::Env env, PoolStateWrap* wrap, Napi::Uint32Array meta, Napi::BigUint64Array words,
                   Napi::Uint8Array errors)
      : PoolWorker(env, wrap, "kvrelay.applyBatchAsync"),
        metaRef_(Napi::Persistent(meta)),
        wordsRef_(Napi::Persistent(words)),
        errorsRef_(Napi::Persistent(errors)),
        meta_(meta.Data()),
        metaLen_(meta.ElementLength()),
        words_(words.Data()),
        errors_(errors.Data()),
        state_(wrap->state()) {}

 protected:
  void Execute() override {
    const pool::Counters before = state_->counters();
    state_->ApplyBatch(meta_, metaLen_, words_, errors_);
    capacity_ = state_->counters().capacityFailures - before.capacityFailures;
    unknown_ = state_->counters().unknownRemovals - before.unknownRemovals;
  }
  Napi::Value Result() override { return wrap_->Summary(Env(), errorsRef_.Value(), capacity_, unknown_); }

 private:
  Napi::Reference<Napi::Uint32Array> metaRef_;
  Napi::Reference<Napi::BigUint64Array> wordsRef_;
  Napi::Reference<Napi::Uint8Array> errorsRef_;
  const uint32_t* meta_;
  size_t metaLen_;
  const uint64_t* words_;
  uint8_t* errors_;
  PoolState* state_;
  uint64_t capacity_ = 0;
  uint64_t unknown_ = 0;
};

// The destination array is allocated (lazily zeroed) on the main thread; only the copy runs on the
// worker, so a 2^24-bucket snapshot never stalls the event loop.
class CopyWordsWorker : public PoolWorker {
 public:
  CopyWordsWorker(Napi::Env env, PoolStateWrap* wrap, Napi::BigUint64Array out)
      : PoolWorker(env, wrap, "kvrelay.copyWordsAsync"), outRef_(Napi::Persistent(out)), out_(out.Data()),
        state_(wrap->state()) {}

 protected:
  void Execute() override {
    std::memcpy(out_, state_->filter().words(), size_t{state_->filter().bucketCount()} * sizeof(uint64_t));
  }
  Napi::Value Result() override { return outRef_.Value(); }

 private:
  Napi::Reference<Napi::BigUint64Array> outRef_;
  uint64_t* out_;
  PoolState* state_;
};

Napi::Value PoolStateWrap::ApplyBatchAsync(const Napi::CallbackInfo& info) {
  Ready(info.Env());
  Batch b = ParseBatch(info);
  auto* worker = new ApplyBatchWorker(info.Env(), this, b.meta, b.words, b.errors);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value PoolStateWrap::CopyWordsAsync(const Napi::CallbackInfo& info) {
  PoolState& s = Ready(info.Env());
  auto out = Napi::BigUint64Array::New(info.Env(), s.filter().bucketCount());
  auto* worker = new CopyWordsWorker(info.Env(), this, out);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

void InitPool(Napi::Env env, Napi::Object exports) {
  exports.Set("PoolState", PoolStateWrap::Define(env));
}

}  // namespace kvrelay
