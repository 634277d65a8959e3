// N-API class LoopDelay: the event loop's delay (how late a timer due at a random moment runs) without
// a timer of its own. Node's monitorEventLoopDelay samples with a repeating timer, which wakes an idle
// loop every interval (50 ms: 20 wake-ups a second, ~80 µs of CPU each on a VM, issue 30 item 2).
// Here a uv_check handle, which runs once per loop iteration that happens anyway, reads the time since
// the previous iteration and the part of it the loop spent blocked in poll (libuv's idle time, which
// node tracks for eventLoopUtilization). The rest was busy: a timer falling due `x` into a busy stretch
// of `b` runs `b - x` late (it waits for the next iteration), one falling due while the loop waited
// runs on time. So each iteration adds its idle time at delay 0 and its busy time spread evenly over
// [0, b]; quantiles are read from that time-weighted histogram and the max is the longest busy
// stretch. Unreferenced: it never keeps a loop alive, and closes with its environment.
#include <napi.h>
#include <uv.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>

#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "bindings/relay/loop_check.h"

namespace kvrelay {
namespace {

// Delay buckets: [0, 1 µs), then kPerOctave per doubling up to 2^kOctaves µs (~18 minutes).
constexpr int kPerOctave = 8;
constexpr int kOctaves = 30;
constexpr int kBuckets = kPerOctave * kOctaves + 1;
constexpr double kNsPerUs = 1e3;
constexpr double kUsPerMs = 1e3;

// Bucket b covers [kBounds[b], kBounds[b + 1]) µs, computed once (an iteration walks them).
const std::array<double, kBuckets + 1>& Bounds() {
  static const std::array<double, kBuckets + 1> bounds = [] {
    std::array<double, kBuckets + 1> b{};
    for (int i = 1; i <= kBuckets; i++) b[i] = std::exp2(static_cast<double>(i - 1) / kPerOctave);
    return b;
  }();
  return bounds;
}
double LowerUs(int bucket) { return Bounds()[bucket]; }
double UpperUs(int bucket) { return Bounds()[bucket + 1]; }

class LoopDelayWrap : public Napi::ObjectWrap<LoopDelayWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "LoopDelay",
                       {InstanceMethod<&LoopDelayWrap::Take>("take"), InstanceMethod<&LoopDelayWrap::Close>("close")});
  }

  explicit LoopDelayWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LoopDelayWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() != 0) throw Napi::TypeError::New(env, "LoopDelay() takes no arguments");
    check_ = std::make_unique<LoopCheck>(env, [](void* self) { static_cast<LoopDelayWrap*>(self)->Iteration(); }, this);
    loop_ = check_->loop();
    lastNs_ = uv_hrtime();
    lastIdleNs_ = uv_metrics_idle_time(loop_);
  }

 private:
  void Iteration() {
    const uint64_t now = uv_hrtime();
    const uint64_t idle = uv_metrics_idle_time(loop_);
    const uint64_t span = now - lastNs_;
    const uint64_t waited = std::min<uint64_t>(idle - lastIdleNs_, span);
    lastNs_ = now;
    lastIdleNs_ = idle;
    const double busyUs = static_cast<double>(span - waited) / kNsPerUs;
    mass_[0] += static_cast<double>(waited) / kNsPerUs;
    // Busy time is spread evenly over delays [0, busyUs]: each bucket gets its overlap with it.
    for (int b = 0; b < kBuckets && LowerUs(b) < busyUs; b++) mass_[b] += std::min(UpperUs(b), busyUs) - LowerUs(b);
    maxUs_ = std::max(maxUs_, busyUs);
    iterations_ += 1;
  }

  // The delay (µs) below which a fraction `q` of the window's time lies.
  double Quantile(double q) const {
    double total = 0;
    for (double m : mass_) total += m;
    const double target = q * total;
    double below = 0;
    for (int b = 0; b < kBuckets; b++) {
      if (mass_[b] > 0 && below + mass_[b] >= target) {
        const double at = LowerUs(b) + (UpperUs(b) - LowerUs(b)) * (target - below) / mass_[b];
        return std::min(at, maxUs_);
      }
      below += mass_[b];
    }
    return maxUs_;
  }

  // -> {p50Ms, p99Ms, maxMs, samples: loop iterations} since the previous take() (or the start), then
  // a new window begins; undefined when the loop has not iterated since.
  Napi::Value Take(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!check_->running()) args::ThrowCoded(env, "ECLOSED", "the LoopDelay is closed");
    if (iterations_ == 0) return env.Undefined();
    Napi::Object window = Napi::Object::New(env);
    window.Set("p50Ms", Quantile(0.5) / kUsPerMs);
    window.Set("p99Ms", Quantile(0.99) / kUsPerMs);
    window.Set("maxMs", maxUs_ / kUsPerMs);
    window.Set("samples", static_cast<double>(iterations_));
    mass_.fill(0);
    maxUs_ = 0;
    iterations_ = 0;
    return window;
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    check_->Stop();
    return info.Env().Undefined();
  }

  std::unique_ptr<LoopCheck> check_;
  uv_loop_t* loop_ = nullptr;
  uint64_t lastNs_ = 0;
  uint64_t lastIdleNs_ = 0;
  std::array<double, kBuckets> mass_{};
  double maxUs_ = 0;
  uint64_t iterations_ = 0;
};

}  // namespace

void InitLoopDelay(Napi::Env env, Napi::Object exports) { exports.Set("LoopDelay", LoopDelayWrap::Define(env)); }

}  // namespace kvrelay
