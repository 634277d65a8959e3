// The packed event batch at the N-API boundary: argument parsing and validation of (meta, words),
// and the exported layout constants (`packedBatchLayout`) the JS encoder uses.
#pragma once
#include <napi.h>

namespace kvrelay {

struct PackedBatchArgs {
  Napi::Uint32Array meta;
  Napi::BigUint64Array words;
  size_t events;
};

// Arguments `first` (meta: Uint32Array) and `first + 1` (words: BigUint64Array), validated: TypeError
// for wrong types, RangeError("malformed event batch: ...") for a malformed encoding.
PackedBatchArgs PackedBatchArg(const Napi::CallbackInfo& info, size_t first);

}  // namespace kvrelay
