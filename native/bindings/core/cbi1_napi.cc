// JavaScript surface of the CBI1 codec: the synchronous encoders and the decoder, and the
// registration of every CBI1 export (arguments and values: cbi1_js.cc; the worker-thread snapshot
// encoder: cbi1_snapshot_worker.cc; SnapshotAssembly: cbi1_assembly_wrap.cc).
#include <napi.h>

#include <string>

#include "core/cbi1.h"
#include "bindings/core/cbi1_js.h"
#include "core/cbi1_region.h"
#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "core/native_limits.h"

namespace kvrelay {
namespace {

using cbi1::Cbi1Error;
using cbi1::FilterFormat;
using cbi1js::BytesArg;
using cbi1js::ChunkViews;
using cbi1js::DecodedToJs;
using cbi1js::FormatArg;
using cbi1js::FormatToJs;
using cbi1js::Guard;
using cbi1js::ParseSnapshotArgs;
using cbi1js::SnapshotArgs;
using cbi1js::ToJsError;

Napi::Value ValidateFilterFormat(const Napi::CallbackInfo& info) {
  args::RequireCount(info, 1, "validateFilterFormat(format)");
  return FormatToJs(info.Env(), FormatArg(info.Env(), info[0]));
}

Napi::Value SnapshotChunkCount(const Napi::CallbackInfo& info) {
  args::RequireCount(info, 1, "snapshotChunkCount(format)");
  return Napi::Number::New(info.Env(), cbi1::ChunkCount(FormatArg(info.Env(), info[0])));
}

Napi::Value EncodeDelta(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  args::RequireCount(info, 6, "encodeDelta(format, dcId, baseSequence, sequence, buckets: Uint32Array, values: BigUint64Array)");
  FilterFormat format = FormatArg(env, info[0]);
  uint64_t dcId = args::U64(info[1], "dcId");
  uint64_t base = args::U64(info[2], "baseSequence");
  uint64_t sequence = args::U64(info[3], "sequence");
  auto buckets = args::U32Array(info[4], "buckets");
  auto values = args::U64Array(info[5], "values");
  if (buckets.ElementLength() != values.ElementLength()) {
    throw Napi::RangeError::New(env, "buckets and values must have the same length");
  }
  size_t count = buckets.ElementLength();
  Guard(env, [&] { cbi1::ValidateDelta(format, buckets.Data(), count); });
  auto frame = Napi::Buffer<uint8_t>::New(env, cbi1::DeltaFrameLen(count));
  cbi1::WriteDelta(format, dcId, base, sequence, buckets.Data(), values.Data(), count, frame.Data());
  return frame;
}

Napi::Value EncodeSnapshotChunks(const Napi::CallbackInfo& info) {
  SnapshotArgs snapshot = ParseSnapshotArgs(info, "encodeSnapshotChunks(format, dcId, epoch, words: BigUint64Array)");
  if (snapshot.words.ElementLength() > limits::kMaxSyncFilterWords) {
    throw Napi::RangeError::New(info.Env(), "encodeSnapshotChunks encodes at most " +
                                                std::to_string(limits::kMaxSyncFilterWords) +
                                                " buckets on the calling thread; use encodeSnapshotAsync()");
  }
  size_t len = cbi1::SnapshotFramesLen(snapshot.format);
  uint8_t* region = cbi1::TakeRegion(len);
  if (region == nullptr) throw ToJsError(info.Env(), Cbi1Error{"AllocationFailed", {}});
  cbi1::WriteSnapshot(snapshot.format, snapshot.dcId, snapshot.epoch, snapshot.words.Data(), region);
  return ChunkViews(info.Env(), snapshot.format, region, len);
}

Napi::Value EncodeSnapshotChunk(const Napi::CallbackInfo& info) {
  static const char* kSignature = "encodeSnapshotChunk(format, dcId, epoch, words: BigUint64Array, chunkIndex)";
  args::RequireCount(info, 5, kSignature);
  SnapshotArgs snapshot = ParseSnapshotArgs(info, kSignature);
  auto index = static_cast<uint32_t>(args::UInt(info[4], "chunkIndex", cbi1::ChunkCount(snapshot.format) - 1));
  auto frame = Napi::Buffer<uint8_t>::New(info.Env(), cbi1::ChunkFrameLen(snapshot.format, index));
  cbi1::WriteChunk(snapshot.format, snapshot.dcId, snapshot.epoch, snapshot.words.Data(), index, frame.Data());
  return frame;
}

Napi::Value DecodeFrame(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  args::RequireCount(info, 2, "decodeFrame(expected, bytes: Uint8Array)");
  FilterFormat format = FormatArg(env, info[0]);
  Napi::Uint8Array bytes = BytesArg(info[1]);
  cbi1::DecodedFrame frame = Guard(env, [&] { return cbi1::Decode(format, bytes.Data(), bytes.ByteLength()); });
  return DecodedToJs(env, frame);
}

Napi::Object Constants(Napi::Env env) {
  Napi::Object c = Napi::Object::New(env);
  c.Set("headerLen", Napi::Number::New(env, cbi1::kHeaderLen));
  c.Set("snapshotChunkBuckets", Napi::Number::New(env, cbi1::kSnapshotChunkBuckets));
  c.Set("maxBucketCount", Napi::Number::New(env, cbi1::kMaxBucketCount));
  c.Set("maxFrameBytes", Napi::Number::New(env, cbi1::kMaxFrameBytes));
  c.Set("maxDeltaImages", Napi::Number::New(env, cbi1::kMaxDeltaImages));
  c.Set("wireVersion", Napi::Number::New(env, cbi1::kWireVersion));
  c.Set("flagSnapshotChunk", Napi::Number::New(env, cbi1::kFlagSnapshotChunk));
  c.Set("flagDelta", Napi::Number::New(env, cbi1::kFlagDelta));
  c.Set("formatVersion", Napi::Number::New(env, cbi1::kFormatVersion));
  c.Set("fingerprintBits", Napi::Number::New(env, cbi1::kFingerprintBits));
  c.Set("slotsPerBucket", Napi::Number::New(env, cbi1::kSlotsPerBucket));
  c.Freeze();
  return c;
}

}  // namespace

void InitCbi1(Napi::Env env, Napi::Object exports) {
  exports.Set("cbi1Constants", Constants(env));
  exports.Set("validateFilterFormat", Napi::Function::New(env, ValidateFilterFormat, "validateFilterFormat"));
  exports.Set("snapshotChunkCount", Napi::Function::New(env, SnapshotChunkCount, "snapshotChunkCount"));
  exports.Set("encodeDelta", Napi::Function::New(env, EncodeDelta, "encodeDelta"));
  exports.Set("encodeSnapshotChunks", Napi::Function::New(env, EncodeSnapshotChunks, "encodeSnapshotChunks"));
  exports.Set("encodeSnapshotChunk", Napi::Function::New(env, EncodeSnapshotChunk, "encodeSnapshotChunk"));
  exports.Set("encodeSnapshotAsync", Napi::Function::New(env, cbi1js::EncodeSnapshotAsync, "encodeSnapshotAsync"));
  exports.Set("decodeFrame", Napi::Function::New(env, DecodeFrame, "decodeFrame"));
  exports.Set("SnapshotAssembly", cbi1js::DefineSnapshotAssembly(env));
}

}  // namespace kvrelay
