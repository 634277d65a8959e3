// PoolFilterState.release(): the state freed off the calling thread. A reservation's tables are hundreds
// of MiB mapped; their munmap took 14-58 ms for 51 MiB and 117-190 ms for 206 MiB where they were
// in small pages (no transparent huge pages: THP off, or memory too fragmented for them), 1-2 ms in
// huge pages, on the thread that closed the pool (the event loop, or an ingest thread whose other
// pools waited). The promise settles once every table is unmapped (pages::UnmapOnCaller: none is
// left to the populating thread) and the state's bytes left poolStateMemory(), so that the pool's
// next generation, made only then, never maps its reservation beside this one.
//
// The releaser's thread frees the state (pool_releaser.h), then wakes the thread that called release()
// through a libuv async handle of that thread's loop, where the promise settles: nothing waits for the
// releaser meanwhile. (A libuv worker that waited in it held one of libuv's 4 threads per pending
// release: a shard handing 50 reserved pools over in small pages would have held them all for seconds,
// and every other job of the process behind them: snapshot encodes, gzip, populating-phase applies.)
//
// The handle keeps its loop alive while the release is pending, as the async work did (unreferenced, a
// thread or script whose only pending work was `await release()` ended without it: the promise's
// reactions never ran), and is closed once it settled. A thread that tears its environment down (it
// exits or is terminated) waits for the releases it made: an async cleanup hook holds the teardown,
// whose loop turns wake on the handle. Their states are freed before the thread's exit is seen (a dead
// ingest thread's pools count as freed: producer/thread-pools.ts); their promises cannot settle any
// more, and nothing waits for them. At process.exit() nothing is torn down: the kernel takes the
// mappings with the process.
//
// Where the releaser's thread or the handle cannot be made, the state is freed on the calling thread,
// as by close(), and the promise settles then.

#include <uv.h>

#include <atomic>
#include <memory>
#include <utility>

#include "bindings/napi_args.h"
#include "bindings/relay/pool_releaser.h"
#include "bindings/relay/pool_wrap.h"

namespace kvrelay {

namespace {

std::atomic<int> holdingTeardown{0};

// One release's promise, and the handle that wakes its thread once the releaser freed the state.
// Deletes itself once settled (or dropped, its environment tearing down) and its handle closed.
class ReleaseSettle {
 public:
  explicit ReleaseSettle(Napi::Env env)
      : env_(env), deferred_(Napi::Promise::Deferred::New(env)),
        context_(std::make_unique<Napi::AsyncContext>(env, "kvrelay.poolRelease")) {}
  ReleaseSettle(const ReleaseSettle&) = delete;
  ReleaseSettle& operator=(const ReleaseSettle&) = delete;

  Napi::Promise Promise() const { return deferred_.Promise(); }
  // false: the handle or the teardown hook could not be made (the caller then frees the state and
  // calls SettleHere).
  bool Watch() {
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env_, &loop) != napi_ok || uv_async_init(loop, &async_, OnFreed) != 0) return false;
    async_.data = this;
    watching_ = true;
    return napi_add_async_cleanup_hook(env_, OnTeardown, this, &hook_) == napi_ok;
  }
  // On the releaser's thread, the state freed: its last use of this object (the handle stays open
  // until its callback ran on the loop's thread).
  static void Freed(void* self) { uv_async_send(&static_cast<ReleaseSettle*>(self)->async_); }
  // In the release() call, the state freed on its thread.
  void SettleHere() {
    deferred_.Resolve(env_.Undefined());
    End();
  }

 private:
  uv_handle_t* handle() { return reinterpret_cast<uv_handle_t*>(&async_); }

  static void OnFreed(uv_async_t* async) {
    auto* self = static_cast<ReleaseSettle*>(async->data);
    if (!self->tearingDown_) self->Resolve();
    self->End();
  }
  // The environment tears down before the state was freed: the teardown waits, turning the loop, until
  // the hook is removed (End).
  static void OnTeardown(napi_async_cleanup_hook_handle, void* arg) {
    static_cast<ReleaseSettle*>(arg)->tearingDown_ = true;
    holdingTeardown.fetch_add(1, std::memory_order_relaxed);
  }
  // From a libuv callback: in a callback scope, so that the promise's reactions run after it. In an
  // environment already tearing down (before the hook ran) every N-API call fails: the error must not
  // escape this callback (it would abort the process; see PoolRunner::OnProgress).
  void Resolve() {
    try {
      const Napi::HandleScope scope(env_);
      const Napi::CallbackScope callback(env_, *context_);
      deferred_.Resolve(env_.Undefined());
    } catch (const Napi::Error&) {
    }
  }
  // The hook goes last: a teardown waiting on it then finds the handle closed.
  void End() {
    context_.reset();
    if (!watching_) return Finish();
    uv_close(handle(), [](uv_handle_t* h) { static_cast<ReleaseSettle*>(h->data)->Finish(); });
  }
  void Finish() {
    if (tearingDown_) holdingTeardown.fetch_sub(1, std::memory_order_relaxed);
    if (hook_ != nullptr) napi_remove_async_cleanup_hook(hook_);
    delete this;
  }

  Napi::Env env_;
  Napi::Promise::Deferred deferred_;
  std::unique_ptr<Napi::AsyncContext> context_;
  uv_async_t async_{};
  bool watching_ = false;
  napi_async_cleanup_hook_handle hook_ = nullptr;
  bool tearingDown_ = false;
};

}  // namespace

int ReleasesHoldingTeardown() { return holdingTeardown.load(std::memory_order_relaxed); }

Napi::Value PoolFilterStateWrap::Release(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (inFlight_ > 0) args::ThrowCoded(env, "PoolBusy", "cannot release while an async call is in flight");
  if (!state_) {
    // Closed or released before: nothing left to free.
    Napi::Promise::Deferred done = Napi::Promise::Deferred::New(env);
    done.Resolve(env.Undefined());
    return done.Promise();
  }
  auto* settle = new ReleaseSettle(env);
  const Napi::Promise promise = settle->Promise();
  if (!settle->Watch() || !PoolReleaser::Instance().Queue(state_, &ReleaseSettle::Freed, settle)) {
    PoolReleaser::Unmap(std::move(state_));
    settle->SettleHere();
  }
  return promise;
}

}  // namespace kvrelay
