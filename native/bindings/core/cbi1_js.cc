// Arguments and JavaScript values of the CBI1 binding (cbi1_js.h): argument checks throw TypeError /
// RangeError (napi_args.h), codec errors become Errors with a `code`.
#include "bindings/core/cbi1_js.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/cbi1_region.h"
#include "bindings/napi_args.h"

namespace kvrelay {
namespace cbi1js {

using cbi1::Cbi1Error;
using cbi1::FilterFormat;

namespace {

Napi::Value U64ToJs(Napi::Env env, uint64_t value, bool big) {
  if (big) return Napi::BigInt::New(env, value);
  return Napi::Number::New(env, static_cast<double>(value));
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

}  // namespace

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
    bool integral = number >= 0 && number <= args::kMaxSafeInteger && std::floor(number) == number;
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

SnapshotArgs ParseSnapshotArgs(const Napi::CallbackInfo& info, const char* signature) {
  Napi::Env env = info.Env();
  args::RequireCount(info, 4, signature);
  SnapshotArgs snapshot{FormatArg(env, info[0]), args::U64(info[1], "dcId"), args::U64(info[2], "epoch"),
                        WordsArg(info[3])};
  Guard(env, [&] { cbi1::ValidateSnapshot(snapshot.format, snapshot.words.ElementLength()); });
  return snapshot;
}

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

}  // namespace cbi1js
}  // namespace kvrelay
