// libFuzzer target: the Dynamo event-plane decoder (router_event_decode.h). Input = [u8 format][the
// message]. The decoder never throws: a malformed message is a record with status kMalformed and
// nothing appended; an accepted counted one appends exactly one event that the pool validator
// accepts, whose kind, rank, worker and block count match the record, and which the pool applies
// without an invariant violation.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "ingest/router_event_decode.h"
#include "pool/packed_batch.h"
#include "pool/pool_filter_state.h"

using kvrelay::fuzz::Input;
namespace dynamo = kvrelay::dynamo;
namespace pool = kvrelay::pool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const auto format = static_cast<dynamo::MessageFormat>(in.Take<uint8_t>() % 3);
  dynamo::RouterEventDecoder decoder("kv-events", "kv_events");
  const dynamo::MessageRecord r = decoder.Decode(in.Here(), in.Left(), format);
  const auto& meta = decoder.meta();
  const auto& words = decoder.words();
  if (r.status != dynamo::MessageStatus::kOk || (r.flags & dynamo::kCounted) == 0) {
    FUZZ_CHECK(meta.empty() && words.empty());
    return 0;
  }
  FUZZ_CHECK(meta.size() == pool::kMetaStride);
  FUZZ_CHECK(pool::ValidatePackedBatch(meta.data(), meta.size(), words.size()).empty());
  FUZZ_CHECK(meta[pool::kMetaKind] == r.kind && meta[pool::kMetaDpRank] == r.dpRank && meta[pool::kMetaCount] == r.blocks);
  FUZZ_CHECK(words[0] == r.workerId);

  pool::PoolFilterState state(64, 1, 16);
  uint8_t error = 0;
  state.ApplyBatch(meta.data(), meta.size(), words.data(), &error);
  FUZZ_CHECK(state.counters().invariantViolations == 0);
  return 0;
}
