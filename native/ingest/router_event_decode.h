// Dynamo event-plane messages -> the pool's packed apply batch (dynamo-event-plane-and-discovery.md
// §4-§6; hashing-ckf-cbi1.md §4.1-§4.3). Pure C++, no N-API; one decoder per thread.
//
// A message is one of:
// - kEnvelope: the event plane's MessagePack EventEnvelope {publisher_id, sequence, published_at,
//   topic, payload: bin} (§5.1; fields in any order, unknown ones skipped), whose payload is a
//   MessagePack RouterEvent (rmp_serde to_vec_named: maps with field names); or, from Dynamo before
//   the event plane (§5.5), a bare serde_json RouterEvent (first byte '{'): no publisher, no sequence;
// - kFramed: a ZMQ event-plane data frame (§5.4): a 5-byte header (version 1, payload length u32
//   big-endian) and the envelope;
// - kJson: a bare serde_json RouterEvent (a JetStream stream message, §5.3).
// The RouterEvent's block_hash is the engine's id (lineage only), tokens_hash the spec's block hash;
// both go into the packed batch as they are, and the pool chains canonical hashes through the parent
// per (worker, dp rank) (§6): nothing here hashes.
// Filter (§4.1): a store or removal counts only on the device tier and in the worker residency domain
// (absent = worker); cache_owner or an unknown domain is unsupported; a cleared counts unless its
// domain is cache_owner. What does not count is reported, not packed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ingest/engine_msgpack.h"

namespace kvrelay {
namespace dynamo {

enum class MessageFormat : uint32_t { kEnvelope = 0, kFramed = 1, kJson = 2 };

enum class MessageStatus : uint32_t { kOk = 0, kMalformed = 1, kOtherTopic = 2 };

// Record flags.
constexpr uint32_t kHasEnvelope = 1;    // publisher and sequence are set
constexpr uint32_t kCounted = 2;        // an event was packed
constexpr uint32_t kOtherTier = 4;      // not the device tier: ignored
constexpr uint32_t kUnsupportedDomain = 8;  // cache_owner or unknown residency domain: ignored

struct MessageRecord {
  MessageStatus status;
  uint32_t flags;
  uint64_t publisherId;
  uint64_t sequence;
  uint64_t workerId;
  uint64_t eventId;
  uint32_t dpRank;
  uint32_t kind;    // pool::EventKind of the packed event (0 when none)
  uint32_t blocks;  // block ids in the packed event
};

class RouterEventDecoder {
 public:
  // `topic`: the envelope topic accepted (kv-events); `legacyTopic` also (kv_events), may be empty.
  RouterEventDecoder(std::string topic, std::string legacyTopic);

  // Decodes one message; on kOk with kCounted, its packed event is appended to meta() / words().
  // Never throws for bad input: a malformed message gets kMalformed and error() says why (nothing
  // appended).
  MessageRecord Decode(const uint8_t* message, size_t length, MessageFormat format);

  const std::string& error() const { return error_; }
  std::vector<uint32_t>& meta() { return meta_; }
  std::vector<uint64_t>& words() { return words_; }

 private:
  template <typename Reader>
  void DecodeRouterEvent(Reader& r, MessageRecord* out);
  template <typename Reader>
  void DecodeKvCacheEvent(Reader& r, MessageRecord* out);
  template <typename Reader>
  void DecodeData(Reader& r);
  template <typename Reader>
  void DecodeStored(Reader& r);
  template <typename Reader>
  void DecodeRemoved(Reader& r);
  void DecodeEnvelope(const uint8_t* p, size_t n, MessageRecord* out);
  void Pack(MessageRecord* out);

  std::string topic_;
  std::string legacyTopic_;
  std::string error_;
  std::vector<uint32_t> meta_;
  std::vector<uint64_t> words_;

  // Per-event scratch, reused.
  uint32_t kind_ = 0;
  bool hasData_ = false;
  bool hasParent_ = false;
  uint64_t parent_ = 0;
  bool hasStart_ = false;
  uint32_t start_ = 0;
  std::vector<uint64_t> extIds_;
  std::vector<uint64_t> tokensHashes_;
  // Residency: 0 absent, 1 worker, 2 cache_owner, 3 unknown; tier: true = device.
  uint8_t domain_ = 0;
  bool device_ = true;
};

}  // namespace dynamo
}  // namespace kvrelay
