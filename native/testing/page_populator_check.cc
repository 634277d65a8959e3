// pages::Populator's pause around the caller's own address-space changes (test/native/pages.test.ts):
// test/bench addon only.
#include <napi.h>

#include <chrono>
#include <cstdint>

#include "page_populator.h"
#include "testing/modules.h"
#include "zeroed_buffer.h"

namespace kvrelay {
namespace testing {
namespace {

// () -> { whilePaused, afterResume }: whether a buffer asked to populate in the background was
// populated within 300 ms while an AddressSpaceChange was open, and once it closed.
Napi::Value CheckPopulatorPause(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  pages::Populator& populator = pages::Populator::Instance();
  ZeroedBuffer<uint64_t> buffer(size_t{1} << 19);  // 4 MiB: mapped, two huge pages
  bool whilePaused;
  {
    const pages::AddressSpaceChange change;
    buffer.PopulateInBackground();
    // Without the pause the thread takes the job at once and is done in a few ms.
    populator.WaitIdle(std::chrono::milliseconds(300));
    whilePaused = buffer.Populated();
  }
  if (!populator.WaitIdle(std::chrono::seconds(30))) throw Napi::Error::New(env, "population did not end within 30 s");
  Napi::Object out = Napi::Object::New(env);
  out.Set("whilePaused", Napi::Boolean::New(env, whilePaused));
  out.Set("afterResume", Napi::Boolean::New(env, buffer.Populated()));
  return out;
}

}  // namespace

void InitPagePopulatorCheck(Napi::Env env, Napi::Object exports) {
  exports.Set("checkPopulatorPause", Napi::Function::New(env, CheckPopulatorPause, "checkPopulatorPause"));
}

}  // namespace testing
}  // namespace kvrelay
