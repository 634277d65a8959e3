// The async calls of PoolFilterState: work that can take milliseconds (a big batch, a 2^24-bucket
// word copy, a window drain and its delta encoding) runs on a libuv worker thread while the pool is
// marked busy.
#include <cstring>
#include <optional>
#include <utility>

#include "napi_args.h"
#include "native_limits.h"
#include "pool_batch_napi.h"
#include "pool_window.h"
#include "pool_wrap.h"

namespace kvrelay {
namespace {

using pool::PoolFilterState;

// Base for the async calls: marks the pool busy, keeps the JS object alive, settles a Promise.
class PoolWorker : public Napi::AsyncWorker {
 public:
  PoolWorker(Napi::Env env, PoolFilterStateWrap* wrap, const char* name)
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
  PoolFilterStateWrap* wrap_;
  Napi::ObjectReference self_;
};

// Applies its own copy of the batch (taken and validated on the main thread), so the caller's
// arrays are free the moment the call returns; with `end`, then ends the window in the same job.
class ApplyBatchWorker : public PoolWorker {
 public:
  ApplyBatchWorker(Napi::Env env, PoolFilterStateWrap* wrap, PackedBatch&& batch, Napi::Uint8Array errors,
                   std::optional<WindowEnd> end)
      : PoolWorker(env, wrap, "kvrelay.applyBatchAsync"),
        batch_(std::move(batch)),
        errorsRef_(Napi::Persistent(errors)),
        errors_(errors.Data()),
        state_(wrap->state()),
        end_(end) {}

 protected:
  void Execute() override {
    const pool::Counters before = state_->counters();
    state_->ApplyBatch(batch_.meta.data(), batch_.meta.size(), batch_.words.data(), errors_);
    summary_ = PoolFilterStateWrap::ApplySummary::Of(*state_, before);
    const char* error = nullptr;
    if (end_ && !drain_.Run(state_, *end_, &error)) SetError(error);
  }
  Napi::Value Result() override {
    Napi::Object summary = PoolFilterStateWrap::Summary(Env(), errorsRef_.Value(), summary_);
    if (end_) summary.Set("drained", drain_.ToJs(Env()));
    return summary;
  }

 private:
  PackedBatch batch_;
  // Not reachable from JavaScript until the promise resolves with it.
  Napi::Reference<Napi::Uint8Array> errorsRef_;
  uint8_t* errors_;
  PoolFilterState* state_;
  std::optional<WindowEnd> end_;
  WindowDrain drain_;
  PoolFilterStateWrap::ApplySummary summary_{};
};

class DrainWorker : public PoolWorker {
 public:
  DrainWorker(Napi::Env env, PoolFilterStateWrap* wrap, WindowEnd end)
      : PoolWorker(env, wrap, "kvrelay.drainAsync"), state_(wrap->state()), end_(end) {}

 protected:
  void Execute() override {
    const char* error = nullptr;
    if (!drain_.Run(state_, end_, &error)) SetError(error);
  }
  Napi::Value Result() override { return drain_.ToJs(Env()); }

 private:
  PoolFilterState* state_;
  WindowEnd end_;
  WindowDrain drain_;
};

// The destination array is allocated (lazily zeroed) on the main thread; only the copy runs on the
// worker, so a 2^24-bucket snapshot never stalls the event loop.
class CopyWordsWorker : public PoolWorker {
 public:
  CopyWordsWorker(Napi::Env env, PoolFilterStateWrap* wrap, Napi::BigUint64Array out)
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
  PoolFilterState* state_;
};

template <typename Worker, typename... Args>
Napi::Promise Queue(Napi::Env env, PoolFilterStateWrap* wrap, Args&&... args) {
  auto* worker = new Worker(env, wrap, std::forward<Args>(args)...);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

Napi::Value PoolFilterStateWrap::DrainAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Ready(env);
  args::RequireCount(info, 1, "drainAsync(end: null | { dcId, baseSequence, sequence })");
  return Queue<DrainWorker>(env, this, WindowEndArg(info[0]));
}

Napi::Value PoolFilterStateWrap::ApplyBatchAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Ready(env);
  PackedBatch batch;
  CopyPackedBatchArg(info, 0, limits::kMaxAsyncBatchWords, &batch);
  std::optional<WindowEnd> end;
  if (info.Length() > 2 && !info[2].IsUndefined()) end = WindowEndArg(info[2]);
  Napi::Uint8Array errors = Napi::Uint8Array::New(env, batch.events());
  return Queue<ApplyBatchWorker>(env, this, std::move(batch), errors, end);
}

Napi::Value PoolFilterStateWrap::CopyWordsAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PoolFilterState& s = Ready(env);
  return Queue<CopyWordsWorker>(env, this, Napi::BigUint64Array::New(env, s.filter().bucketCount()));
}

}  // namespace kvrelay
