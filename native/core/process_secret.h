// A 64-bit secret drawn once per process, for hash tables keyed by values a network peer chooses
// (engine block ids, canonical hashes of engine tokens): tables addressed by a public function and
// seed let a peer aim keys at one slot (HashDoS, issue 26 item 3). Never part of anything on the
// wire: the CKF's addressing stays the reference's.
#pragma once
#include <chrono>
#include <cstdint>
#include <exception>
#include <random>

namespace kvrelay {

// Murmur3's 64-bit finalizer: a bijection whose every output bit depends on every input bit.
inline uint64_t Fmix64(uint64_t v) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdULL;
  v ^= v >> 33;
  v *= 0xc4ceb9fe1a85ec53ULL;
  v ^= v >> 33;
  return v;
}

inline uint64_t DrawSecret() {
  uint64_t x = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  try {
    std::random_device device;
    x ^= (uint64_t{device()} << 32) | device();
  } catch (const std::exception&) {
    // No entropy source: the clock alone still varies per process.
  }
  return Fmix64(x ^ 0x9E3779B97F4A7C15ULL);
}

// The same value for the whole process (drawn on first use, thread-safe).
inline uint64_t ProcessSecret() {
  static const uint64_t secret = DrawSecret();
  return secret;
}

}  // namespace kvrelay
