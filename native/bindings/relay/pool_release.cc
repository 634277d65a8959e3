// PoolFilterState.release(): the state freed off the calling thread. A reservation's tables are hundreds
// of MiB mapped; their munmap took 14-58 ms for 51 MiB and 117-190 ms for 206 MiB where they were
// in small pages (no transparent huge pages: THP off, or memory too fragmented for them), 1-2 ms in
// huge pages, on the thread that closed the pool (the event loop, or an ingest thread whose other
// pools waited). The promise settles once every table is unmapped (pages::UnmapOnCaller: none is
// left to the populating thread) and the state's bytes left poolStateMemory(), so that the pool's
// next generation, made only then, never maps its reservation beside this one.
//
// The freeing itself runs on a thread of its own at a lower priority (the populating thread's), the
// libuv worker only waiting for it: at the event loop's priority the munmap's CPU preempted the
// event loop on the project's busy 2-core VM (the release() call held it 2-3 ms in 2 calls of 10,
// with involuntary context switches only; 0.03-0.16 ms from this thread).
//
// A thread that tears its environment down waits for the work it queued on libuv's threads (the
// release finishes; its promise cannot settle any more, and nothing waits for it); at process exit
// the kernel takes the mappings with the process.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "bindings/napi_args.h"
#include "bindings/relay/pool_wrap.h"
#include "core/background_thread.h"
#include "core/page_populator.h"

namespace kvrelay {

namespace {

// Frees released states one after another on its thread, each with every table unmapped there.
class Releaser {
 public:
  static Releaser& Instance() {
    static Releaser* instance = new Releaser();  // never destroyed: its thread outlives statics
    return *instance;
  }
  // Returns once `state` is freed: on the releaser's thread, or here if it could not be started.
  void Free(std::unique_ptr<pool::PoolFilterState> state) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!Start()) {
      lock.unlock();
      Unmap(std::move(state));
      return;
    }
    Job job{std::move(state)};
    jobs_.push_back(&job);
    ready_.notify_one();
    freed_.wait(lock, [&job] { return job.done; });
  }

 private:
  struct Job {
    std::unique_ptr<pool::PoolFilterState> state;
    bool done = false;
  };
  static void Unmap(std::unique_ptr<pool::PoolFilterState> state) {
    const pages::UnmapOnCaller here;
    state.reset();
  }
  // Under mutex_.
  bool Start() { return background::StartOnce(started_, [this] { Run(); }); }
  void Run() {
    background::LowerPriority();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return !jobs_.empty(); });
      Job* job = jobs_.front();
      jobs_.pop_front();
      lock.unlock();
      Unmap(std::move(job->state));
      lock.lock();
      job->done = true;
      freed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable freed_;
  std::deque<Job*> jobs_;
  bool started_ = false;
};

class PoolRelease : public Napi::AsyncWorker {
 public:
  PoolRelease(Napi::Env env, std::unique_ptr<pool::PoolFilterState> state)
      : Napi::AsyncWorker(env, "kvrelay.poolRelease"), state_(std::move(state)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override { Releaser::Instance().Free(std::move(state_)); }
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
