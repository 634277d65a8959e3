// JavaScript surface of the CBI1 codec: argument checking (TypeError / RangeError), conversion of
// codec errors into Errors with a `code`, the synchronous encoders, the worker-thread snapshot
// encoder and the SnapshotAssembly class.
#include <napi.h>

#include <cmath>
#include <cstring>
#include <string>

#include "cbi1.h"
#include "cbi1_region.h"
#include "modules.h"
#include "napi_args.h"
#include "native_limits.h"

namespace kvrelay {
namespace {

using cbi1::Cbi1Error;
using cbi1::FilterFormat;

Napi::Value U64ToJs(Napi::Env env, uint64_t value, bool big) {
  if (big) return Napi::BigInt::New(env, value);
  return Napi::Number::New(env, static_cast<double>(value));
}

Napi::Object FormatToJs(Napi::Env env, const FilterFormat& format) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("seed", Napi::BigInt::New(env, format.seed));
  object.Set("bucketCount", Napi::Number::New(env, static_cast<double>(format.bucketCount)));
  return object;
}

Napi::Error ToJsError(Napi::Env env, const Cbi1Error& error) {
  std::string message = error.Message();
  Napi::Error js = error.argument ? Napi::RangeError::New(env, message) : Napi::Error::New(env, message);
  js.Set("code", Napi::String::New(env, error.code));
  for (const auto& detail : error.details) js.Set(detail.name, U64ToJs(env, detail.value, detail.big));
  if (error.hasExpected) js.Set("expected", FormatToJs(env, error.expected));
  return js;
}

// Runs `body`, turning codec errors into JavaScript exceptions.
template <typename Body>
auto Guard(Napi::Env env, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const Cbi1Error& error) {
    throw ToJsError(env, error);
  }
}

// --- Arguments (napi_args.h, plus the filter format) --------------------------------------------

// `{seed: bigint, bucketCount: number | bigint}`, optionally with the CkfFormat identity fields
// (formatVersion, fingerprintBits, slotsPerBucket) that must then be 1 / 16 / 4.
FilterFormat FormatArg(Napi::Env env, Napi::Value value) {
  Napi::Object object = args::Object(value, "format");
  uint64_t seed = args::U64(object.Get("seed"), "format.seed");
  Napi::Value countValue = object.Get("bucketCount");
  uint64_t bucketCount;
  if (countValue.IsBigInt()) {
    bucketCount = args::U64(countValue, "format.bucketCount");
  } else {
    if (!countValue.IsNumber()) throw Napi::TypeError::New(env, "format.bucketCount must be a number or bigint");
    double number = countValue.As<Napi::Number>().DoubleValue();
    // Anything that is not an integer in range is simply not a valid bucket count.
    bool integral = number >= 0 && number <= 9007199254740991.0 && std::floor(number) == number;
    bucketCount = integral ? static_cast<uint64_t>(number) : 0;
  }
  Napi::Value version = object.Get("formatVersion");
  Napi::Value bits = object.Get("fingerprintBits");
  Napi::Value slots = object.Get("slotsPerBucket");
  return Guard(env, [&] {
    if (!version.IsUndefined() || !bits.IsUndefined() || !slots.IsUndefined()) {
      auto field = [&](Napi::Value v, const char* name, uint64_t absent) {
        return v.IsUndefined() ? absent : args::UInt(v, name, UINT32_MAX);
      };
      cbi1::CheckFormatIdentity(field(version, "format.formatVersion", cbi1::kFormatVersion),
                                field(bits, "format.fingerprintBits", cbi1::kFingerprintBits),
                                field(slots, "format.slotsPerBucket", cbi1::kSlotsPerBucket));
    }
    return cbi1::MakeFormat(seed, bucketCount);
  });
}

Napi::Uint8Array BytesArg(Napi::Value value) { return args::U8Array(value, "bytes"); }

Napi::BigUint64Array WordsArg(Napi::Value value) { return args::U64Array(value, "words"); }

// --- Results --------------------------------------------------------------------------------

// Hands a vector's storage to JavaScript without copying.
template <typename T>
Napi::ArrayBuffer VectorToArrayBuffer(Napi::Env env, std::vector<T>&& data) {
  if (data.empty()) return Napi::ArrayBuffer::New(env, 0);
  auto* owned = new std::vector<T>(std::move(data));
  return Napi::ArrayBuffer::New(
      env, owned->data(), owned->size() * sizeof(T), [](Napi::Env, void*, std::vector<T>* hint) { delete hint; },
      owned);
}

Napi::Object HeaderToJs(Napi::Env env, const cbi1::Header& h) {
  Napi::Object header = Napi::Object::New(env);
  header.Set("wireVersion", Napi::Number::New(env, h.wireVersion));
  header.Set("flags", Napi::Number::New(env, h.flags));
  header.Set("fingerprintBits", Napi::Number::New(env, h.fingerprintBits));
  header.Set("slotsPerBucket", Napi::Number::New(env, h.slotsPerBucket));
  header.Set("formatVersion", Napi::Number::New(env, h.formatVersion));
  header.Set("seed", Napi::BigInt::New(env, h.seed));
  // Equal to the expected (validated) bucket count, so at most 2^24.
  header.Set("bucketCount", Napi::Number::New(env, static_cast<double>(h.bucketCount)));
  header.Set("dcId", Napi::BigInt::New(env, h.dcId));
  header.Set("epoch", Napi::BigInt::New(env, h.epoch));
  header.Set("checksum", Napi::Number::New(env, h.checksum));
  return header;
}

Napi::Object DecodedToJs(Napi::Env env, const cbi1::DecodedFrame& f) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("kind", Napi::String::New(env, f.kind == cbi1::FrameKind::Delta ? "delta" : "chunk"));
  result.Set("header", HeaderToJs(env, f.header));
  if (f.kind == cbi1::FrameKind::Delta) {
    result.Set("baseEpoch", Napi::BigInt::New(env, f.baseEpoch));
    Napi::Uint32Array buckets = Napi::Uint32Array::New(env, f.imageCount);
    Napi::BigUint64Array values = Napi::BigUint64Array::New(env, f.imageCount);
    for (uint32_t i = 0; i < f.imageCount; ++i) {
      const uint8_t* image = f.images + i * cbi1::kDeltaImageBytes;
      buckets[i] = cbi1::LoadU32(image);
      values[i] = cbi1::LoadU64(image + 4);
    }
    result.Set("buckets", buckets);
    result.Set("values", values);
  } else {
    result.Set("chunkIndex", Napi::Number::New(env, f.chunkIndex));
    result.Set("chunkCount", Napi::Number::New(env, f.chunkCount));
    result.Set("bucketOffset", Napi::Number::New(env, static_cast<double>(f.bucketOffset)));
    Napi::BigUint64Array words = Napi::BigUint64Array::New(env, f.wordCount);
    if (f.wordCount > 0) std::memcpy(words.Data(), f.words, f.wordCount * 8);
    result.Set("words", words);
  }
  return result;
}

// --- Functions ------------------------------------------------------------------------------

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

struct SnapshotArgs {
  FilterFormat format;
  uint64_t dcId;
  uint64_t epoch;
  Napi::BigUint64Array words;
};

SnapshotArgs ParseSnapshotArgs(const Napi::CallbackInfo& info, const char* signature) {
  Napi::Env env = info.Env();
  args::RequireCount(info, 4, signature);
  SnapshotArgs snapshot{FormatArg(env, info[0]), args::U64(info[1], "dcId"), args::U64(info[2], "epoch"),
                    WordsArg(info[3])};
  Guard(env, [&] { cbi1::ValidateSnapshot(snapshot.format, snapshot.words.ElementLength()); });
  return snapshot;
}

// Hands an encoded snapshot region to JavaScript as one external ArrayBuffer (returned to the
// region pool once every chunk view is collected) and returns a Uint8Array view per chunk frame.
Napi::Array ChunkViews(Napi::Env env, const FilterFormat& format, uint8_t* region, size_t len) {
  auto giveBack = [](Napi::Env, void* data, size_t* size) {
    cbi1::GiveRegion(static_cast<uint8_t*>(data), *size);
    delete size;
  };
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, region, len, giveBack, new size_t(len));
  uint32_t count = cbi1::ChunkCount(format);
  Napi::Array views = Napi::Array::New(env, count);
  for (uint32_t i = 0; i < count; ++i) {
    views[i] = Napi::Uint8Array::New(env, cbi1::ChunkFrameLen(format, i), buffer, i * cbi1::kMaxFrameBytes);
  }
  return views;
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

// Encodes a whole snapshot on a libuv worker thread, so the event loop only wraps finished
// memory. The reference keeps the words array from being collected while the worker reads it.
class EncodeSnapshotWorker : public Napi::AsyncWorker {
 public:
  EncodeSnapshotWorker(Napi::Env env, const SnapshotArgs& snapshot)
      : Napi::AsyncWorker(env, "kvrelay.cbi1.encodeSnapshot"),
        deferred_(Napi::Promise::Deferred::New(env)),
        format_(snapshot.format),
        dcId_(snapshot.dcId),
        epoch_(snapshot.epoch),
        words_(snapshot.words.Data()),
        wordsRef_(Napi::Persistent(static_cast<Napi::Object>(snapshot.words))),
        len_(cbi1::SnapshotFramesLen(snapshot.format)) {}

  ~EncodeSnapshotWorker() override {
    if (region_ != nullptr) cbi1::GiveRegion(region_, len_);
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    region_ = cbi1::TakeRegion(len_);
    if (region_ == nullptr) {
      SetError("AllocationFailed");
      return;
    }
    cbi1::WriteSnapshot(format_, dcId_, epoch_, words_, region_);
  }

  void OnOK() override {
    uint8_t* region = region_;
    region_ = nullptr;  // owned by the ArrayBuffer from here on
    deferred_.Resolve(ChunkViews(Env(), format_, region, len_));
  }

  // Execute fails only when the region cannot be allocated.
  void OnError(const Napi::Error&) override {
    deferred_.Reject(ToJsError(Env(), Cbi1Error{"AllocationFailed", {}}).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  FilterFormat format_;
  uint64_t dcId_;
  uint64_t epoch_;
  const uint64_t* words_;
  Napi::ObjectReference wordsRef_;
  size_t len_;
  uint8_t* region_ = nullptr;
};

Napi::Value EncodeSnapshotAsync(const Napi::CallbackInfo& info) {
  SnapshotArgs snapshot = ParseSnapshotArgs(info, "encodeSnapshotAsync(format, dcId, epoch, words: BigUint64Array)");
  auto* worker = new EncodeSnapshotWorker(info.Env(), snapshot);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value DecodeFrame(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  args::RequireCount(info, 2, "decodeFrame(expected, bytes: Uint8Array)");
  FilterFormat format = FormatArg(env, info[0]);
  Napi::Uint8Array bytes = BytesArg(info[1]);
  cbi1::DecodedFrame frame = Guard(env, [&] { return cbi1::Decode(format, bytes.Data(), bytes.ByteLength()); });
  return DecodedToJs(env, frame);
}

// --- SnapshotAssembly -----------------------------------------------------------------------

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
bool CollectImagesArg(Napi::Env env, Napi::Value options) {
  if (options.IsUndefined()) return true;
  Napi::Value images = args::Object(options, "options").Get("images");
  if (images.IsUndefined()) return true;
  if (!images.IsBoolean()) throw Napi::TypeError::New(env, "options.images must be a boolean");
  return images.As<Napi::Boolean>().Value();
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
        assembly_(format_, CollectImagesArg(info.Env(), info[1])) {}

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

  FilterFormat format_;
  cbi1::SnapshotAssembly assembly_;
};

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
  exports.Set("encodeSnapshotAsync", Napi::Function::New(env, EncodeSnapshotAsync, "encodeSnapshotAsync"));
  exports.Set("decodeFrame", Napi::Function::New(env, DecodeFrame, "decodeFrame"));
  exports.Set("SnapshotAssembly", SnapshotAssemblyWrap::Define(env));
}

}  // namespace kvrelay
