// encodeSnapshotAsync: a whole snapshot encoded on a libuv worker thread, so the event loop only
// wraps finished memory.
#include "bindings/core/cbi1_js.h"
#include "core/cbi1_region.h"

namespace kvrelay {
namespace cbi1js {
namespace {

// The reference keeps the words array from being collected while the worker reads it.
class EncodeSnapshotWorker : public Napi::AsyncWorker {
 public:
  EncodeSnapshotWorker(Napi::Env env, const SnapshotArgs& snapshot)
      : Napi::AsyncWorker(env, "kvrelay.cbi1.encodeSnapshot"),
        deferred_(Napi::Promise::Deferred::New(env)),
        format_(snapshot.format),
        dcId_(snapshot.dcId),
        epoch_(snapshot.epoch),
        words_(snapshot.words.Data()),
        wordsRef_(Napi::Persistent(static_cast<Napi::Object>(snapshot.words))),
        len_(cbi1::SnapshotFramesLen(snapshot.format)) {}

  ~EncodeSnapshotWorker() override {
    if (region_ != nullptr) cbi1::GiveRegion(region_, len_);
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    region_ = cbi1::TakeRegion(len_);
    if (region_ == nullptr) {
      SetError("AllocationFailed");
      return;
    }
    cbi1::WriteSnapshot(format_, dcId_, epoch_, words_, region_);
  }

  void OnOK() override {
    uint8_t* region = region_;
    region_ = nullptr;  // owned by the ArrayBuffer from here on
    deferred_.Resolve(ChunkViews(Env(), format_, region, len_));
  }

  // Execute fails only when the region cannot be allocated.
  void OnError(const Napi::Error&) override {
    deferred_.Reject(ToJsError(Env(), cbi1::Cbi1Error{"AllocationFailed", {}}).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  cbi1::FilterFormat format_;
  uint64_t dcId_;
  uint64_t epoch_;
  const uint64_t* words_;
  Napi::ObjectReference wordsRef_;
  size_t len_;
  uint8_t* region_ = nullptr;
};

}  // namespace

Napi::Value EncodeSnapshotAsync(const Napi::CallbackInfo& info) {
  SnapshotArgs snapshot = ParseSnapshotArgs(info, "encodeSnapshotAsync(format, dcId, epoch, words: BigUint64Array)");
  auto* worker = new EncodeSnapshotWorker(info.Env(), snapshot);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace cbi1js
}  // namespace kvrelay
