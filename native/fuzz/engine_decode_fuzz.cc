// libFuzzer target: the engine KV-event msgpack decoder. Input = [u8 options][u8 dpStartRank]
// [u8 dpSize - 1][msgpack payload]. Options: bits 0-1 pick the block size (1, 2, 4, 16), bit 2 Eagle.
// A rejected payload throws DecodeFailure and nothing else; an accepted one must produce a packed
// batch the pool validator accepts, whose counts match the summary, and which the pool applies
// without an invariant violation.
#include <cstddef>
#include <cstdint>

#include "ingest/engine_decode.h"
#include "fuzz_input.h"
#include "pool/packed_batch.h"
#include "pool/pool_filter_state.h"

using kvrelay::fuzz::Input;
namespace engine = kvrelay::engine;
namespace pool = kvrelay::pool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t options = in.Take<uint8_t>();
  engine::DecoderOptions o{};
  o.workerId = 7;
  o.kvBlockSize = uint32_t{1} << (2 * (options & 3));
  o.eagle = (options & 4) != 0;
  o.dpStartRank = in.Take<uint8_t>();
  o.dpSize = 1 + in.Take<uint8_t>() % 8;
  // Small bounds, so that inputs reach them.
  o.maxBlocksPerEvent = 1 + in.Take<uint8_t>();
  o.maxMessageWords = 64 + in.Take<uint16_t>();
  o.retainedBytes = 1024;
  engine::BatchDecoder decoder(o);
  engine::DecodeSummary s;
  try {
    s = decoder.Decode(in.Here(), in.Left(), o.dpStartRank);
  } catch (const engine::DecodeFailure& f) {
    if (f.code == engine::DecodeFailure::Code::kRankOutOfRange) {
      FUZZ_CHECK(f.rank < o.dpStartRank || f.rank - o.dpStartRank >= o.dpSize);
    }
    return 0;
  }
  const auto& meta = decoder.meta();
  const auto& words = decoder.words();
  FUZZ_CHECK(pool::ValidatePackedBatch(meta.data(), meta.size(), words.size()).empty());
  FUZZ_CHECK(words.size() <= o.maxMessageWords);
  FUZZ_CHECK(s.dpRank >= o.dpStartRank && s.dpRank - o.dpStartRank < o.dpSize);
  const size_t events = meta.size() / pool::kMetaStride;
  FUZZ_CHECK(events <= s.events);
  for (size_t e = 0; e < events; ++e) FUZZ_CHECK(meta[e * pool::kMetaStride + pool::kMetaDpRank] == s.dpRank);

  pool::PoolFilterState state(64, 1, 16);
  std::vector<uint8_t> errors(events);
  state.ApplyBatch(meta.data(), meta.size(), words.data(), errors.data());
  FUZZ_CHECK(state.counters().invariantViolations == 0);
  return 0;
}
