// libFuzzer target: the pool event batch. Input = [u8 eventCount][eventCount x 5 u32 meta][u64 words...].
// The batch goes through the validator the N-API layer uses; a rejected batch is never applied. An
// accepted one is applied in one ApplyBatch to one state and event by event (Store/Remove/Clear) to
// a twin: both must end identical (the planned path equals the unplanned one), and every rejected
// store (a bad sequence, or the tracked-block bound) must leave the state as it was. Ids and hashes
// are folded into small ranges so that parents, repeats, shared hashes and a full 64-bucket filter
// are common.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "pool/packed_batch.h"
#include "pool/pool_filter_state.h"

using kvrelay::fuzz::Input;
namespace pool = kvrelay::pool;

namespace {

constexpr uint32_t kBuckets = 64;
constexpr uint64_t kSeed = 0x5deece66d1b54a33ull;
constexpr uint32_t kMaxKicks = 16;
// Small enough that the per-pool tracked-block bound rejects stores too.
constexpr uint64_t kMaxTrackedBlocks = 48;

struct Image {
  std::vector<uint64_t> words;
  uint64_t residentCount, ownedHashes, lineageEntries, sourceCount;
  bool operator==(const Image& o) const {
    return words == o.words && residentCount == o.residentCount && ownedHashes == o.ownedHashes &&
           lineageEntries == o.lineageEntries && sourceCount == o.sourceCount;
  }
};

Image ImageOf(const pool::PoolFilterState& s) {
  const pool::Stats st = s.GetStats();
  const uint64_t* w = s.filter().words();
  return Image{std::vector<uint64_t>(w, w + s.filter().bucketCount()), st.residentCount, st.ownedHashes,
               st.lineageEntries, st.sourceCount};
}

// Folds the words of an accepted batch into small ranges, keeping the layout.
void Fold(const std::vector<uint32_t>& meta, std::vector<uint64_t>* words) {
  size_t w = 0;
  for (size_t e = 0; e < meta.size() / pool::kMetaStride; ++e) {
    const uint32_t* m = meta.data() + e * pool::kMetaStride;
    (*words)[w] &= 3;  // workerId
    const size_t n = pool::PackedEventWords(m);
    if (m[pool::kMetaKind] == pool::kStored) {
      const size_t ids = 1 + ((m[pool::kMetaFlags] & pool::kFlagParent) ? 1 : 0) + m[pool::kMetaCount];
      for (size_t i = w + 1; i < w + ids; ++i) (*words)[i] &= 0x3f;
      for (size_t i = w + ids; i < w + n; ++i) (*words)[i] &= 0xff;
    } else {
      for (size_t i = w + 1; i < w + n; ++i) (*words)[i] &= 0x3f;
    }
    w += n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const size_t events = in.Take<uint8_t>() % 33;
  std::vector<uint32_t> meta(events * pool::kMetaStride);
  for (auto& m : meta) m = in.Take<uint32_t>();
  for (size_t e = 0; e < events; ++e) {  // ranks and counts small enough to matter
    meta[e * pool::kMetaStride + pool::kMetaDpRank] &= 1;
  }
  std::vector<uint64_t> words(in.Left() / 8);
  for (auto& w : words) w = in.Take<uint64_t>();

  pool::PoolFilterState batched(kBuckets, kSeed, kMaxKicks, kMaxTrackedBlocks);
  pool::PoolFilterState single(kBuckets, kSeed, kMaxKicks, kMaxTrackedBlocks);
  const Image empty = ImageOf(batched);
  if (!pool::ValidatePackedBatch(meta.data(), meta.size(), words.size()).empty()) {
    // Rejected: the binding throws before touching the state.
    FUZZ_CHECK(ImageOf(batched) == empty);
    return 0;
  }
  Fold(meta, &words);

  std::vector<uint8_t> errors(events, 0xee);
  batched.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());

  size_t w = 0;
  for (size_t e = 0; e < events; ++e) {
    const uint32_t* m = meta.data() + e * pool::kMetaStride;
    const pool::PackedEvent ev = pool::DecodePackedEvent(m, words.data() + w);
    w += pool::PackedEventWords(m);
    const Image before = ImageOf(single);
    pool::PoolError err = pool::PoolError::kNone;
    switch (ev.kind) {
      case pool::kStored:
        err = single.Store(ev.store);
        if (err != pool::PoolError::kNone) FUZZ_CHECK(ImageOf(single) == before);  // a failed store changes nothing
        break;
      case pool::kRemoved:
        err = single.Remove(ev.store.workerId, ev.store.dpRank, ev.store.extIds, ev.store.count);
        break;
      case pool::kCleared:
        err = single.Clear(ev.store.workerId, ev.store.dpRank);
        break;
    }
    FUZZ_CHECK(errors[e] == static_cast<uint8_t>(err));
  }
  FUZZ_CHECK(ImageOf(batched) == ImageOf(single));
  FUZZ_CHECK(batched.GetStats().pendingEvents == events);
  return 0;
}
