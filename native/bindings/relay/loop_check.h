// An unreferenced uv_check handle on the calling environment's event loop: it calls back once per loop
// iteration that happens anyway (no wake-up of its own, never keeps the loop alive) until Stop() or the
// environment's teardown, whichever comes first. For the N-API objects that watch the loop (LoopDelay,
// LoopTurns).
#pragma once

#include <napi.h>
#include <uv.h>

namespace kvrelay {

class LoopCheck {
 public:
  using Callback = void (*)(void* data);

  // Throws a JS error when the environment has no event loop.
  LoopCheck(Napi::Env env, Callback callback, void* data) : env_(env), callback_(callback), data_(data) {
    if (napi_get_uv_event_loop(env, &loop_) != napi_ok || loop_ == nullptr) throw Napi::Error::New(env, "no event loop");
    check_ = new uv_check_t;
    check_->data = this;
    uv_check_init(loop_, check_);
    uv_check_start(check_, [](uv_check_t* h) {
      if (h->data != nullptr) static_cast<LoopCheck*>(h->data)->callback_(static_cast<LoopCheck*>(h->data)->data_);
    });
    uv_unref(reinterpret_cast<uv_handle_t*>(check_));
    napi_add_env_cleanup_hook(env_, &LoopCheck::AtTeardown, this);
    cleanupHook_ = true;
  }

  LoopCheck(const LoopCheck&) = delete;
  LoopCheck& operator=(const LoopCheck&) = delete;
  ~LoopCheck() { Stop(); }

  uv_loop_t* loop() const { return loop_; }
  bool running() const { return check_ != nullptr; }

  // Closes the handle (freed by libuv once released); idempotent.
  void Stop() {
    if (cleanupHook_) napi_remove_env_cleanup_hook(env_, &LoopCheck::AtTeardown, this);
    cleanupHook_ = false;
    if (check_ == nullptr) return;
    check_->data = nullptr;
    uv_check_stop(check_);
    uv_close(reinterpret_cast<uv_handle_t*>(check_), [](uv_handle_t* h) { delete reinterpret_cast<uv_check_t*>(h); });
    check_ = nullptr;
  }

 private:
  // One function for adding and removing the hook: a hook is found by (function, argument), and two
  // lambda expressions are two functions, so removal by another one missed and left a hook on a freed
  // object for the environment's teardown to call (a crash at exit once a LoopDelay was collected).
  static void AtTeardown(void* self) { static_cast<LoopCheck*>(self)->Stop(); }

  napi_env env_;
  uv_loop_t* loop_ = nullptr;
  uv_check_t* check_ = nullptr;
  Callback callback_;
  void* data_;
  bool cleanupHook_ = false;
};

}  // namespace kvrelay
