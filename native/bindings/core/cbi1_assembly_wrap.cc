// SnapshotAssembly: the JavaScript class over cbi1::SnapshotAssembly, which collects a snapshot's
// chunks (raw frames or frames decodeFrame returned) into one image.
#include <string>

#include "bindings/core/cbi1_js.h"
#include "bindings/napi_args.h"

namespace kvrelay {
namespace cbi1js {
namespace {

// A decoded chunk object as returned by decodeFrame (its words are read in place).
cbi1::DecodedFrame DecodedChunkArg(Napi::Env env, Napi::Object object) {
  cbi1::DecodedFrame frame{};
  Napi::Value kind = object.Get("kind");
  if (kind.IsString() && kind.As<Napi::String>().Utf8Value() == "delta") {
    frame.kind = cbi1::FrameKind::Delta;
    return frame;
  }
  if (!kind.IsString() || kind.As<Napi::String>().Utf8Value() != "chunk") {
    throw Napi::TypeError::New(env, "frame.kind must be 'chunk' or 'delta'");
  }
  frame.kind = cbi1::FrameKind::Chunk;
  Napi::Object header = args::Object(object.Get("header"), "frame.header");
  frame.header.epoch = args::U64(header.Get("epoch"), "frame.header.epoch");
  frame.header.bucketCount = args::UInt(header.Get("bucketCount"), "frame.header.bucketCount", cbi1::kMaxBucketCount);
  frame.chunkIndex = static_cast<uint32_t>(args::UInt(object.Get("chunkIndex"), "frame.chunkIndex", UINT32_MAX));
  frame.chunkCount = static_cast<uint32_t>(args::UInt(object.Get("chunkCount"), "frame.chunkCount", UINT32_MAX));
  frame.bucketOffset = args::UInt(object.Get("bucketOffset"), "frame.bucketOffset", cbi1::kMaxBucketCount);
  Napi::BigUint64Array words = WordsArg(object.Get("words"));
  frame.wordCount = words.ElementLength();
  frame.words = reinterpret_cast<const uint8_t*>(words.Data());
  return frame;
}

// The optional `{ images?: boolean }` of the SnapshotAssembly constructor (default true).
bool CollectImagesArg(Napi::Value options) {
  if (options.IsUndefined()) return true;
  Napi::Value images = args::Object(options, "options").Get("images");
  return images.IsUndefined() || args::Bool(images, "options.images");
}

class SnapshotAssemblyWrap : public Napi::ObjectWrap<SnapshotAssemblyWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "SnapshotAssembly",
                       {InstanceMethod("absorb", &SnapshotAssemblyWrap::Absorb),
                        InstanceMethod("reset", &SnapshotAssemblyWrap::Reset)});
  }

  explicit SnapshotAssemblyWrap(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<SnapshotAssemblyWrap>(info),
        format_(FormatArg(info.Env(), info[0])),
        assembly_(format_, CollectImagesArg(info[1])) {}

 private:
  Napi::Value Absorb(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    args::RequireCount(info, 1, "absorb(frame: Uint8Array | DecodedFrame)");
    cbi1::DecodedFrame frame;
    if (info[0].IsTypedArray()) {
      Napi::Uint8Array bytes = BytesArg(info[0]);
      // A frame that does not decode leaves the assembly untouched, as upstream decodes first.
      frame = Guard(env, [&] { return cbi1::Decode(format_, bytes.Data(), bytes.ByteLength()); });
    } else {
      frame = DecodedChunkArg(env, args::Object(info[0], "frame"));
    }
    cbi1::AssembledSnapshot snapshot;
    bool complete = Guard(env, [&] { return assembly_.Absorb(frame, &snapshot); });
    if (!complete) return env.Null();
    size_t count = snapshot.buckets.size();
    Napi::Object result = Napi::Object::New(env);
    result.Set("epoch", Napi::BigInt::New(env, snapshot.epoch));
    result.Set("buckets", Napi::Uint32Array::New(env, count, VectorToArrayBuffer(env, std::move(snapshot.buckets)), 0));
    result.Set("values", Napi::BigUint64Array::New(env, count, VectorToArrayBuffer(env, std::move(snapshot.values)), 0));
    return result;
  }

  Napi::Value Reset(const Napi::CallbackInfo& info) {
    assembly_.Reset();
    return info.Env().Undefined();
  }

  cbi1::FilterFormat format_;
  cbi1::SnapshotAssembly assembly_;
};

}  // namespace

Napi::Function DefineSnapshotAssembly(Napi::Env env) { return SnapshotAssemblyWrap::Define(env); }

}  // namespace cbi1js
}  // namespace kvrelay
