// N-API class LoopTurns: a count of the calling thread's event-loop iterations that JS reads without a
// call. The publication hub judges its pacing once per loop turn (src/publication/loop-turn.ts); a
// setImmediate per turn to tell turns apart cost a JS callback (~20 µs on a VM) per delta whenever
// deltas come one per turn (every delta at 100 msg/s, issue 30). Here a uv_check handle, which runs
// once per loop iteration that happens anyway, adds one to a Float64Array's element in C: no JS runs
// and no wake-up is added. Float64 so that it never wraps (exact to 2^53 iterations). Unreferenced:
// it never keeps a loop alive, and closes with its environment.
#include <napi.h>

#include <memory>

#include "bindings/modules.h"
#include "bindings/relay/loop_check.h"

namespace kvrelay {
namespace {

class LoopTurnsWrap : public Napi::ObjectWrap<LoopTurnsWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "LoopTurns", {InstanceMethod<&LoopTurnsWrap::Close>("close")});
  }

  explicit LoopTurnsWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LoopTurnsWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() != 0) throw Napi::TypeError::New(env, "LoopTurns() takes no arguments");
    // V8 owns the memory (no external buffer), off its heap so it stays put; held here until this
    // object is gone, so the check never writes into a collected buffer.
    Napi::Float64Array counts = Napi::Float64Array::New(env, 1);
    buffer_ = Napi::Persistent(counts.ArrayBuffer());
    counts_ = static_cast<double*>(buffer_.Value().Data());
    info.This().As<Napi::Object>().DefineProperty(Napi::PropertyDescriptor::Value("counts", counts, napi_enumerable));
    check_ = std::make_unique<LoopCheck>(env, [](void* self) { *static_cast<LoopTurnsWrap*>(self)->counts_ += 1; }, this);
  }

 private:
  // The count stays readable and stops moving.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    check_->Stop();
    return info.Env().Undefined();
  }

  // Declared before the check, so destroyed after it: the check never writes into a freed buffer.
  Napi::Reference<Napi::ArrayBuffer> buffer_;
  // The `counts` array's element, in buffer_.
  double* counts_ = nullptr;
  std::unique_ptr<LoopCheck> check_;
};

}  // namespace

void InitLoopTurns(Napi::Env env, Napi::Object exports) { exports.Set("LoopTurns", LoopTurnsWrap::Define(env)); }

}  // namespace kvrelay
