// The testing addon's own PoolFilterState binding and its releaser's hooks (test addon only): a test
// holds the releaser (pool_releaser.h) to have releases provably pending, without timing anything.
// The testing addon is a library of its own, with its own releaser and pool-state accounting: its
// pools are freed by the releaser these hooks reach, and counted by its poolStateMemory.
#include <napi.h>

#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "bindings/relay/pool_releaser.h"
#include "testing/modules.h"

namespace kvrelay {
namespace testing {
namespace {

// (held: boolean): while held, the releaser frees nothing; releases made meanwhile wait for it.
Napi::Value HoldPoolReleases(const Napi::CallbackInfo& info) {
  const Napi::Value held = args::Arg(info, 0);
  if (!held.IsBoolean()) throw Napi::TypeError::New(info.Env(), "held must be a boolean");
  PoolReleaser::Instance().Hold(held.As<Napi::Boolean>().Value());
  return info.Env().Undefined();
}

// () -> releases whose environment's teardown waits for the releaser to free their state.
Napi::Value PoolReleasesHoldingTeardown(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), ReleasesHoldingTeardown());
}

}  // namespace

void InitPoolReleaseHold(Napi::Env env, Napi::Object exports) {
  Napi::Object pool = Napi::Object::New(env);
  InitPool(env, pool);
  exports.Set("releasePool", pool);
  exports.Set("holdPoolReleases", Napi::Function::New(env, HoldPoolReleases, "holdPoolReleases"));
  exports.Set("poolReleasesHoldingTeardown", Napi::Function::New(env, PoolReleasesHoldingTeardown, "poolReleasesHoldingTeardown"));
}

}  // namespace testing
}  // namespace kvrelay
