// PoolFilterState.release(): the state freed on a libuv worker. A reservation's tables are hundreds
// of MiB mapped; their munmap took 14-58 ms for 51 MiB and 117-190 ms for 206 MiB where they were
// in small pages (no transparent huge pages: THP off, or memory too fragmented for them), 1-2 ms in
// huge pages, on the thread that closed the pool (the event loop, or an ingest thread whose other
// pools waited). The promise settles once every table is unmapped (pages::UnmapOnCaller: none is
// left to the populating thread) and the state's bytes left poolStateMemory(), so that the pool's
// next generation, made only then, never maps its reservation beside this one.
//
// A thread that tears its environment down waits for the work it queued on libuv's threads (the
// release finishes; its promise cannot settle any more, and nothing waits for it); at process exit
// the kernel takes the mappings with the process.
#include <memory>
#include <utility>

#include "bindings/napi_args.h"
#include "bindings/relay/pool_wrap.h"
#include "core/page_populator.h"

namespace kvrelay {

namespace {

class PoolRelease : public Napi::AsyncWorker {
 public:
  PoolRelease(Napi::Env env, std::unique_ptr<pool::PoolFilterState> state)
      : Napi::AsyncWorker(env, "kvrelay.poolRelease"), state_(std::move(state)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    const pages::UnmapOnCaller here;
    state_.reset();
  }
  // Settled in an environment tearing down (its thread ends), every N-API call fails: the error must
  // not escape this libuv callback (it would abort the process; see PoolRunner::OnProgress).
  void OnOK() override {
    try {
      deferred_.Resolve(Env().Undefined());
    } catch (const Napi::Error&) {
    }
  }

 private:
  // Freed in Execute; a work cancelled before it ran frees it where the worker is destroyed.
  std::unique_ptr<pool::PoolFilterState> state_;
  Napi::Promise::Deferred deferred_;
};

}  // namespace

Napi::Value PoolFilterStateWrap::Release(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (inFlight_ > 0) args::ThrowCoded(env, "PoolBusy", "cannot release while an async call is in flight");
  if (!state_) {
    // Closed or released before: nothing left to free.
    Napi::Promise::Deferred done = Napi::Promise::Deferred::New(env);
    done.Resolve(env.Undefined());
    return done.Promise();
  }
  auto* work = new PoolRelease(env, std::move(state_));
  const Napi::Promise promise = work->Promise();
  work->Queue();
  return promise;
}

}  // namespace kvrelay
