// One vLLM / SGLang KVEventBatch payload (msgpack) -> the pool's packed apply batch, in one pass and
// without an object per event or block (engine-inputs.md §1.4-§1.6, §2.1, §3.3; hashing-ckf-cbi1.md
// §1.3-§1.4, §4.3). Pure C++, no N-API; one decoder per thread.
//
// Accepted: the batch as a positional array [ts, events, dp_rank] or a map (data_parallel_rank /
// attn_dp_rank / dp_rank); events as tagged arrays (legacy) or tagged maps (vLLM PR #42892); engine
// hashes as int64 / uint64 / bytes (the last 8 bytes, big-endian); token ids plain or as Eagle bigram
// pairs; multimodal hashes from block_mm_infos or else 64-hex extra_keys identifiers.
// Counted, not errors: events of another tier / attention group, unknown event types and
// self-referencing stores (`ignored`); stores of another block size (`droppedBlockSize`); stores
// without one complete block (`droppedNoCompleteBlock`). A store with too few tokens keeps the
// blocks before the first incomplete one.
// Errors: anything else throws DecodeFailure (kMalformed naming the field; kRankOutOfRange for a
// batch rank outside [dpStartRank, dpStartRank + dpSize)); the whole message is then rejected.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ingest/engine_msgpack.h"

namespace kvrelay {
namespace engine {

struct DecoderOptions {
  uint64_t workerId;
  uint32_t kvBlockSize;  // > 0
  bool eagle;
  uint32_t dpStartRank;
  uint32_t dpSize;  // > 0, dpStartRank + dpSize <= 2^32
  // Bounds on what one message may make the decoder hold (issue 26 item 2): an event with more block
  // hashes, a store with more token ids than that many blocks need, or a message whose packed batch
  // would exceed maxMessageWords words is malformed (checked before the scratch grows for it).
  uint32_t maxBlocksPerEvent;  // > 0
  uint64_t maxMessageWords;    // > 0
  // Scratch and output buffers grown past this many bytes are given back by Trim().
  uint64_t retainedBytes;
};

struct DecodeSummary {
  double timestamp;
  uint32_t dpRank;
  uint64_t events;  // events that count (packed, or dropped for block size / no complete block)
  uint64_t blocks;  // engine block hashes in those events (before any truncation)
  uint64_t ignored;
  uint64_t droppedBlockSize;
  uint64_t droppedNoCompleteBlock;
  uint32_t lastDroppedBlockSize;  // block_size of the last store dropped for it (0: none): what the engine sends
};

class BatchDecoder {
 public:
  explicit BatchDecoder(const DecoderOptions& options);

  // Decodes one payload into meta() / words() (replacing what they held). `fallbackRank` is the
  // rank of a batch that names none. Throws DecodeFailure; meta() / words() are then unspecified.
  DecodeSummary Decode(const uint8_t* payload, size_t length, uint32_t fallbackRank);

  // Gives back every buffer grown past options.retainedBytes (a large message's scratch and output)
  // once the caller copied the output out: one outsized message must not hold memory for good.
  void Trim();

  // The packed apply batch (packed_batch.h layout) of the last successful Decode.
  const std::vector<uint32_t>& meta() const { return meta_; }
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  enum Field : uint8_t {
    kType,
    kBlockHashes,
    kParent,
    kTokenIds,
    kBlockSize,
    kMedium,
    kLoraName,
    kExtraKeys,
    kGroupIdx,
    kKind,
    kMmInfos,
    kFieldCount,
    kNoField = 0xff,
  };
  enum class EventType : uint8_t { kUnknown, kStored, kRemoved, kCleared };

  // Where each field's value starts in the payload (null: absent) and which fields the scan
  // already decoded (eagerly, once the event's type was known).
  struct Event {
    const uint8_t* at[kFieldCount];
    uint32_t decoded;
    bool positional;
  };

  static Field FieldNamed(const uint8_t* key, uint32_t length);
  static bool IsEager(EventType type, Field f);
  EventType TypeNamed(const msgpack::Value& tag);
  void ResetOutput();
  void DecodeEvent(msgpack::Cursor& c);
  void ScanArrayEvent(msgpack::Cursor& c, uint32_t length, Event* ev, EventType* type);
  void ScanMapEvent(msgpack::Cursor& c, uint32_t length, Event* ev, EventType* type);
  // Decodes field f at c (consuming its value) into the per-event scratch; absent when c is null.
  void DecodeField(Field f, msgpack::Cursor* c, const Event& ev);
  void Ensure(Field f, Event* ev);
  bool CountsAsPrimary(const Event& ev) const;
  bool SelfReferencing();
  bool DecodeMmInfos(const uint8_t* at);
  bool DecodeExtraKeys(const uint8_t* at);
  uint64_t LoraSeed();
  void FinishStored(const Event& ev);
  void PutHeader(uint32_t kind, uint32_t flags, uint32_t count);

  DecoderOptions options_;
  const uint8_t* end_ = nullptr;
  DecodeSummary summary_{};
  const char* eventName_ = "BlockStored";  // for error messages

  // The packed output, built here first so that a rejected payload writes nothing anywhere else.
  std::vector<uint32_t> meta_;
  std::vector<uint64_t> words_;

  // Per-event scratch, reused (capacity grows to the largest event seen, bounded by its payload).
  std::vector<uint64_t> extIds_;
  std::vector<uint32_t> tokens_;
  bool hasParent_ = false;
  uint64_t parent_ = 0;
  uint32_t blockSize_ = 0;
  const uint8_t* lora_ = nullptr;  // UTF-8 bytes in the payload; null or empty = base model
  uint32_t loraLength_ = 0;
  struct MmBlock {
    uint32_t start;
    uint32_t count;
  };
  std::vector<MmBlock> mmBlocks_;
  std::vector<uint64_t> mmHashes_;
  std::vector<uint8_t> hashScratch_;

  // The repeat check of a store's ids (SelfReferencing): a hash table reused across events.
  std::vector<uint64_t> seenIds_;
  std::vector<uint32_t> seenGeneration_;
  uint32_t generation_ = 0;
  uint64_t repeatHashMultiplier_;

  // The salt seed of the last LoRA name (one entry: consecutive events nearly always share it, and
  // a seed costs one XXH3 of the name, about what a keyed lookup would).
  std::string cachedLora_;
  uint64_t cachedLoraSeed_ = 0;
  bool hasCachedLora_ = false;
};

}  // namespace engine
}  // namespace kvrelay
