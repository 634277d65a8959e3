// `keptPageBytes`: the drained table pages the process keeps for the next table's growth
// (pages::WarmPages in native/warm_pages.h): resident memory that no pool's tables account for, held
// up to a few seconds after a growth.
#include <napi.h>

#include "bindings/modules.h"
#include "core/page_populator.h"

namespace kvrelay {
namespace {

Napi::Value KeptPageBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 0) throw Napi::TypeError::New(env, "keptPageBytes() takes no arguments");
  return Napi::Number::New(env, static_cast<double>(pages::Populator::Instance().WarmBytes()));
}

}  // namespace

void InitPages(Napi::Env env, Napi::Object exports) {
  exports.Set("keptPageBytes", Napi::Function::New(env, KeptPageBytes, "keptPageBytes"));
}

}  // namespace kvrelay
