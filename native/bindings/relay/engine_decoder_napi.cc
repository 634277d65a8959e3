// N-API class EngineBatchDecoder: one engine::BatchDecoder (engine_decode.h). decodeInto appends one
// payload's packed apply batch to caller-owned arrays (plain or SharedArrayBuffer-backed), so a
// burst of messages accumulates in one buffer; it writes nothing when the payload is rejected or
// the arrays are too small (it then reports the lengths it needs). Results go to a Float64Array the
// wrapper (src/native/engine-decoder.ts) owns, so a call allocates no JS object.
#include <napi.h>

#include <cstring>
#include <memory>
#include <new>

#include "ingest/engine_decode.h"
#include "bindings/modules.h"
#include "bindings/napi_args.h"

namespace kvrelay {
namespace {

// Slots of the results array, exported by name as engineDecodeSlots.
enum Slot : uint32_t {
  kMetaEnd,
  kWordsEnd,
  kTimestamp,
  kDpRank,
  kEvents,
  kBlocks,
  kIgnored,
  kDroppedBlockSize,
  kDroppedNoCompleteBlock,
  kLastDroppedBlockSize,
  kNeedMeta,
  kNeedWords,
  kSlotCount,
};
constexpr const char* kSlotNames[kSlotCount] = {
    "metaEnd", "wordsEnd", "timestamp",  "dpRank",   "events",    "blocks",
    "ignored", "droppedBlockSize", "droppedNoCompleteBlock", "lastDroppedBlockSize", "needMeta", "needWords",
};

class EngineDecoderWrap : public Napi::ObjectWrap<EngineDecoderWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "EngineBatchDecoder", {InstanceMethod<&EngineDecoderWrap::DecodeInto>("decodeInto")});
  }

  // (workerId: bigint, kvBlockSize, eagle, dpStartRank, dpSize, slots: Float64Array,
  //  bounds: {maxBlocksPerEvent, maxMessageWords, retainedBytes})
  explicit EngineDecoderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineDecoderWrap>(info) {
    Napi::Env env = info.Env();
    engine::DecoderOptions o{};
    o.workerId = args::U64(args::Arg(info, 0), "workerId");
    o.kvBlockSize = args::U32(args::Arg(info, 1), "kvBlockSize");
    if (o.kvBlockSize == 0) throw Napi::RangeError::New(env, "kvBlockSize cannot be 0");
    o.eagle = args::Bool(args::Arg(info, 2), "eagle");
    o.dpStartRank = args::U32(args::Arg(info, 3), "dpStartRank");
    o.dpSize = args::U32(args::Arg(info, 4), "dpSize");
    if (o.dpSize == 0 || uint64_t{o.dpStartRank} + o.dpSize > (uint64_t{1} << 32)) {
      throw Napi::RangeError::New(env, "dpSize must be >= 1 and dpStartRank + dpSize <= 2^32");
    }
    auto slots = args::Typed<double>(args::Arg(info, 5), napi_float64_array, "slots (Float64Array)");
    if (slots.ElementLength() < kSlotCount) throw Napi::RangeError::New(env, "slots is too short");
    if (!args::Arg(info, 6).IsObject()) throw Napi::TypeError::New(env, "bounds must be an object");
    const Napi::Object bounds = args::Arg(info, 6).As<Napi::Object>();
    o.maxBlocksPerEvent = args::U32(bounds.Get("maxBlocksPerEvent"), "maxBlocksPerEvent");
    o.maxMessageWords = args::U64(bounds.Get("maxMessageWords"), "maxMessageWords", true);
    o.retainedBytes = args::U64(bounds.Get("retainedBytes"), "retainedBytes", true);
    if (o.maxBlocksPerEvent == 0 || o.maxMessageWords == 0) throw Napi::RangeError::New(env, "maxBlocksPerEvent and maxMessageWords must be > 0");
    slots_ = Napi::Persistent(slots);
    options_ = o;
    decoder_ = std::make_unique<engine::BatchDecoder>(o);
  }

  // (payload, fallbackRank, meta, metaOffset, words, wordsOffset) -> true: appended; false: the
  // arrays must grow to slots[needMeta] / slots[needWords] elements (nothing written).
  Napi::Value DecodeInto(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto payload = args::Typed<uint8_t>(args::Arg(info, 0), napi_uint8_array, "payload (Uint8Array)");
    const uint32_t fallbackRank = args::U32(args::Arg(info, 1), "fallbackRank");
    if (fallbackRank < options_.dpStartRank || fallbackRank - options_.dpStartRank >= options_.dpSize) {
      throw Napi::RangeError::New(env, "fallbackRank is outside [dpStartRank, dpStartRank + dpSize)");
    }
    auto meta = args::U32Array(args::Arg(info, 2), "meta");
    const uint32_t metaOffset = args::U32(args::Arg(info, 3), "metaOffset");
    if (metaOffset > meta.ElementLength()) throw Napi::RangeError::New(env, "metaOffset is past the end of meta");
    auto words = args::U64Array(args::Arg(info, 4), "words");
    const uint32_t wordsOffset = args::U32(args::Arg(info, 5), "wordsOffset");
    if (wordsOffset > words.ElementLength()) throw Napi::RangeError::New(env, "wordsOffset is past the end of words");
    Napi::Float64Array slotArray = slots_.Value();
    if (slotArray.ElementLength() < kSlotCount) throw Napi::Error::New(env, "the slots array was detached");

    // However the call ends, an outsized message's buffers are not kept (engine_decode.h Trim).
    struct TrimOnExit {
      engine::BatchDecoder* decoder;
      ~TrimOnExit() { decoder->Trim(); }
    } trim{decoder_.get()};
    engine::DecodeSummary s;
    try {
      s = decoder_->Decode(payload.Data(), payload.ElementLength(), fallbackRank);
    } catch (const engine::DecodeFailure& f) {
      if (f.code == engine::DecodeFailure::Code::kRankOutOfRange) {
        Napi::Error e = Napi::Error::New(env, f.message);
        e.Set("code", Napi::String::New(env, "RankOutOfRange"));
        e.Set("rank", Napi::Number::New(env, f.rank));
        throw e;
      }
      args::ThrowCoded(env, "MalformedKvBatch", f.message);
    } catch (const std::bad_alloc&) {
      args::ThrowCoded(env, "AllocationFailed", "cannot allocate the decoder's scratch for this payload");
    }

    const std::vector<uint32_t>& m = decoder_->meta();
    const std::vector<uint64_t>& w = decoder_->words();
    double* slots = slotArray.Data();
    const uint64_t metaEnd = uint64_t{metaOffset} + m.size();
    const uint64_t wordsEnd = uint64_t{wordsOffset} + w.size();
    if (metaEnd > meta.ElementLength() || wordsEnd > words.ElementLength()) {
      slots[kNeedMeta] = static_cast<double>(metaEnd);
      slots[kNeedWords] = static_cast<double>(wordsEnd);
      return Napi::Boolean::New(env, false);
    }
    if (!m.empty()) std::memcpy(meta.Data() + metaOffset, m.data(), m.size() * sizeof(uint32_t));
    if (!w.empty()) std::memcpy(words.Data() + wordsOffset, w.data(), w.size() * sizeof(uint64_t));
    slots[kMetaEnd] = static_cast<double>(metaEnd);
    slots[kWordsEnd] = static_cast<double>(wordsEnd);
    slots[kTimestamp] = s.timestamp;
    slots[kDpRank] = s.dpRank;
    slots[kEvents] = static_cast<double>(s.events);
    slots[kBlocks] = static_cast<double>(s.blocks);
    slots[kIgnored] = static_cast<double>(s.ignored);
    slots[kDroppedBlockSize] = static_cast<double>(s.droppedBlockSize);
    slots[kDroppedNoCompleteBlock] = static_cast<double>(s.droppedNoCompleteBlock);
    slots[kLastDroppedBlockSize] = s.lastDroppedBlockSize;
    return Napi::Boolean::New(env, true);
  }

 private:
  engine::DecoderOptions options_{};
  std::unique_ptr<engine::BatchDecoder> decoder_;
  Napi::Reference<Napi::Float64Array> slots_;
};

}  // namespace

void InitEngineDecoder(Napi::Env env, Napi::Object exports) {
  exports.Set("EngineBatchDecoder", EngineDecoderWrap::Define(env));
  Napi::Object slots = Napi::Object::New(env);
  for (uint32_t i = 0; i < kSlotCount; ++i) slots.Set(kSlotNames[i], Napi::Number::New(env, i));
  slots.Set("count", Napi::Number::New(env, kSlotCount));
  exports.Set("engineDecodeSlots", slots);
}

}  // namespace kvrelay
