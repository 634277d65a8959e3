// N-API class CanonicalPool (test/bench addon only): a PoolFilterState driven by raw canonical-hash
// operations, with the per-op write lists and RNG state the ckf_operations.json vectors check.
#include <memory>
#include <vector>

#include "bindings/napi_args.h"
#include "pool/pool_filter_state.h"
#include "bindings/relay/pool_js.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

using pool::PoolFilterState;

class CanonicalPoolWrap : public Napi::ObjectWrap<CanonicalPoolWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    using W = CanonicalPoolWrap;
    return DefineClass(env, "CanonicalPool",
                       {
                           InstanceMethod<&W::InsertCanonical>("insertCanonical"),
                           InstanceMethod<&W::RemoveCanonical>("removeCanonical"),
                           InstanceMethod<&W::ReofferCanonical>("reofferCanonical"),
                           InstanceMethod<&W::ApplyCanonicalBatch>("applyCanonicalBatch"),
                           InstanceMethod<&W::Contains>("contains"),
                           InstanceMethod<&W::Owners>("owners"),
                           InstanceMethod<&W::IsResident>("isResident"),
                           InstanceMethod<&W::Drain>("drain"),
                           InstanceMethod<&W::Stats>("stats"),
                           InstanceMethod<&W::Words>("words"),
                       });
  }

  explicit CanonicalPoolWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CanonicalPoolWrap>(info) {
    const pooljs::FilterArgs a = pooljs::FilterArgsOf(info);
    state_ = std::make_unique<PoolFilterState>(a.bucketCount, a.seed, a.maxKicks);
  }

 private:
  Napi::Value Raw(const Napi::CallbackInfo& info, pool::RawResult (PoolFilterState::*op)(uint64_t)) {
    Napi::Env env = info.Env();
    const pool::RawResult r = (state_.get()->*op)(args::U64(args::Arg(info, 0), "hash"));
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
    out.Set("rngState", Napi::BigInt::New(env, state_->filter().rngState()));
    return out;
  }
  Napi::Value InsertCanonical(const Napi::CallbackInfo& info) { return Raw(info, &PoolFilterState::InsertCanonical); }
  Napi::Value RemoveCanonical(const Napi::CallbackInfo& info) { return Raw(info, &PoolFilterState::RemoveCanonical); }
  Napi::Value ReofferCanonical(const Napi::CallbackInfo& info) { return Raw(info, &PoolFilterState::ReofferCanonical); }

  // applyCanonicalBatch(ops: Uint8Array (0 insert, 1 remove), hashes: BigUint64Array)
  //   -> { outcomes: Uint8Array, outcomeNames: string[] }
  Napi::Value ApplyCanonicalBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
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
    state_->ApplyCanonicalBatch(reinterpret_cast<const pool::CanonicalOp*>(ops.Data()), hashes.Data(), n,
                                reinterpret_cast<pool::RawOutcome*>(outcomes.Data()));
    Napi::Array names = Napi::Array::New(env);
    for (uint8_t i = 0; i <= pool::kLastRawOutcome; ++i) {
      names.Set(i, Napi::String::New(env, pool::RawOutcomeName(static_cast<pool::RawOutcome>(i))));
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("outcomes", outcomes);
    out.Set("outcomeNames", names);
    return out;
  }

  Napi::Value Contains(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), state_->Contains(args::U64(args::Arg(info, 0), "hash")));
  }
  Napi::Value Owners(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_->Owners(args::U64(args::Arg(info, 0), "hash")));
  }
  Napi::Value IsResident(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), state_->IsResident(args::U64(args::Arg(info, 0), "hash")));
  }
  Napi::Value Drain(const Napi::CallbackInfo& info) {
    return pooljs::DrainToJs(info.Env(), state_.get(), &drainBuckets_, &drainValues_);
  }
  Napi::Value Stats(const Napi::CallbackInfo& info) { return pooljs::StatsToJs(info.Env(), state_->GetStats()); }
  Napi::Value Words(const Napi::CallbackInfo& info) { return pooljs::WordsToJs(info.Env(), *state_); }

  std::unique_ptr<PoolFilterState> state_;
  std::vector<uint32_t> drainBuckets_;
  std::vector<uint64_t> drainValues_;
};

}  // namespace

void InitCanonicalPool(Napi::Env env, Napi::Object exports) {
  exports.Set("CanonicalPool", CanonicalPoolWrap::Define(env));
}

}  // namespace testing
}  // namespace kvrelay
