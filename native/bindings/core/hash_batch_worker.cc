// hashBatchAsync: HashBatchCore on a libuv worker thread over its own copy of the tokens and
// offsets, so the caller's arrays are free once the call returns. The outputs are allocated up
// front and reach JavaScript only when the promise resolves.
#include <utility>
#include <vector>

#include "bindings/core/hash_batch.h"
#include "core/native_limits.h"

namespace kvrelay {
namespace {

class HashBatchWorker : public Napi::AsyncWorker {
 public:
  HashBatchWorker(Napi::Env env, BatchInput in)
      : Napi::AsyncWorker(env, "kvrelay.hashBatchAsync"),
        deferred_(Napi::Promise::Deferred::New(env)),
        tokens_(in.tokens.Data(), in.tokens.Data() + in.tokens.ElementLength()),
        offsets_(std::move(in.promptOffsets)),
        blockOffsetsRef_(Napi::Persistent(in.blockOffsets)),
        hashesRef_(Napi::Persistent(in.hashes)),
        blockOffsets_(in.blockOffsets.Data()),
        out_(in.hashes.Data()),
        kvBlockSize_(in.kvBlockSize),
        eagle_(in.eagle),
        sequence_(in.sequence),
        seed_(in.seed) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    HashBatchCore(tokens_.data(), offsets_.data(), blockOffsets_, offsets_.size(), kvBlockSize_, eagle_, seed_,
                  sequence_, out_);
  }
  void OnOK() override {
    Napi::Object result = Napi::Object::New(Env());
    result.Set("hashes", hashesRef_.Value());
    result.Set("blockOffsets", blockOffsetsRef_.Value());
    deferred_.Resolve(result);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<uint32_t> tokens_;
  std::vector<uint32_t> offsets_;
  Napi::Reference<Napi::Uint32Array> blockOffsetsRef_;
  Napi::Reference<Napi::BigUint64Array> hashesRef_;
  const uint32_t* blockOffsets_;
  uint64_t* out_;
  uint32_t kvBlockSize_;
  bool eagle_;
  bool sequence_;
  uint64_t seed_;
};

}  // namespace

Napi::Value HashBatchAsync(const Napi::CallbackInfo& info) {
  auto* worker = new HashBatchWorker(info.Env(), ParseBatch(info, limits::kMaxAsyncHashInputs));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace kvrelay
