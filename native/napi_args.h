// Argument checking shared by the hashing / CKF / pool-state bindings. Bad types throw TypeError, bad
// values RangeError, domain errors an Error with a string `code`.
#pragma once
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace kvrelay {
namespace args {

constexpr double kMaxSafeInteger = 9007199254740991.0;

[[noreturn]] inline void ThrowCoded(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  throw error;
}

// bigint in [0, 2^64), or a non-negative safe integer number when allowNumber.
inline uint64_t U64(const Napi::Value& v, const char* what, bool allowNumber = false) {
  Napi::Env env = v.Env();
  if (v.IsBigInt()) {
    bool lossless = true;
    const uint64_t out = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(env, std::string(what) + " must be a u64 (0 <= x < 2^64)");
    return out;
  }
  if (allowNumber && v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0) || d > kMaxSafeInteger || std::floor(d) != d) {
      throw Napi::RangeError::New(env, std::string(what) + " must be a non-negative safe integer");
    }
    return static_cast<uint64_t>(d);
  }
  throw Napi::TypeError::New(env, std::string(what) + (allowNumber ? " must be a bigint or number" : " must be a bigint"));
}

inline uint32_t U32(const Napi::Value& v, const char* what) {
  Napi::Env env = v.Env();
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 4294967295.0 || std::floor(d) != d) {
    throw Napi::RangeError::New(env, std::string(what) + " must be an integer in [0, 2^32)");
  }
  return static_cast<uint32_t>(d);
}

inline bool Bool(const Napi::Value& v, const char* what) {
  if (!v.IsBoolean()) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

template <typename T>
inline Napi::TypedArrayOf<T> Typed(const Napi::Value& v, napi_typedarray_type type, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type) {
    throw Napi::TypeError::New(v.Env(), std::string(what) + " has the wrong typed-array type");
  }
  return v.As<Napi::TypedArrayOf<T>>();
}
inline Napi::Uint32Array U32Array(const Napi::Value& v, const char* what) {
  return Typed<uint32_t>(v, napi_uint32_array, (std::string(what) + " (Uint32Array)").c_str());
}
inline Napi::BigUint64Array U64Array(const Napi::Value& v, const char* what) {
  return Typed<uint64_t>(v, napi_biguint64_array, (std::string(what) + " (BigUint64Array)").c_str());
}

// undefined / null -> false (absent); string -> *out; anything else TypeError.
inline bool OptionalString(const Napi::Value& v, const char* what, std::string* out) {
  if (v.IsUndefined() || v.IsNull()) return false;
  if (!v.IsString()) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a string, null or undefined");
  *out = v.As<Napi::String>().Utf8Value();
  return true;
}

inline Napi::Value Arg(const Napi::CallbackInfo& info, size_t i) { return i < info.Length() ? info[i] : info.Env().Undefined(); }

}  // namespace args
}  // namespace kvrelay
