// Dynamo event-plane decoding (see router_event_decode.h). The RouterEvent rules are written once,
// over a reader of either encoding (MessagePack or JSON) with the same small interface.
#include "ingest/router_event_decode.h"

#include <cstring>
#include <new>
#include <utility>

#include "ingest/json_reader.h"
#include "pool/packed_batch.h"

namespace kvrelay {
namespace dynamo {
namespace {

using engine::DecodeFailure;
using engine::Malformed;
using engine::msgpack::Cursor;
using engine::msgpack::Equals;
using engine::msgpack::Type;
using engine::msgpack::Value;

// The ZMQ event plane's frame header: version u8, payload length u32 big-endian (§5.4).
constexpr size_t kFrameHeaderBytes = 5;
constexpr uint8_t kFrameVersion = 1;

// The MessagePack reader with the JSON reader's interface (json_reader.h).
class MsgpackReader {
 public:
  MsgpackReader(const uint8_t* begin, const uint8_t* end) : c_(begin, end) {}

  bool AtEnd() const { return c_.AtEnd(); }

  bool TryNull() { return c_.TryReadNil(); }

  bool NextIsString() const { return !c_.AtEnd() && ((*c_.position() & 0xe0) == 0xa0 || (*c_.position() >= 0xd9 && *c_.position() <= 0xdb)); }

  template <typename F>
  void Object(F entry) {
    const Value v = c_.Read();
    if (v.type != Type::kMap) Malformed("msgpack: expected a map");
    Enter();
    for (uint32_t i = 0; i < v.length; ++i) {
      const uint8_t* name;
      uint32_t length;
      if (c_.ReadKey(&name, &length)) {
        entry(name, length);
      } else {
        Skip();
      }
    }
    --depth_;
  }

  template <typename F>
  void Array(F element) {
    const Value v = c_.Read();
    if (v.type != Type::kArray) Malformed("msgpack: expected an array");
    Enter();
    for (uint32_t i = 0; i < v.length; ++i) element();
    --depth_;
  }

  uint64_t U64(const char* what) {
    const Value v = c_.Read();
    if (v.type != Type::kInt || v.negative) Malformed(std::string(what) + ": not a u64");
    return v.bits;
  }

  void String(const uint8_t** data, uint32_t* length) {
    const Value v = c_.Read();
    if (v.type != Type::kStr) Malformed("msgpack: expected a string");
    *data = v.data;
    *length = v.length;
  }

  void Bin(const uint8_t** data, uint32_t* length) {
    const Value v = c_.Read();
    if (v.type != Type::kBin) Malformed("msgpack: expected bytes (bin)");
    *data = v.data;
    *length = v.length;
  }

  void Skip() { c_.Skip(depth_); }

 private:
  void Enter() {
    if (++depth_ > engine::msgpack::kMaxDepth) Malformed("msgpack: nested deeper than 32 levels");
  }

  Cursor c_;
  int depth_ = 0;
};

class JsonReader : public engine::json::Reader {
 public:
  using engine::json::Reader::Reader;
  bool NextIsString() { return Peek() == '"'; }
};

template <typename Reader>
uint32_t U32(Reader& r, const char* what) {
  const uint64_t v = r.U64(what);
  if (v > UINT32_MAX) Malformed(std::string(what) + ": above 2^32 - 1");
  return static_cast<uint32_t>(v);
}

bool Is(const uint8_t* name, uint32_t length, const char* literal) { return Equals(name, length, literal); }

}  // namespace

RouterEventDecoder::RouterEventDecoder(std::string topic, std::string legacyTopic)
    : topic_(std::move(topic)), legacyTopic_(std::move(legacyTopic)) {}

MessageRecord RouterEventDecoder::Decode(const uint8_t* message, size_t length, MessageFormat format) {
  MessageRecord out{};
  const size_t metaMark = meta_.size();
  const size_t wordsMark = words_.size();
  try {
    if (format == MessageFormat::kJson) {
      JsonReader r(message, message + length);
      DecodeRouterEvent(r, &out);
    } else {
      const uint8_t* p = message;
      size_t n = length;
      if (format == MessageFormat::kFramed) {
        if (n < kFrameHeaderBytes) Malformed("frame: shorter than its 5-byte header");
        if (p[0] != kFrameVersion) Malformed("frame: version " + std::to_string(p[0]) + ", not 1");
        const uint32_t declared = (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 8) | p[4];
        if (declared != n - kFrameHeaderBytes) Malformed("frame: header length " + std::to_string(declared) + " but " + std::to_string(n - kFrameHeaderBytes) + " payload bytes");
        p += kFrameHeaderBytes;
        n -= kFrameHeaderBytes;
      }
      if (n > 0 && p[0] == '{' && format == MessageFormat::kEnvelope) {
        // Before the event plane: a bare serde_json RouterEvent on the component subject (§5.5).
        JsonReader r(p, p + n);
        DecodeRouterEvent(r, &out);
      } else {
        DecodeEnvelope(p, n, &out);
      }
    }
    if (out.status == MessageStatus::kOk) Pack(&out);
  } catch (const DecodeFailure& f) {
    meta_.resize(metaMark);
    words_.resize(wordsMark);
    error_ = f.message;
    out = MessageRecord{};
    out.status = MessageStatus::kMalformed;
  } catch (const std::bad_alloc&) {
    meta_.resize(metaMark);
    words_.resize(wordsMark);
    error_ = "cannot allocate the decoder's scratch for this message";
    out = MessageRecord{};
    out.status = MessageStatus::kMalformed;
  }
  return out;
}

void RouterEventDecoder::DecodeEnvelope(const uint8_t* p, size_t n, MessageRecord* out) {
  MsgpackReader r(p, p + n);
  bool hasPublisher = false, hasSequence = false, hasTopic = false, hasPayload = false;
  const uint8_t* topic = nullptr;
  uint32_t topicLength = 0;
  const uint8_t* payload = nullptr;
  uint32_t payloadLength = 0;
  r.Object([&](const uint8_t* name, uint32_t length) {
    if (Is(name, length, "publisher_id")) {
      out->publisherId = r.U64("envelope.publisher_id");
      hasPublisher = true;
    } else if (Is(name, length, "sequence")) {
      out->sequence = r.U64("envelope.sequence");
      hasSequence = true;
    } else if (Is(name, length, "topic")) {
      r.String(&topic, &topicLength);
      hasTopic = true;
    } else if (Is(name, length, "payload")) {
      r.Bin(&payload, &payloadLength);  // serialize_bytes: a MessagePack bin
      hasPayload = true;
    } else {
      r.Skip();
    }
  });
  if (!r.AtEnd()) Malformed("envelope: trailing bytes");
  if (!hasPublisher) Malformed("envelope: no publisher_id");
  if (!hasSequence) Malformed("envelope: no sequence");
  if (!hasPayload) Malformed("envelope: no payload");
  out->flags |= kHasEnvelope;
  if (hasTopic && !Equals(topic, topicLength, topic_.c_str()) && (legacyTopic_.empty() || !Equals(topic, topicLength, legacyTopic_.c_str()))) {
    out->status = MessageStatus::kOtherTopic;
    return;
  }
  MsgpackReader event(payload, payload + payloadLength);
  DecodeRouterEvent(event, out);
}

template <typename Reader>
void RouterEventDecoder::DecodeRouterEvent(Reader& r, MessageRecord* out) {
  bool hasWorker = false, hasEvent = false;
  hasData_ = false;
  hasParent_ = false;
  hasStart_ = false;
  kind_ = 0;
  domain_ = 0;
  device_ = true;
  extIds_.clear();
  tokensHashes_.clear();
  r.Object([&](const uint8_t* name, uint32_t length) {
    if (Is(name, length, "worker_id")) {
      out->workerId = r.U64("worker_id");
      hasWorker = true;
    } else if (Is(name, length, "storage_tier")) {
      const uint8_t* s;
      uint32_t n;
      r.String(&s, &n);
      if (Is(s, n, "device")) {
        device_ = true;
      } else if (Is(s, n, "host_pinned") || Is(s, n, "disk") || Is(s, n, "external")) {
        device_ = false;
      } else {
        Malformed("storage_tier: unknown tier");
      }
    } else if (Is(name, length, "residency_domain")) {
      if (r.TryNull()) return;
      const uint8_t* s;
      uint32_t n;
      r.String(&s, &n);
      domain_ = Is(s, n, "worker") ? 1 : Is(s, n, "cache_owner") ? 2 : 3;
    } else if (Is(name, length, "event")) {
      DecodeKvCacheEvent(r, out);
      hasEvent = true;
    } else {
      r.Skip();  // state_source, and fields of later revisions
    }
  });
  if (!r.AtEnd()) Malformed("RouterEvent: trailing bytes");
  if (!hasWorker) Malformed("RouterEvent: no worker_id");
  if (!hasEvent) Malformed("RouterEvent: no event");
}

template <typename Reader>
void RouterEventDecoder::DecodeKvCacheEvent(Reader& r, MessageRecord* out) {
  bool hasId = false;
  r.Object([&](const uint8_t* name, uint32_t length) {
    if (Is(name, length, "event_id")) {
      out->eventId = r.U64("event.event_id");
      hasId = true;
    } else if (Is(name, length, "data")) {
      DecodeData(r);
    } else if (Is(name, length, "dp_rank")) {
      out->dpRank = U32(r, "event.dp_rank");
    } else {
      r.Skip();
    }
  });
  if (!hasId) Malformed("event: no event_id");
  if (!hasData_) Malformed("event: no data");
}

template <typename Reader>
void RouterEventDecoder::DecodeData(Reader& r) {
  hasData_ = true;
  if (r.NextIsString()) {
    // The unit variant.
    const uint8_t* s;
    uint32_t n;
    r.String(&s, &n);
    if (!Is(s, n, "cleared")) Malformed("event.data: unknown variant");
    kind_ = pool::kCleared;
    return;
  }
  uint32_t variants = 0;
  r.Object([&](const uint8_t* name, uint32_t length) {
    if (++variants > 1) Malformed("event.data: more than one variant");
    if (Is(name, length, "stored")) {
      kind_ = pool::kStored;
      DecodeStored(r);
    } else if (Is(name, length, "removed")) {
      kind_ = pool::kRemoved;
      DecodeRemoved(r);
    } else if (Is(name, length, "cleared")) {
      // serde also reads a unit variant written as a map {"cleared": null}.
      if (!r.TryNull()) Malformed("event.data.cleared: not null");
      kind_ = pool::kCleared;
    } else {
      Malformed("event.data: unknown variant");
    }
  });
  if (variants == 0) Malformed("event.data: no variant");
}

template <typename Reader>
void RouterEventDecoder::DecodeStored(Reader& r) {
  bool hasBlocks = false;
  r.Object([&](const uint8_t* name, uint32_t length) {
    if (Is(name, length, "parent_hash")) {
      hasParent_ = !r.TryNull();
      if (hasParent_) parent_ = r.U64("stored.parent_hash");
    } else if (Is(name, length, "start_position")) {
      hasStart_ = !r.TryNull();
      if (hasStart_) start_ = U32(r, "stored.start_position");
    } else if (Is(name, length, "blocks")) {
      hasBlocks = true;
      r.Array([&] {
        bool hasBlock = false, hasTokens = false;
        uint64_t block = 0, tokens = 0;
        r.Object([&](const uint8_t* field, uint32_t fieldLength) {
          if (Is(field, fieldLength, "block_hash")) {
            block = r.U64("stored.blocks.block_hash");
            hasBlock = true;
          } else if (Is(field, fieldLength, "tokens_hash")) {
            tokens = r.U64("stored.blocks.tokens_hash");
            hasTokens = true;
          } else {
            r.Skip();  // mm_extra_info: already folded into tokens_hash by the worker
          }
        });
        if (!hasBlock || !hasTokens) Malformed("stored.blocks: a block without block_hash or tokens_hash");
        extIds_.push_back(block);
        tokensHashes_.push_back(tokens);
      });
    } else {
      r.Skip();
    }
  });
  if (!hasBlocks) Malformed("stored: no blocks");
}

template <typename Reader>
void RouterEventDecoder::DecodeRemoved(Reader& r) {
  bool hasHashes = false;
  r.Object([&](const uint8_t* name, uint32_t length) {
    if (Is(name, length, "block_hashes")) {
      hasHashes = true;
      r.Array([&] { extIds_.push_back(r.U64("removed.block_hashes")); });
    } else {
      r.Skip();
    }
  });
  if (!hasHashes) Malformed("removed: no block_hashes");
}

void RouterEventDecoder::Pack(MessageRecord* out) {
  // §4.1: a cleared targets the primary unless its domain is cache_owner; anything else needs the
  // device tier and the worker domain.
  if (kind_ == pool::kCleared) {
    if (domain_ == 2) {
      out->flags |= kUnsupportedDomain;
      return;
    }
  } else {
    if (domain_ >= 2) {
      out->flags |= kUnsupportedDomain;
      return;
    }
    if (!device_) {
      out->flags |= kOtherTier;
      return;
    }
  }
  const uint32_t count = static_cast<uint32_t>(extIds_.size());
  uint32_t flags = 0;
  if (kind_ == pool::kStored) flags = (hasParent_ ? pool::kFlagParent : 0) | (hasStart_ ? pool::kFlagStart : 0);
  const uint32_t header[pool::kMetaStride] = {kind_, out->dpRank, flags, hasStart_ ? start_ : 0, count};
  meta_.insert(meta_.end(), std::begin(header), std::end(header));
  words_.push_back(out->workerId);
  if (kind_ == pool::kStored) {
    if (hasParent_) words_.push_back(parent_);
    words_.insert(words_.end(), extIds_.begin(), extIds_.end());
    words_.insert(words_.end(), tokensHashes_.begin(), tokensHashes_.end());
  } else if (kind_ == pool::kRemoved) {
    words_.insert(words_.end(), extIds_.begin(), extIds_.end());
  }
  out->flags |= kCounted;
  out->kind = kind_;
  out->blocks = count;
}

}  // namespace dynamo
}  // namespace kvrelay
