// N-API surface of the stateless CKF helpers (§2) consumers use to probe replicas: the bucket count
// for an expected capacity, a hash's fingerprint and buckets, and a bucket word's membership test.
#include <napi.h>

#include "core/ckf.h"
#include "bindings/modules.h"
#include "bindings/napi_args.h"

namespace kvrelay {
namespace {

Napi::Value CkfBucketCount(const Napi::CallbackInfo& info) {
  const uint64_t expected = args::U64(args::Arg(info, 0), "expectedBlocks", true);
  uint64_t count = 0;
  switch (ckf::BucketCountFor(expected, &count)) {
    case ckf::BucketCountError::kExpectedCapacityZero:
      args::ThrowCoded(info.Env(), "ExpectedCapacityZero", "expected blocks per DC must be > 0");
    case ckf::BucketCountError::kCapacityOverflow:
      args::ThrowCoded(info.Env(), "CapacityOverflow", "bucket count overflows u64");
    case ckf::BucketCountError::kNone:
      break;
  }
  return Napi::Number::New(info.Env(), static_cast<double>(count));  // a power of two: exact as a double
}

uint64_t BucketCountArg(const Napi::Value& v) {
  const uint64_t n = args::U64(v, "bucketCount", true);
  if (!ckf::IsValidBucketCount(n) || n > (uint64_t{1} << 32)) {
    throw Napi::RangeError::New(v.Env(), "bucketCount must be a power of two in [2, 2^32]");
  }
  return n;
}

Napi::Value CkfPrepare(const Napi::CallbackInfo& info) {
  const uint64_t hash = args::U64(args::Arg(info, 0), "hash");
  const uint64_t bucketCount = BucketCountArg(args::Arg(info, 1));
  const uint64_t seed = args::U64(args::Arg(info, 2), "seed");
  const ckf::Prepared p = ckf::Addressing(bucketCount, seed).Prepare(hash);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("fingerprint", Napi::Number::New(info.Env(), p.fp));
  out.Set("bucketA", Napi::Number::New(info.Env(), static_cast<double>(p.a)));
  out.Set("bucketB", Napi::Number::New(info.Env(), static_cast<double>(p.b)));
  return out;
}

Napi::Value BucketContains(const Napi::CallbackInfo& info) {
  const uint64_t word = args::U64(args::Arg(info, 0), "word");
  const uint32_t fp = args::U32(args::Arg(info, 1), "fingerprint");
  if (fp == 0 || fp > 0xFFFF) throw Napi::RangeError::New(info.Env(), "fingerprint must be in [1, 65535]");
  return Napi::Boolean::New(info.Env(), ckf::BucketContains(word, static_cast<uint16_t>(fp)));
}

}  // namespace

void InitCkfHelpers(Napi::Env env, Napi::Object exports) {
  exports.Set("ckfBucketCount", Napi::Function::New(env, CkfBucketCount, "ckfBucketCount"));
  exports.Set("ckfPrepare", Napi::Function::New(env, CkfPrepare, "ckfPrepare"));
  exports.Set("bucketContains", Napi::Function::New(env, BucketContains, "bucketContains"));
}

}  // namespace kvrelay
