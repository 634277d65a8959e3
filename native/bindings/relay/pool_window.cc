#include "bindings/relay/pool_window.h"

#include <new>

#include "core/cbi1.h"
#include "bindings/napi_args.h"

namespace kvrelay {

WindowEnd WindowEndArg(const Napi::Value& v) {
  if (v.IsNull()) return WindowEnd{true, 0, 0, 0};
  if (!v.IsObject()) throw Napi::TypeError::New(v.Env(), "end must be null or { dcId, baseSequence, sequence }");
  Napi::Object o = v.As<Napi::Object>();
  return WindowEnd{false, args::U64(o.Get("dcId"), "end.dcId"), args::U64(o.Get("baseSequence"), "end.baseSequence"),
                   args::U64(o.Get("sequence"), "end.sequence")};
}

bool WindowDrain::Run(pool::PoolFilterState* state, const WindowEnd& end, const char** error) {
  try {
    changed_ = state->Drain(&buckets_, &values_) ? buckets_.size() : 0;
    if (end.discard || changed_ == 0 || changed_ > cbi1::kMaxDeltaImages) return true;
    const cbi1::FilterFormat format{state->filter().addressing().seed(), state->filter().bucketCount()};
    frameLen_ = cbi1::DeltaFrameLen(changed_);
    frame_.reset(new uint8_t[frameLen_]);
    cbi1::WriteDelta(format, end.dcId, end.baseSequence, end.sequence, buckets_.data(), values_.data(), changed_,
                     frame_.get());
    return true;
  } catch (const std::bad_alloc&) {
    *error = "cannot allocate the drained window";
    return false;
  }
}

Napi::Value WindowDrain::ToJs(Napi::Env env) {
  if (changed_ == 0) return env.Null();
  Napi::Object out = Napi::Object::New(env);
  out.Set("imageCount", Napi::Number::New(env, static_cast<double>(changed_)));
  if (!frame_) {
    out.Set("payload", env.Null());
    return out;
  }
  out.Set("payload",
          Napi::Buffer<uint8_t>::New(env, frame_.release(), frameLen_, [](Napi::Env, uint8_t* p) { delete[] p; }));
  return out;
}

}  // namespace kvrelay
