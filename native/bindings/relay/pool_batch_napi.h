// The packed event batch at the N-API boundary: argument parsing and validation of (meta, words),
// and the exported layout constants (`packedBatchLayout`) the JS encoder uses.
#pragma once
#include <napi.h>

#include <cstdint>
#include <vector>

namespace kvrelay {

// A packed batch copied out of the caller's arrays, then validated. The copy is what gets applied:
// the JS arrays may change right after the call (an async apply still in flight) or while it runs
// (a SharedArrayBuffer written by another thread), and neither may change what was validated.
struct PackedBatch {
  std::vector<uint32_t> meta;
  std::vector<uint64_t> words;
  size_t events() const;
};

// Arguments `first` (meta: Uint32Array) and `first + 1` (words: BigUint64Array) copied into *out
// (its storage is reused) and validated: TypeError for wrong types, RangeError for a batch of more
// than maxWords words ("event batch too large ...") or a malformed encoding ("malformed event batch:
// ..."). Nothing is applied when it throws.
void CopyPackedBatchArg(const Napi::CallbackInfo& info, size_t first, size_t maxWords, PackedBatch* out);

}  // namespace kvrelay
