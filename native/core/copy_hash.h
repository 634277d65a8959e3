// Copy bytes and hash them in one pass (a snapshot chunk's words and its checksum, cbi1.cc).
//
// Large copies store past the cache (non-temporal stores): a plain copy first reads every target
// line into the cache before overwriting it, so a 4 MiB chunk cost three passes over memory (read
// the source, read the target, write it back) where memcpy of the same size costs two; that third
// pass kept the snapshot encode near 0.67 of memcpy. Every 64-byte line of the source is loaded
// once: the loaded registers go both to the target and to a small buffer the hash then reads from
// the L1 cache, so the checksum covers exactly the bytes written even if the source changes
// meanwhile (a SharedArrayBuffer another thread writes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include "xxhash.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvrelay {

// Below this a copy stays in the cache: its target is read again soon (the frame is sent), and a
// small copy does not evict much.
constexpr size_t kStreamCopyMinBytes = 1024 * 1024;
// Bytes copied per hash update: small enough that the buffer stays in L1.
constexpr size_t kCopyHashStep = 2048;

// target[0, len) = source[0, len); hashes the copied bytes into `state`.
inline void CopyAndHash(uint8_t* target, const uint8_t* source, size_t len, XXH3_state_t* state) {
#if defined(__SSE2__)
  if (len >= kStreamCopyMinBytes) {
    alignas(64) uint8_t line[kCopyHashStep];
    // Up to the target's first 16-byte boundary as a plain copy (streaming stores need alignment).
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(target) & 15)) & 15;
    std::memcpy(target, source, head);
    XXH3_64bits_update(state, target, head);
    size_t done = head;
    while (len - done >= kCopyHashStep) {
      const uint8_t* from = source + done;
      uint8_t* to = target + done;
      for (size_t i = 0; i < kCopyHashStep; i += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 32));
        const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 48), d);
        _mm_store_si128(reinterpret_cast<__m128i*>(line + i), a);
        _mm_store_si128(reinterpret_cast<__m128i*>(line + i + 16), b);
        _mm_store_si128(reinterpret_cast<__m128i*>(line + i + 32), c);
        _mm_store_si128(reinterpret_cast<__m128i*>(line + i + 48), d);
      }
      XXH3_64bits_update(state, line, kCopyHashStep);
      done += kCopyHashStep;
    }
    // Streaming stores are weakly ordered: they must be visible before the frame is handed on.
    _mm_sfence();
    std::memcpy(target + done, source + done, len - done);
    XXH3_64bits_update(state, target + done, len - done);
    return;
  }
#endif
  std::memcpy(target, source, len);
  XXH3_64bits_update(state, target, len);
}

}  // namespace kvrelay
