// The async calls of PoolFilterState: work that can take milliseconds (a big batch, a 2^24-bucket
// word copy, a window drain and its delta encoding) runs on a libuv worker thread while the pool is
// marked busy.
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "cbi1.h"
#include "napi_args.h"
#include "native_limits.h"
#include "pool_batch_napi.h"
#include "pool_wrap.h"

namespace kvrelay {
namespace {

using pool::PoolFilterState;

// How an async call ends the publication window: a delta (baseSequence -> sequence, published by dcId)
// or, with nobody to publish to, a discard that only counts.
struct WindowEnd {
  bool discard;
  uint64_t dcId;
  uint64_t baseSequence;
  uint64_t sequence;
};

// `end`: null to discard, or { dcId, baseSequence, sequence }.
WindowEnd WindowEndArg(const Napi::Value& v) {
  if (v.IsNull()) return WindowEnd{true, 0, 0, 0};
  if (!v.IsObject()) throw Napi::TypeError::New(v.Env(), "end must be null or { dcId, baseSequence, sequence }");
  Napi::Object o = v.As<Napi::Object>();
  return WindowEnd{false, args::U64(o.Get("dcId"), "end.dcId"), args::U64(o.Get("baseSequence"), "end.baseSequence"),
                   args::U64(o.Get("sequence"), "end.sequence")};
}

// Ends the publication window on the worker thread and, for a delta, encodes it there as one CBI1
// delta frame in the pool's own format: the event loop never walks a dirty window (a clear of a large
// source touches millions of buckets) nor holds its images. A window of more images than one delta
// frame carries comes back as its count alone (the hub re-snapshots instead).
class WindowDrain {
 public:
  // On the worker thread; false (with `error` set) if the frame cannot be allocated.
  bool Run(PoolFilterState* state, const WindowEnd& end, const char** error) {
    try {
      changed_ = state->Drain(&buckets_, &values_) ? buckets_.size() : 0;
      if (end.discard || changed_ == 0 || changed_ > cbi1::kMaxDeltaImages) return true;
      const cbi1::FilterFormat format{state->filter().addressing().seed(), state->filter().bucketCount()};
      frameLen_ = cbi1::DeltaFrameLen(changed_);
      frame_.reset(new uint8_t[frameLen_]);
      cbi1::WriteDelta(format, end.dcId, end.baseSequence, end.sequence, buckets_.data(), values_.data(), changed_,
                       frame_.get());
      return true;
    } catch (const std::bad_alloc&) {
      *error = "cannot allocate the drained window";
      return false;
    }
  }
  // null when nothing changed, else { imageCount, payload: Buffer | null }.
  Napi::Value ToJs(Napi::Env env) {
    if (changed_ == 0) return env.Null();
    Napi::Object out = Napi::Object::New(env);
    out.Set("imageCount", Napi::Number::New(env, static_cast<double>(changed_)));
    if (!frame_) {
      out.Set("payload", env.Null());
      return out;
    }
    out.Set("payload", Napi::Buffer<uint8_t>::New(env, frame_.release(), frameLen_,
                                                  [](Napi::Env, uint8_t* p) { delete[] p; }));
    return out;
  }

 private:
  std::vector<uint32_t> buckets_;
  std::vector<uint64_t> values_;
  size_t changed_ = 0;
  std::unique_ptr<uint8_t[]> frame_;
  size_t frameLen_ = 0;
};

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
    capacity_ = state_->counters().capacityFailures - before.capacityFailures;
    unknown_ = state_->counters().unknownRemovals - before.unknownRemovals;
    trackedBlocks_ = state_->trackedBlocks();
    const char* error = nullptr;
    if (end_ && !drain_.Run(state_, *end_, &error)) SetError(error);
  }
  Napi::Value Result() override {
    Napi::Object summary =
        PoolFilterStateWrap::Summary(Env(), errorsRef_.Value(), capacity_, unknown_, trackedBlocks_);
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
  uint64_t capacity_ = 0;
  uint64_t unknown_ = 0;
  uint64_t trackedBlocks_ = 0;
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
