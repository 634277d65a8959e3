// Arguments and JavaScript values of the CBI1 binding, shared by its units: the functions
// (cbi1_napi.cc), the worker-thread snapshot encoder (cbi1_snapshot_worker.cc) and the
// SnapshotAssembly class (cbi1_assembly_wrap.cc).
#pragma once
#include <napi.h>

#include <cstdint>
#include <vector>

#include "core/cbi1.h"

namespace kvrelay {
namespace cbi1js {

// A codec error as a JavaScript Error (RangeError for a bad argument) with its `code` and details.
Napi::Error ToJsError(Napi::Env env, const cbi1::Cbi1Error& error);

// Runs `body`, turning codec errors into JavaScript exceptions.
template <typename Body>
auto Guard(Napi::Env env, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const cbi1::Cbi1Error& error) {
    throw ToJsError(env, error);
  }
}

// `{seed: bigint, bucketCount: number | bigint}`, optionally with the CkfFormat identity fields
// (formatVersion, fingerprintBits, slotsPerBucket) that must then be 1 / 16 / 4.
cbi1::FilterFormat FormatArg(Napi::Env env, Napi::Value value);
Napi::Object FormatToJs(Napi::Env env, const cbi1::FilterFormat& format);

Napi::Uint8Array BytesArg(Napi::Value value);
Napi::BigUint64Array WordsArg(Napi::Value value);

// The (format, dcId, epoch, words) of every snapshot encoder, checked against each other.
struct SnapshotArgs {
  cbi1::FilterFormat format;
  uint64_t dcId;
  uint64_t epoch;
  Napi::BigUint64Array words;
};
SnapshotArgs ParseSnapshotArgs(const Napi::CallbackInfo& info, const char* signature);

// Hands an encoded snapshot region to JavaScript as one external ArrayBuffer (returned to the
// region pool once every chunk view is collected) and returns a Uint8Array view per chunk frame.
Napi::Array ChunkViews(Napi::Env env, const cbi1::FilterFormat& format, uint8_t* region, size_t len);

Napi::Object DecodedToJs(Napi::Env env, const cbi1::DecodedFrame& frame);

// Hands a vector's storage to JavaScript without copying.
template <typename T>
Napi::ArrayBuffer VectorToArrayBuffer(Napi::Env env, std::vector<T>&& data) {
  if (data.empty()) return Napi::ArrayBuffer::New(env, 0);
  auto* owned = new std::vector<T>(std::move(data));
  return Napi::ArrayBuffer::New(
      env, owned->data(), owned->size() * sizeof(T), [](Napi::Env, void*, std::vector<T>* hint) { delete hint; },
      owned);
}

// The entry points of the other units, registered by InitCbi1.
Napi::Value EncodeSnapshotAsync(const Napi::CallbackInfo& info);
Napi::Function DefineSnapshotAssembly(Napi::Env env);

}  // namespace cbi1js
}  // namespace kvrelay
