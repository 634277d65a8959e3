// The async calls of PoolFilterState: work that can take milliseconds (a big batch, a 2^24-bucket
// word copy, a window drain and its delta encoding) runs on a libuv worker thread while the pool is
// marked busy. A pool's calls queue and run one after another, in the order they were made, on one
// worker (the pool's runner), which goes straight on to the next call when one ends: handing it to
// another thread cost ~0.5 ms of wake-up per call on a busy 2-vCPU VM, a quarter of a growing pool's
// apply time. Each call's promise settles on the main thread as soon as it ran.
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "bindings/napi_args.h"
#include "core/native_limits.h"
#include "bindings/relay/pool_batch_napi.h"
#include "bindings/relay/pool_window.h"
#include "bindings/relay/pool_wrap.h"

namespace kvrelay {

using pool::PoolFilterState;

// One async call: Run on the runner's thread, then Settle on the main thread. Constructed after its
// arguments were validated (its constructor admits it), so a call that throws is never counted.
class PoolTask {
 public:
  PoolTask(Napi::Env env, PoolFilterStateWrap* wrap)
      : state_(wrap->state()), deferred_(Napi::Promise::Deferred::New(env)) {
    wrap->Enter(env);
    self_ = Napi::Persistent(wrap->Value());
  }
  virtual ~PoolTask() = default;
  Napi::Promise Promise() const { return deferred_.Promise(); }
  void RunCaught() {
    try {
      Run();
    } catch (const std::exception& e) {
      Fail(e.what());
    }
  }
  void Settle(Napi::Env env) {
    if (error_) {
      deferred_.Reject(Napi::Error::New(env, *error_).Value());
    } else {
      deferred_.Resolve(Result(env));
    }
  }
  // Settle then rejects with `message`.
  void Fail(const char* message) { error_ = message; }

 protected:
  virtual void Run() = 0;
  virtual Napi::Value Result(Napi::Env env) = 0;

  PoolFilterState* state_;

 private:
  Napi::Promise::Deferred deferred_;
  // Keeps the JS object, and so the native state, alive until the call settled.
  Napi::ObjectReference self_;
  std::optional<std::string> error_;
};

namespace {

// How long a runner keeps its libuv thread while its pool's queue stays full: then it gives the
// thread back and queues itself again behind whatever waits (other pools' runners, snapshot
// encodes, DNS lookups), so that more busy pools than libuv threads all progress. Each turn costs
// its pool a trip through the event loop (~0.5 ms here): 1 % of a busy pool's time.
constexpr auto kRunnerTurn = std::chrono::milliseconds(50);

// Runs a pool's queued calls until none is left, reporting each as it ends.
class PoolRunner : public Napi::AsyncProgressQueueWorker<PoolTask*> {
 public:
  PoolRunner(Napi::Env env, PoolFilterStateWrap* wrap)
      : Napi::AsyncProgressQueueWorker<PoolTask*>(env, "kvrelay.poolRunner"), wrap_(wrap),
        self_(Napi::Persistent(wrap->Value())) {}

 protected:
  void Execute(const ExecutionProgress& progress) override {
    const auto turnEnd = std::chrono::steady_clock::now() + kRunnerTurn;
    while (PoolTask* task = wrap_->NextTask()) {
      task->RunCaught();
      progress.Send(&task, 1);
      if (std::chrono::steady_clock::now() >= turnEnd) {
        requeue_ = true;  // the queue stays with this runner (runnerActive_) until OnOK starts the next
        return;
      }
    }
  }
  // A call that ended after its environment began to tear down (the thread that made it ends: an
  // ingest thread that died with an apply running here) cannot settle: every N-API call then fails,
  // and the Napi::Error it throws, escaping this libuv callback, aborted the whole process. Nothing
  // waits for its promise any more; the task is freed all the same.
  void OnProgress(PoolTask* const* tasks, size_t count) override {
    for (size_t i = 0; i < count; ++i) {
      std::unique_ptr<PoolTask> task(tasks[i]);
      wrap_->Leave();
      try {
        task->Settle(Env());
      } catch (const Napi::Error&) {
      }
    }
  }
  void OnOK() override {
    try {
      if (requeue_) wrap_->Resume(Env());
    } catch (const Napi::Error&) {
    }
  }

 private:
  PoolFilterStateWrap* wrap_;
  // The runner reads the queue after its last task settled: the wrap must outlive it.
  Napi::ObjectReference self_;
  bool requeue_ = false;
};

}  // namespace

void PoolFilterStateWrap::Enter(Napi::Env env) {
  if (!state_) args::ThrowCoded(env, "PoolClosed", "PoolFilterState is closed");
  if (inFlight_ >= limits::kMaxQueuedPoolCalls) {
    args::ThrowCoded(env, "PoolBusy",
                     "PoolFilterState already has " + std::to_string(inFlight_) + " async calls in flight");
  }
  ++inFlight_;
}

void PoolFilterStateWrap::Submit(Napi::Env env, std::unique_ptr<PoolTask> task) {
  std::lock_guard<std::mutex> lock(tasksMutex_);
  if (!runnerActive_) {
    try {
      (new PoolRunner(env, this))->Queue();
    } catch (...) {
      Leave();  // the task was admitted; it is dropped unrun
      throw;
    }
    runnerActive_ = true;
  }
  tasks_.push_back(task.release());
}

void PoolFilterStateWrap::Resume(Napi::Env env) {
  std::unique_lock<std::mutex> lock(tasksMutex_);
  if (tasks_.empty()) {
    runnerActive_ = false;  // the turn ended with the last queued call
    return;
  }
  try {
    // Nothing else runs the queue meanwhile: runnerActive_ stayed set.
    (new PoolRunner(env, this))->Queue();
    return;
  } catch (const Napi::Error& e) {
    // Without a runner the queued calls would never settle: each fails with the reason instead.
    std::deque<PoolTask*> orphans;
    orphans.swap(tasks_);
    runnerActive_ = false;
    lock.unlock();
    for (PoolTask* orphan : orphans) {
      std::unique_ptr<PoolTask> task(orphan);
      Leave();
      task->Fail(e.Message().c_str());
      task->Settle(env);
    }
  }
}

PoolTask* PoolFilterStateWrap::NextTask() {
  std::lock_guard<std::mutex> lock(tasksMutex_);
  if (tasks_.empty()) {
    runnerActive_ = false;
    return nullptr;
  }
  PoolTask* task = tasks_.front();
  tasks_.pop_front();
  return task;
}

namespace {

// Applies its own copy of the batch (taken and validated on the main thread), so the caller's
// arrays are free the moment the call returns; with `end`, then ends the window in the same job.
class ApplyBatchTask : public PoolTask {
 public:
  ApplyBatchTask(Napi::Env env, PoolFilterStateWrap* wrap, PackedBatch&& batch, Napi::Uint8Array errors,
                 std::optional<WindowEnd> end)
      : PoolTask(env, wrap),
        batch_(std::move(batch)),
        errorsRef_(Napi::Persistent(errors)),
        errors_(errors.Data()),
        end_(end) {}

 protected:
  void Run() override {
    const pool::Counters before = state_->counters();
    state_->ApplyBatch(batch_.meta.data(), batch_.meta.size(), batch_.words.data(), errors_);
    summary_ = PoolFilterStateWrap::ApplySummary::Of(*state_, before);
    const char* error = nullptr;
    if (end_ && !drain_.Run(state_, *end_, &error)) Fail(error);
  }
  Napi::Value Result(Napi::Env env) override {
    Napi::Object summary = PoolFilterStateWrap::Summary(env, errorsRef_.Value(), summary_);
    if (end_) summary.Set("drained", drain_.ToJs(env));
    return summary;
  }

 private:
  PackedBatch batch_;
  // Not reachable from JavaScript until the promise resolves with it.
  Napi::Reference<Napi::Uint8Array> errorsRef_;
  uint8_t* errors_;
  std::optional<WindowEnd> end_;
  WindowDrain drain_;
  PoolFilterStateWrap::ApplySummary summary_{};
};

class DrainTask : public PoolTask {
 public:
  DrainTask(Napi::Env env, PoolFilterStateWrap* wrap, WindowEnd end) : PoolTask(env, wrap), end_(end) {}

 protected:
  void Run() override {
    const char* error = nullptr;
    if (!drain_.Run(state_, end_, &error)) Fail(error);
  }
  Napi::Value Result(Napi::Env env) override { return drain_.ToJs(env); }

 private:
  WindowEnd end_;
  WindowDrain drain_;
};

// The destination array is allocated (lazily zeroed) on the main thread; only the copy runs on the
// worker, so a 2^24-bucket snapshot never stalls the event loop.
class CopyWordsTask : public PoolTask {
 public:
  CopyWordsTask(Napi::Env env, PoolFilterStateWrap* wrap, Napi::BigUint64Array out)
      : PoolTask(env, wrap), outRef_(Napi::Persistent(out)), out_(out.Data()) {}

 protected:
  void Run() override {
    std::memcpy(out_, state_->filter().words(), size_t{state_->filter().bucketCount()} * sizeof(uint64_t));
  }
  Napi::Value Result(Napi::Env) override { return outRef_.Value(); }

 private:
  Napi::Reference<Napi::BigUint64Array> outRef_;
  uint64_t* out_;
};

template <typename Task, typename... Args>
Napi::Promise Queue(Napi::Env env, PoolFilterStateWrap* wrap, Args&&... args) {
  auto task = std::make_unique<Task>(env, wrap, std::forward<Args>(args)...);
  Napi::Promise promise = task->Promise();
  wrap->Submit(env, std::move(task));
  return promise;
}

}  // namespace

Napi::Value PoolFilterStateWrap::DrainAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  args::RequireCount(info, 1, "drainAsync(end: null | { dcId, baseSequence, sequence })");
  return Queue<DrainTask>(env, this, WindowEndArg(info[0]));
}

Napi::Value PoolFilterStateWrap::ApplyBatchAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PackedBatch batch;
  CopyPackedBatchArg(info, 0, limits::kMaxAsyncBatchWords, &batch);
  std::optional<WindowEnd> end;
  if (info.Length() > 2 && !info[2].IsUndefined()) end = WindowEndArg(info[2]);
  Napi::Uint8Array errors = Napi::Uint8Array::New(env, batch.events());
  return Queue<ApplyBatchTask>(env, this, std::move(batch), errors, end);
}

Napi::Value PoolFilterStateWrap::CopyWordsAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!state_) args::ThrowCoded(env, "PoolClosed", "PoolFilterState is closed");
  // The bucket count never changes, so it is read while other calls are in flight.
  return Queue<CopyWordsTask>(env, this, Napi::BigUint64Array::New(env, state_->filter().bucketCount()));
}

}  // namespace kvrelay
