// N-API class LoopTurns: a count of the calling thread's event-loop iterations that JS reads without a
// call. The publication hub judges its pacing once per loop turn (src/publication/loop-turn.ts); a
// setImmediate per turn to tell turns apart cost a JS callback (~20 µs on a VM) per delta whenever
// deltas come one per turn (every delta at 100 msg/s, issue 30). Here a uv_check handle, which runs
// once per loop iteration that happens anyway, adds one to a Float64Array's element in C: no JS runs
// and no wake-up is added. Float64 so that it never wraps (exact to 2^53 iterations). Unreferenced:
// it never keeps a loop alive, and closes with its environment.
#include <napi.h>
#include <uv.h>

#include "bindings/modules.h"

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
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) throw Napi::Error::New(env, "no event loop");
    // V8 owns the memory (no external buffer), off its heap so it stays put; held here until this
    // object is gone, so the check never writes into a collected buffer.
    Napi::Float64Array counts = Napi::Float64Array::New(env, 1);
    buffer_ = Napi::Persistent(counts.ArrayBuffer());
    counts_ = static_cast<double*>(buffer_.Value().Data());
    info.This().As<Napi::Object>().DefineProperty(Napi::PropertyDescriptor::Value("counts", counts, napi_enumerable));
    check_ = new uv_check_t;
    check_->data = this;
    uv_check_init(loop, check_);
    uv_check_start(check_, [](uv_check_t* h) {
      if (h->data != nullptr) *static_cast<LoopTurnsWrap*>(h->data)->counts_ += 1;
    });
    uv_unref(reinterpret_cast<uv_handle_t*>(check_));
    napi_add_env_cleanup_hook(env, &LoopTurnsWrap::AtTeardown, this);
    cleanupHook_ = true;
  }

  ~LoopTurnsWrap() override { Stop(); }

 private:
  // One function for adding and removing the hook (a hook is found by function and argument).
  static void AtTeardown(void* self) { static_cast<LoopTurnsWrap*>(self)->Stop(); }

  // Closes the handle (freed by libuv once released); also the environment's teardown. The count
  // stays readable and stops moving.
  void Stop() {
    if (cleanupHook_) napi_remove_env_cleanup_hook(Env(), &LoopTurnsWrap::AtTeardown, this);
    cleanupHook_ = false;
    if (check_ == nullptr) return;
    check_->data = nullptr;
    uv_check_stop(check_);
    uv_close(reinterpret_cast<uv_handle_t*>(check_), [](uv_handle_t* h) { delete reinterpret_cast<uv_check_t*>(h); });
    check_ = nullptr;
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Stop();
    return info.Env().Undefined();
  }

  uv_check_t* check_ = nullptr;
  bool cleanupHook_ = false;
  Napi::Reference<Napi::ArrayBuffer> buffer_;
  // The `counts` array's element, in buffer_.
  double* counts_ = nullptr;
};

}  // namespace

void InitLoopTurns(Napi::Env env, Napi::Object exports) { exports.Set("LoopTurns", LoopTurnsWrap::Define(env)); }

}  // namespace kvrelay
