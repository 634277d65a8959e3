// Argument checking shared by every binding (hashing, CKF, pool state, CBI1, the test addon). Bad
// types throw TypeError, bad values RangeError, domain errors an Error with a string `code`.
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

// A number that is an integer in [0, maximum] (maximum below 2^53).
inline uint64_t UInt(const Napi::Value& v, const char* what, uint64_t maximum) {
  Napi::Env env = v.Env();
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > static_cast<double>(maximum) || std::floor(d) != d) {
    throw Napi::RangeError::New(env, std::string(what) + " must be an integer in [0, " + std::to_string(maximum) + "]");
  }
  return static_cast<uint64_t>(d);
}

inline uint32_t U32(const Napi::Value& v, const char* what) { return static_cast<uint32_t>(UInt(v, what, UINT32_MAX)); }

// A finite number.
inline double Finite(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d)) throw Napi::RangeError::New(v.Env(), std::string(what) + " must be finite");
  return d;
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
inline Napi::Uint8Array U8Array(const Napi::Value& v, const char* what) {
  return Typed<uint8_t>(v, napi_uint8_array, (std::string(what) + " (Uint8Array)").c_str());
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

inline Napi::Object Object(const Napi::Value& v, const char* what) {
  if (!v.IsObject()) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be an object");
  return v.As<Napi::Object>();
}

// At least `count` arguments, else TypeError naming the signature.
inline void RequireCount(const Napi::CallbackInfo& info, size_t count, const char* signature) {
  if (info.Length() < count) throw Napi::TypeError::New(info.Env(), std::string("expected ") + signature);
}

inline Napi::Value Arg(const Napi::CallbackInfo& info, size_t i) { return i < info.Length() ? info[i] : info.Env().Undefined(); }

}  // namespace args
}  // namespace kvrelay
