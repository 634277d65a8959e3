// Engine KV-event batch decoding (see engine_decode.h). Field by field it keeps the acceptance rules
// of the JS decoder it replaces (src/ingest/decode.ts over msgpackr, then src/producer/events.ts):
// msgpackr turns 64-bit integer encodings into bigints and every other number into a JS number, so
// e.g. block_size accepts 16.0 but not a uint64-encoded 16, while token ids and ranks accept both.
#include "ingest/engine_decode.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/block_hash.h"
#include "core/process_secret.h"
#include "pool/packed_batch.h"

namespace kvrelay {
namespace engine {
namespace {

using msgpack::Cursor;
using msgpack::Equals;
using msgpack::Type;
using msgpack::Value;

constexpr double kMaxSafeInteger = 9007199254740991.0;
constexpr double kMaxU32 = 4294967295.0;

// Nesting depths (the batch is 0): its fields 1, an event 2, an event's field values 3.
constexpr int kBatchFieldDepth = 1;
constexpr int kFieldDepth = 3;

// Dynamo's main-attention kinds (zmq_wire.rs); other kinds belong to secondary KV-cache groups.
constexpr const char* kMainAttentionKinds[] = {"full_attention", "mla_attention", "sink_full_attention"};
// Media of Dynamo's host, disk and external tiers (engine-inputs.md §3.3); anything else (GPU,
// DEVICE, absent, unknown) is the device tier, the only one the CKF counts. Matching is exact.
constexpr const char* kNonPrimaryMedia[] = {"CPU",     "CPU_PINNED", "CPU_TIER1", "CPU_TIER2", "DISK",  "NVME",
                                            "STORAGE", "EXTERNAL",   "NETWORK",   "REMOTE",    "SHARED"};

// LoRA names longer than this are not kept in the one-entry seed cache.
constexpr size_t kMaxCachedLoraBytes = 256;
// Stores with at most this many ids (parent included) are checked for repeats pairwise.
constexpr size_t kPairwiseRepeatCheck = 8;

template <size_t N>
bool InList(const Value& s, const char* const (&list)[N]) {
  for (const char* item : list) {
    if (Equals(s.data, s.length, item)) return true;
  }
  return false;
}

bool IsIntegral(double d) { return std::isfinite(d) && std::floor(d) == d; }

// A u32 the way the JS decoder took it: any integer encoding, or an integral float.
bool AsU32(const Value& v, uint32_t* out) {
  if (v.type == Type::kInt) {
    if (v.negative || v.bits > 0xffffffffull) return false;
    *out = static_cast<uint32_t>(v.bits);
    return true;
  }
  if (v.type == Type::kFloat) {
    const double d = v.number;
    if (!(d >= 0) || d > kMaxU32 || std::floor(d) != d) return false;
    *out = static_cast<uint32_t>(d);
    return true;
  }
  return false;
}

std::string FieldName(const char* event, const char* field) { return std::string(event) + "." + field; }

// Engine hashes (src/ingest/hash.ts): integers by two's complement, integral floats up to 2^53,
// bytes by their last 8 bytes big-endian.
uint64_t EngineHash(Cursor& c, const char* event, const char* field) {
  const Value v = c.Read();
  switch (v.type) {
    case Type::kInt:
      return v.bits;
    case Type::kFloat:
      if (!IsIntegral(v.number) || std::fabs(v.number) > kMaxSafeInteger) Malformed(FieldName(event, field) + ": not an integer");
      return static_cast<uint64_t>(static_cast<int64_t>(v.number));
    case Type::kBin: {
      if (v.length == 0) Malformed(FieldName(event, field) + ": empty bytes");
      uint64_t out = 0;
      for (uint32_t i = v.length > 8 ? v.length - 8 : 0; i < v.length; ++i) out = (out << 8) | v.data[i];
      return out;
    }
    default:
      Malformed(FieldName(event, field) + ": expected an integer or bytes");
  }
}

uint32_t TokenId(Cursor& c) {
  uint32_t t;
  if (c.ReadSmallUints(&t, 1) == 1) return t;
  if (!AsU32(c.Read(), &t)) Malformed("BlockStored.token_ids: expected u32 token ids");
  return t;
}

// Odd multiplier of the repeat check's hash, unknown to peers (so they cannot aim ids at one slot).
uint64_t RandomOddMultiplier() { return DrawSecret() | 1; }

int HexDigit(uint8_t ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// A 64-hex multimodal identifier -> its first 16 hex digits (Dynamo's mm_hash); false otherwise.
bool MmIdentifier(const Value& v, uint64_t* out) {
  if (v.type != Type::kStr || v.length != 64) return false;
  uint64_t hash = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    const int d = HexDigit(v.data[i]);
    if (d < 0) return false;
    if (i < 16) hash = (hash << 4) | static_cast<uint64_t>(d);
  }
  *out = hash;
  return true;
}

// Reads the `entries` entries of a map whose header was just read, skipping each value (at nesting
// `depth`); at[i] is where the value of the last key names[i] starts (null: no such key), as the
// property of a JS object would be.
template <size_t N>
void FindValues(Cursor& c, uint32_t entries, int depth, const char* const (&names)[N], const uint8_t* (&at)[N]) {
  std::fill(std::begin(at), std::end(at), nullptr);
  for (uint32_t e = 0; e < entries; ++e) {
    const uint8_t* key;
    uint32_t length;
    if (c.ReadKey(&key, &length)) {
      for (size_t i = 0; i < N; ++i) {
        if (Equals(key, length, names[i])) at[i] = c.position();
      }
    }
    c.Skip(depth);
  }
}

}  // namespace

BatchDecoder::BatchDecoder(const DecoderOptions& options) : options_(options), repeatHashMultiplier_(RandomOddMultiplier()) {}

DecodeSummary BatchDecoder::Decode(const uint8_t* payload, size_t length, uint32_t fallbackRank) {
  end_ = payload + length;
  summary_ = DecodeSummary{};
  ResetOutput();
  Cursor c(payload, end_);
  const uint8_t* ts = nullptr;
  const uint8_t* ranks[3] = {nullptr, nullptr, nullptr};  // data_parallel_rank, attn_dp_rank, dp_rank
  bool sawEvents = false;
  auto events = [&]() {
    const Value list = c.Read();
    if (list.type != Type::kArray) Malformed("batch.events: expected an array");
    // A repeated key: the last one counts, as in a JS object.
    summary_ = DecodeSummary{};
    ResetOutput();
    for (uint32_t i = 0; i < list.length; ++i) DecodeEvent(c);
    sawEvents = true;
  };
  const Value batch = c.Read();
  if (batch.type == Type::kArray) {
    for (uint32_t i = 0; i < batch.length; ++i) {
      if (i == 1) {
        events();
        continue;
      }
      if (i == 0) ts = c.position();
      if (i == 2) ranks[0] = c.position();
      c.Skip(kBatchFieldDepth);
    }
  } else if (batch.type == Type::kMap) {
    for (uint32_t i = 0; i < batch.length; ++i) {
      const uint8_t* key;
      uint32_t n;
      const bool named = c.ReadKey(&key, &n);
      if (named && Equals(key, n, "events")) {
        events();
        continue;
      }
      if (named && Equals(key, n, "ts")) ts = c.position();
      if (named && Equals(key, n, "data_parallel_rank")) ranks[0] = c.position();
      if (named && Equals(key, n, "attn_dp_rank")) ranks[1] = c.position();
      if (named && Equals(key, n, "dp_rank")) ranks[2] = c.position();
      c.Skip(kBatchFieldDepth);
    }
  } else {
    Malformed("batch: expected an array or a map");
  }
  if (!c.AtEnd()) Malformed("msgpack: trailing bytes after the batch");
  if (!sawEvents) Malformed("batch.events: expected an array");

  if (ts == nullptr) Malformed("batch.ts: expected a number");
  Cursor tc(ts, end_);
  const Value t = tc.Read();
  if (t.type == Type::kInt) {
    summary_.timestamp = t.negative ? static_cast<double>(static_cast<int64_t>(t.bits)) : static_cast<double>(t.bits);
  } else if (t.type == Type::kFloat && std::isfinite(t.number)) {
    summary_.timestamp = t.number;
  } else {
    Malformed("batch.ts: expected a number");
  }

  // The first of the rank fields that is set (nil counts as unset); none: the socket's rank.
  uint32_t rank = fallbackRank;
  for (const uint8_t* at : ranks) {
    if (at == nullptr) continue;
    Cursor rc(at, end_);
    if (rc.TryReadNil()) continue;
    if (!AsU32(rc.Read(), &rank)) Malformed("batch.dp_rank: expected a non-negative integer");
    break;
  }
  if (rank < options_.dpStartRank || rank - options_.dpStartRank >= options_.dpSize) {
    DecodeFailure failure{DecodeFailure::Code::kRankOutOfRange,
                          "batch dp rank " + std::to_string(rank) + " is outside this worker's ranks [" +
                              std::to_string(options_.dpStartRank) + ", " +
                              std::to_string(uint64_t{options_.dpStartRank} + options_.dpSize) + ")",
                          rank};
    throw failure;
  }
  summary_.dpRank = rank;
  for (size_t i = 1; i < meta_.size(); i += pool::kMetaStride) meta_[i] = rank;
  return summary_;
}

template <typename T>
void GiveBackIfOver(std::vector<T>* v, uint64_t bytes) {
  if (v->capacity() * sizeof(T) > bytes) std::vector<T>().swap(*v);
}

void BatchDecoder::Trim() {
  const uint64_t keep = options_.retainedBytes;
  GiveBackIfOver(&meta_, keep);
  GiveBackIfOver(&words_, keep);
  GiveBackIfOver(&extIds_, keep);
  GiveBackIfOver(&tokens_, keep);
  GiveBackIfOver(&mmBlocks_, keep);
  GiveBackIfOver(&mmHashes_, keep);
  GiveBackIfOver(&hashScratch_, keep);
  if (seenIds_.capacity() * sizeof(uint64_t) + seenGeneration_.capacity() * sizeof(uint32_t) > keep) {
    // Emptied together: the repeat check sizes both from seenIds_ (a fresh table starts at generation 0).
    std::vector<uint64_t>().swap(seenIds_);
    std::vector<uint32_t>().swap(seenGeneration_);
  }
}

void BatchDecoder::ResetOutput() {
  meta_.clear();
  words_.clear();
}

void BatchDecoder::DecodeEvent(Cursor& c) {
  Event ev;
  std::fill(std::begin(ev.at), std::end(ev.at), nullptr);
  ev.decoded = 0;
  EventType type = EventType::kUnknown;
  const Value head = c.Read();
  if (head.type == Type::kArray) {
    ev.positional = true;
    ScanArrayEvent(c, head.length, &ev, &type);
  } else if (head.type == Type::kMap) {
    ev.positional = false;
    ScanMapEvent(c, head.length, &ev, &type);
  } else {
    Malformed("event: expected a tagged array or a tagged map");
  }
  switch (type) {
    case EventType::kUnknown:
      summary_.ignored += 1;
      return;
    case EventType::kCleared:
      summary_.events += 1;
      PutHeader(pool::kCleared, 0, 0);
      return;
    case EventType::kRemoved:
      eventName_ = "BlockRemoved";
      Ensure(kBlockHashes, &ev);
      if (!CountsAsPrimary(ev)) {
        summary_.ignored += 1;
        return;
      }
      summary_.events += 1;
      summary_.blocks += extIds_.size();
      PutHeader(pool::kRemoved, 0, static_cast<uint32_t>(extIds_.size()));
      words_.insert(words_.end(), extIds_.begin(), extIds_.end());
      return;
    case EventType::kStored:
      eventName_ = "BlockStored";
      Ensure(kBlockHashes, &ev);
      Ensure(kParent, &ev);
      Ensure(kTokenIds, &ev);
      Ensure(kBlockSize, &ev);
      Ensure(kLoraName, &ev);
      // A store that repeats a hash (or its parent) references itself; Dynamo drops it as a no-op.
      if (!CountsAsPrimary(ev) || SelfReferencing()) {
        summary_.ignored += 1;
        return;
      }
      FinishStored(ev);
      return;
  }
}

// Positional field order after the tag, per event type (msgspec declaration order); extra trailing
// elements (newer fields) are ignored, missing trailing ones are absent.
void BatchDecoder::ScanArrayEvent(Cursor& c, uint32_t length, Event* ev, EventType* type) {
  static constexpr Field kStored[] = {kBlockHashes, kParent,    kTokenIds, kBlockSize, kNoField /* lora_id */, kMedium,
                                      kLoraName,    kExtraKeys, kGroupIdx, kKind};
  static constexpr Field kRemoved[] = {kBlockHashes, kMedium, kGroupIdx};
  if (length == 0) Malformed("event: the type tag is not a string");
  const Value tag = c.Read();
  if (tag.type != Type::kStr) Malformed("event: the type tag is not a string");
  *type = TypeNamed(tag);
  const Field* names = *type == EventType::kStored ? kStored : kRemoved;
  const uint32_t count = *type == EventType::kStored    ? std::size(kStored)
                         : *type == EventType::kRemoved ? std::size(kRemoved)
                                                        : 0;
  for (uint32_t i = 1; i < length; ++i) {
    const Field f = i - 1 < count ? names[i - 1] : kNoField;
    if (f == kNoField) {
      c.Skip(kFieldDepth);
      continue;
    }
    ev->at[f] = c.position();
    if (IsEager(*type, f)) {
      DecodeField(f, &c, *ev);
      ev->decoded |= 1u << f;
    } else {
      c.Skip(kFieldDepth);
    }
  }
}

void BatchDecoder::ScanMapEvent(Cursor& c, uint32_t length, Event* ev, EventType* type) {
  bool tagged = false;  // the last "type" seen is a string
  for (uint32_t i = 0; i < length; ++i) {
    const uint8_t* key;
    uint32_t n;
    const Field f = c.ReadKey(&key, &n) ? FieldNamed(key, n) : kNoField;
    if (f == kNoField) {
      c.Skip(kFieldDepth);
      continue;
    }
    // A repeated key: the last one counts, as in a JS object.
    ev->at[f] = c.position();
    ev->decoded &= ~(1u << f);
    if (f == kType) {
      const Value t = c.Read();
      tagged = t.type == Type::kStr;
      *type = tagged ? TypeNamed(t) : EventType::kUnknown;
      c.SkipContents(t, kFieldDepth);
    } else if (tagged && IsEager(*type, f)) {
      DecodeField(f, &c, *ev);
      ev->decoded |= 1u << f;
    } else {
      c.Skip(kFieldDepth);
    }
  }
  if (!tagged) Malformed("event: the type tag is not a string");
}

BatchDecoder::EventType BatchDecoder::TypeNamed(const Value& tag) {
  if (Equals(tag.data, tag.length, "BlockStored")) {
    eventName_ = "BlockStored";
    return EventType::kStored;
  }
  if (Equals(tag.data, tag.length, "BlockRemoved")) {
    eventName_ = "BlockRemoved";
    return EventType::kRemoved;
  }
  if (Equals(tag.data, tag.length, "AllBlocksCleared")) return EventType::kCleared;
  return EventType::kUnknown;
}

BatchDecoder::Field BatchDecoder::FieldNamed(const uint8_t* key, uint32_t n) {
  switch (n) {
    case 4:
      if (Equals(key, n, "type")) return kType;
      break;
    case 6:
      if (Equals(key, n, "medium")) return kMedium;
      break;
    case 9:
      if (Equals(key, n, "token_ids")) return kTokenIds;
      if (Equals(key, n, "lora_name")) return kLoraName;
      if (Equals(key, n, "group_idx")) return kGroupIdx;
      break;
    case 10:
      if (Equals(key, n, "block_size")) return kBlockSize;
      if (Equals(key, n, "extra_keys")) return kExtraKeys;
      break;
    case 12:
      if (Equals(key, n, "block_hashes")) return kBlockHashes;
      break;
    case 14:
      if (Equals(key, n, "block_mm_infos")) return kMmInfos;
      break;
    case 17:
      if (Equals(key, n, "parent_block_hash")) return kParent;
      break;
    case 18:
      if (Equals(key, n, "kv_cache_spec_kind")) return kKind;
      break;
  }
  return kNoField;
}

// The fields every event of the type validates, decoded while scanning. The rest (tier and group
// filters, multimodal fields) are read only when the JS decoder would look at them.
bool BatchDecoder::IsEager(EventType type, Field f) {
  switch (type) {
    case EventType::kStored:
      return f == kBlockHashes || f == kParent || f == kTokenIds || f == kBlockSize || f == kLoraName;
    case EventType::kRemoved:
      return f == kBlockHashes;
    default:
      return false;
  }
}

void BatchDecoder::Ensure(Field f, Event* ev) {
  if (ev->decoded & (1u << f)) return;
  if (ev->at[f] == nullptr) {
    DecodeField(f, nullptr, *ev);
  } else {
    Cursor c(ev->at[f], end_);
    DecodeField(f, &c, *ev);
  }
  ev->decoded |= 1u << f;
}

void BatchDecoder::DecodeField(Field f, Cursor* c, const Event& ev) {
  switch (f) {
    case kBlockHashes: {
      if (c == nullptr) Malformed(FieldName(eventName_, "block_hashes") + ": expected an array");
      const Value list = c->Read();
      if (list.type != Type::kArray) Malformed(FieldName(eventName_, "block_hashes") + ": expected an array");
      if (list.length > options_.maxBlocksPerEvent) {
        Malformed(FieldName(eventName_, "block_hashes") + ": " + std::to_string(list.length) + " blocks, more than the " +
                  std::to_string(options_.maxBlocksPerEvent) + " one event may carry");
      }
      extIds_.resize(list.length);
      uint64_t* ids = extIds_.data();
      for (uint32_t i = 0; i < list.length; ++i) {
        if (!c->TryReadPlainUint64(&ids[i])) ids[i] = EngineHash(*c, eventName_, "block_hashes");
      }
      return;
    }
    case kParent:
      hasParent_ = c != nullptr && !c->TryReadNil();
      if (hasParent_) parent_ = EngineHash(*c, "BlockStored", "parent_block_hash");
      return;
    case kTokenIds: {
      if (c == nullptr) Malformed("BlockStored.token_ids: expected an array");
      const Value list = c->Read();
      if (list.type != Type::kArray) Malformed("BlockStored.token_ids: expected an array");
      const uint32_t n = list.length;
      // Tokens beyond the largest store's blocks (of the pool's block size, Eagle's extra one
      // included) have no use: bounded before the scratch grows for them.
      if (uint64_t{n} > (uint64_t{options_.maxBlocksPerEvent} + 1) * options_.kvBlockSize) {
        Malformed("BlockStored.token_ids: " + std::to_string(n) + " tokens, more than " + std::to_string(options_.maxBlocksPerEvent) +
                  " blocks need");
      }
      if (n > 0 && c->NextIsArray()) {
        // Eagle's bigram pairs [[t0, t1], [t1, t2], ...] (Dynamo's KvTokenIds) carry one token more
        // than they have pairs: the firsts, then the last pair's second.
        tokens_.resize(size_t{n} + 1);
        for (uint32_t i = 0; i < n; ++i) {
          const Value pair = c->Read();
          if (pair.type != Type::kArray || pair.length != 2) Malformed("BlockStored.token_ids: expected bigram pairs");
          tokens_[i] = TokenId(*c);
          tokens_[i + 1] = TokenId(*c);  // overwritten by the next pair's first, except after the last
        }
      } else {
        tokens_.resize(n);
        uint32_t* out = tokens_.data();
        for (size_t i = c->ReadSmallUints(out, n); i < n; i += c->ReadSmallUints(out + i, n - i)) out[i++] = TokenId(*c);
      }
      return;
    }
    case kBlockSize: {
      if (c == nullptr) Malformed("BlockStored.block_size: expected a positive integer");
      const Value v = c->Read();
      // A 64-bit encoding is a bigint in the JS decoder, which it refused here.
      const bool ok = (v.type == Type::kInt && !v.wide) || v.type == Type::kFloat;
      uint32_t bs = 0;
      if (!ok || !AsU32(v, &bs) || bs == 0) Malformed("BlockStored.block_size: expected a positive integer");
      blockSize_ = bs;
      return;
    }
    case kLoraName: {
      lora_ = nullptr;
      loraLength_ = 0;
      if (c == nullptr || c->TryReadNil()) return;
      // SGLang puts its salt metadata map where vLLM has lora_name (positional index 7).
      if (ev.positional && c->NextIsMap()) {
        c->Skip(kFieldDepth);
        return;
      }
      const Value v = c->Read();
      if (v.type != Type::kStr) Malformed("BlockStored.lora_name: expected a string");
      lora_ = v.data;
      loraLength_ = v.length;
      return;
    }
    default:
      Malformed("internal: field decoded out of order");  // unreachable: only eager fields come here
  }
}

bool BatchDecoder::CountsAsPrimary(const Event& ev) const {
  // false: absent or nil.
  auto optionalString = [&](Field f, const char* name, Value* out) {
    if (ev.at[f] == nullptr) return false;
    Cursor c(ev.at[f], end_);
    *out = c.Read();
    if (out->type == Type::kNil) return false;
    if (out->type != Type::kStr) Malformed(std::string(name) + ": expected a string");
    return true;
  };
  Value medium;
  if (optionalString(kMedium, "medium", &medium) && InList(medium, kNonPrimaryMedia)) return false;
  Value kind;
  if (optionalString(kKind, "kv_cache_spec_kind", &kind)) return InList(kind, kMainAttentionKinds);
  if (ev.at[kGroupIdx] == nullptr) return true;
  Cursor c(ev.at[kGroupIdx], end_);
  if (c.TryReadNil()) return true;
  uint32_t group = 0;
  if (!AsU32(c.Read(), &group)) Malformed("group_idx: expected a non-negative integer");
  return group == 0;
}

bool BatchDecoder::SelfReferencing() {
  const size_t n = extIds_.size() + (hasParent_ ? 1 : 0);
  if (n < 2) return false;
  if (n <= kPairwiseRepeatCheck) {
    for (size_t i = 0; i < extIds_.size(); ++i) {
      if (hasParent_ && extIds_[i] == parent_) return true;
      for (size_t j = i + 1; j < extIds_.size(); ++j) {
        if (extIds_[i] == extIds_[j]) return true;
      }
    }
    return false;
  }
  // Open addressing over >= 4n slots; slots of older events are told apart by their generation, so
  // nothing is cleared per event. A run of probes longer than hashing should ever need falls back
  // to sorting (O(n log n) whatever the ids).
  unsigned bits = 6;
  while ((size_t{1} << bits) < 4 * n) ++bits;
  const size_t mask = (size_t{1} << bits) - 1;
  if (seenIds_.size() <= mask) {
    seenIds_.resize(mask + 1);
    seenGeneration_.assign(mask + 1, 0);
    generation_ = 0;
  }
  if (++generation_ == 0) {
    std::fill(seenGeneration_.begin(), seenGeneration_.end(), 0);
    generation_ = 1;
  }
  size_t probes = 0;
  auto repeated = [&](uint64_t id) {
    for (size_t h = (id * repeatHashMultiplier_) >> (64 - bits);; h = (h + 1) & mask) {
      if (seenGeneration_[h] != generation_) {
        seenGeneration_[h] = generation_;
        seenIds_[h] = id;
        return 0;
      }
      if (seenIds_[h] == id) return 1;
      if (++probes > 8 * n) return -1;
    }
  };
  int verdict = hasParent_ ? repeated(parent_) : 0;
  for (size_t i = 0; i < extIds_.size() && verdict == 0; ++i) verdict = repeated(extIds_[i]);
  if (verdict >= 0) return verdict == 1;
  seenIds_.assign(extIds_.begin(), extIds_.end());
  if (hasParent_) seenIds_.push_back(parent_);
  std::sort(seenIds_.begin(), seenIds_.end());
  const bool found = std::adjacent_find(seenIds_.begin(), seenIds_.end()) != seenIds_.end();
  seenIds_.clear();  // the table is rebuilt (and its generations reset) by the next check
  return found;
}

// Dynamo's own block_mm_infos ([{mm_objects: [{mm_hash, offsets}]} | null] per block). true when a
// block has an mm_objects list (even an empty one, which then shadows extra_keys).
bool BatchDecoder::DecodeMmInfos(const uint8_t* at) {
  if (at == nullptr) return false;
  Cursor c(at, end_);
  const Value list = c.Read();
  if (list.type != Type::kArray) return false;
  bool any = false;
  for (uint32_t i = 0; i < list.length; ++i) {
    MmBlock block{static_cast<uint32_t>(mmHashes_.size()), 0};
    static constexpr const char* kObjects[] = {"mm_objects"};
    static constexpr const char* kHash[] = {"mm_hash"};
    const uint8_t* objects[1] = {nullptr};
    const Value info = c.Read();
    if (info.type == Type::kMap) {
      FindValues(c, info.length, kFieldDepth + 2, kObjects, objects);
    } else {
      c.SkipContents(info, kFieldDepth + 1);
    }
    if (objects[0] != nullptr) {
      Cursor oc(objects[0], end_);
      const Value list2 = oc.Read();
      if (list2.type == Type::kArray) {
        any = true;
        for (uint32_t j = 0; j < list2.length; ++j) {
          const Value object = oc.Read();
          const uint8_t* hash[1] = {nullptr};
          if (object.type == Type::kMap) FindValues(oc, object.length, kFieldDepth + 4, kHash, hash);
          if (hash[0] == nullptr) Malformed("block_mm_infos.mm_hash: expected an integer or bytes");
          Cursor hc(hash[0], end_);
          mmHashes_.push_back(EngineHash(hc, "block_mm_infos", "mm_hash"));
          block.count += 1;
        }
      }
    }
    mmBlocks_.push_back(block);
  }
  return any;
}

// MM hashes per block from extra_keys (Dynamo: 64-hex MM identifiers -> the first 16 hex digits).
// An identifier may be bare, the first item of vLLM's (identifier, offset) tuple, or the `hash` of a
// tagged `mm` ExtraKey. Other extra keys (LoRA, cache salt, prompt embeds) do not hash as MM.
bool BatchDecoder::DecodeExtraKeys(const uint8_t* at) {
  if (at == nullptr) return false;
  Cursor c(at, end_);
  const Value list = c.Read();
  if (list.type != Type::kArray) return false;
  bool any = false;
  uint64_t hash = 0;
  for (uint32_t i = 0; i < list.length; ++i) {
    MmBlock block{static_cast<uint32_t>(mmHashes_.size()), 0};
    auto push = [&](const Value& id) {
      if (!MmIdentifier(id, &hash)) return;
      mmHashes_.push_back(hash);
      block.count += 1;
    };
    const Value keys = c.Read();
    if (keys.type != Type::kArray) {
      c.SkipContents(keys, kFieldDepth + 1);
    } else {
      for (uint32_t k = 0; k < keys.length; ++k) {
        const Value key = c.Read();
        if (key.type == Type::kArray) {
          for (uint32_t e = 0; e < key.length; ++e) {
            const Value item = c.Read();
            if (e == 0) push(item);
            c.SkipContents(item, kFieldDepth + 3);
          }
        } else if (key.type == Type::kMap) {
          static constexpr const char* kTagged[] = {"type", "hash"};
          const uint8_t* tagged[2];
          FindValues(c, key.length, kFieldDepth + 3, kTagged, tagged);
          if (tagged[0] != nullptr && tagged[1] != nullptr) {
            Cursor tc(tagged[0], end_);
            const Value tag = tc.Read();
            Cursor hc(tagged[1], end_);
            if (tag.type == Type::kStr && Equals(tag.data, tag.length, "mm")) push(hc.Read());
          }
        } else {
          push(key);
        }
      }
    }
    any = any || block.count > 0;
    mmBlocks_.push_back(block);
  }
  return any;
}

uint64_t BatchDecoder::LoraSeed() {
  if (loraLength_ == 0) return hashing::kXxh3Seed;
  const std::string_view name(reinterpret_cast<const char*>(lora_), loraLength_);
  if (hasCachedLora_ && name == cachedLora_) return cachedLoraSeed_;
  const uint64_t seed = hashing::SaltSeed({}, name);
  if (name.size() <= kMaxCachedLoraBytes) {
    cachedLora_.assign(name);
    cachedLoraSeed_ = seed;
    hasCachedLora_ = true;
  }
  return seed;
}

void BatchDecoder::FinishStored(const Event& ev) {
  summary_.events += 1;
  summary_.blocks += extIds_.size();
  // Multimodal fields are validated before the block-size check, as the JS decoder did.
  mmBlocks_.clear();
  mmHashes_.clear();
  bool mm = DecodeMmInfos(ev.at[kMmInfos]);
  if (!mm) {
    mmBlocks_.clear();
    mmHashes_.clear();
    mm = DecodeExtraKeys(ev.at[kExtraKeys]);
  }
  const uint32_t bs = options_.kvBlockSize;
  if (blockSize_ != bs) {
    summary_.droppedBlockSize += 1;
    summary_.lastDroppedBlockSize = blockSize_;
    return;
  }
  // Too few tokens for some blocks: the event stops at the first incomplete block, like Dynamo.
  const size_t count = std::min(hashing::CompleteBlockCount(tokens_.size(), bs, options_.eagle), extIds_.size());
  if (count == 0) {
    summary_.droppedNoCompleteBlock += 1;
    return;
  }
  PutHeader(pool::kStored, hasParent_ ? pool::kFlagParent : 0, static_cast<uint32_t>(count));
  if (hasParent_) words_.push_back(parent_);
  words_.insert(words_.end(), extIds_.begin(), extIds_.begin() + static_cast<std::ptrdiff_t>(count));
  const size_t base = words_.size();
  words_.resize(base + count);
  uint64_t* out = words_.data() + base;
  const uint64_t seed = LoraSeed();
  const size_t windowBytes = (size_t{bs} + (options_.eagle ? 1 : 0)) * 4;
  const uint32_t* tokens = tokens_.data();
  if (!mm) {
    hashing::ForEachWindowHash(tokens, count, bs, windowBytes, seed, [out](size_t i, uint64_t h) { out[i] = h; });
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const uint32_t* window = tokens + i * bs;
    if (i < mmBlocks_.size() && mmBlocks_[i].count > 0) {
      out[i] = hashing::BlockHashWithMm(window, windowBytes, mmHashes_.data() + mmBlocks_[i].start, mmBlocks_[i].count,
                                        seed, &hashScratch_);
    } else {
      out[i] = hashing::Xxh3(window, windowBytes, seed);
    }
  }
}

void BatchDecoder::PutHeader(uint32_t kind, uint32_t flags, uint32_t count) {
  // The event's words: the worker id, then a store's parent, ids and their token hashes, or a removal's ids.
  const uint64_t eventWords = 1 + (kind == pool::kStored ? ((flags & pool::kFlagParent) != 0 ? 1 : 0) + 2 * uint64_t{count} : uint64_t{count});
  if (words_.size() + eventWords > options_.maxMessageWords) {
    Malformed("batch: its events carry more than the " + std::to_string(options_.maxMessageWords) + " packed words one message may");
  }
  // [kind, dpRank (set once the batch's rank is known), flags, startPosition, blockCount]
  const uint32_t header[pool::kMetaStride] = {kind, 0, flags, 0, count};
  meta_.insert(meta_.end(), std::begin(header), std::end(header));
  words_.push_back(options_.workerId);
}

}  // namespace engine
}  // namespace kvrelay
