// The filter's relocation RNG (splitmix.json vectors): lane seeds and single SplitMix64 steps.
#include "core/ckf.h"
#include "bindings/napi_args.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

Napi::Value LaneRngSeed(const Napi::CallbackInfo& info) {
  const uint64_t seed = args::U64(args::Arg(info, 0), "seed");
  const uint64_t lane = args::U64(args::Arg(info, 1), "lane", true);
  return Napi::BigInt::New(info.Env(), ckf::LaneRngSeed(seed, lane));
}

Napi::Value SplitmixNext(const Napi::CallbackInfo& info) {
  uint64_t state = args::U64(args::Arg(info, 0), "state");
  const uint64_t value = ckf::SplitmixNext(&state);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("value", Napi::BigInt::New(info.Env(), value));
  out.Set("state", Napi::BigInt::New(info.Env(), state));
  return out;
}

}  // namespace

void InitRng(Napi::Env env, Napi::Object exports) {
  exports.Set("laneRngSeed", Napi::Function::New(env, LaneRngSeed, "laneRngSeed"));
  exports.Set("splitmixNext", Napi::Function::New(env, SplitmixNext, "splitmixNext"));
}

}  // namespace testing
}  // namespace kvrelay
