// N-API class RouterEventDecoder: one dynamo::RouterEventDecoder (router_event_decode.h). decodeBatch
// decodes every message of a burst (laid end to end in one arena) in one call: per message a record
// (status, flags, publisher, sequence, worker, event id, rank, kind, blocks, where its packed event
// ends) and the packed events of the counted ones, in message order, into caller-owned arrays. It
// writes nothing into meta / words when they are too small (it then reports the lengths it needs).
#include <napi.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "ingest/router_event_decode.h"

namespace kvrelay {
namespace {

// u32 slots of one message's record, exported by name as routerEventRecord.
enum RecordSlot : uint32_t {
  kStatus,
  kFlags,
  kPublisherLo,
  kPublisherHi,
  kSequenceLo,
  kSequenceHi,
  kWorkerLo,
  kWorkerHi,
  kEventIdLo,
  kEventIdHi,
  kDpRank,
  kKind,
  kBlocks,
  kMetaEnd,
  kWordsEnd,
  kRecordStride,
};
constexpr const char* kRecordNames[kRecordStride] = {
    "status", "flags", "publisherLo", "publisherHi", "sequenceLo", "sequenceHi", "workerLo", "workerHi",
    "eventIdLo", "eventIdHi", "dpRank", "kind", "blocks", "metaEnd", "wordsEnd",
};

// Largest burst one call decodes (bounds the records a caller passes).
constexpr uint32_t kMaxMessagesPerCall = 1u << 16;

class RouterEventDecoderWrap : public Napi::ObjectWrap<RouterEventDecoderWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "RouterEventDecoder",
                       {InstanceMethod<&RouterEventDecoderWrap::DecodeBatch>("decodeBatch"),
                        InstanceMethod<&RouterEventDecoderWrap::ErrorOf>("errorOf")});
  }

  // (topic: string, legacyTopic: string, sizes: Float64Array(2))
  explicit RouterEventDecoderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RouterEventDecoderWrap>(info) {
    Napi::Env env = info.Env();
    std::string topic, legacy;
    if (!args::OptionalString(args::Arg(info, 0), "topic", &topic) || topic.empty()) throw Napi::TypeError::New(env, "topic must be a non-empty string");
    args::OptionalString(args::Arg(info, 1), "legacyTopic", &legacy);
    auto sizes = args::Typed<double>(args::Arg(info, 2), napi_float64_array, "sizes (Float64Array)");
    if (sizes.ElementLength() < 2) throw Napi::RangeError::New(env, "sizes is too short");
    sizes_ = Napi::Persistent(sizes);
    decoder_ = std::make_unique<dynamo::RouterEventDecoder>(topic, legacy);
  }

  // (arena: Uint8Array, ends: Uint32Array, count, format, records: Uint32Array, meta: Uint32Array,
  //  words: BigUint64Array) -> true: decoded, sizes = [metaEnd, wordsEnd]; false: meta / words must
  //  grow to sizes = [needMeta, needWords] (records are written, meta / words are not).
  // Message i is arena[ends[i-1] .. ends[i]) (ends[-1] = 0).
  Napi::Value DecodeBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto arena = args::U8Array(args::Arg(info, 0), "arena");
    auto ends = args::U32Array(args::Arg(info, 1), "ends");
    const uint32_t count = args::U32(args::Arg(info, 2), "count");
    const uint32_t format = args::U32(args::Arg(info, 3), "format");
    if (format > static_cast<uint32_t>(dynamo::MessageFormat::kJson)) throw Napi::RangeError::New(env, "format must be 0, 1 or 2");
    auto records = args::U32Array(args::Arg(info, 4), "records");
    auto meta = args::U32Array(args::Arg(info, 5), "meta");
    auto words = args::U64Array(args::Arg(info, 6), "words");
    if (count > kMaxMessagesPerCall) throw Napi::RangeError::New(env, "count is above 65536");
    if (count > ends.ElementLength()) throw Napi::RangeError::New(env, "ends is shorter than count");
    if (uint64_t{count} * kRecordStride > records.ElementLength()) throw Napi::RangeError::New(env, "records is shorter than count records");
    Napi::Float64Array sizeArray = sizes_.Value();
    if (sizeArray.ElementLength() < 2) throw Napi::Error::New(env, "the sizes array was detached");

    const uint8_t* base = arena.Data();
    const uint32_t* e = ends.Data();
    uint32_t* out = records.Data();
    std::vector<uint32_t>& m = decoder_->meta();
    std::vector<uint64_t>& w = decoder_->words();
    m.clear();
    w.clear();
    errors_.clear();
    uint32_t start = 0;
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t end = e[i];
      if (end < start || end > arena.ElementLength()) throw Napi::RangeError::New(env, "ends must be non-decreasing and within the arena");
      const dynamo::MessageRecord r = decoder_->Decode(base + start, end - start, static_cast<dynamo::MessageFormat>(format));
      if (r.status == dynamo::MessageStatus::kMalformed) errors_.emplace_back(i, decoder_->error());
      uint32_t* rec = out + uint64_t{i} * kRecordStride;
      rec[kStatus] = static_cast<uint32_t>(r.status);
      rec[kFlags] = r.flags;
      rec[kPublisherLo] = static_cast<uint32_t>(r.publisherId);
      rec[kPublisherHi] = static_cast<uint32_t>(r.publisherId >> 32);
      rec[kSequenceLo] = static_cast<uint32_t>(r.sequence);
      rec[kSequenceHi] = static_cast<uint32_t>(r.sequence >> 32);
      rec[kWorkerLo] = static_cast<uint32_t>(r.workerId);
      rec[kWorkerHi] = static_cast<uint32_t>(r.workerId >> 32);
      rec[kEventIdLo] = static_cast<uint32_t>(r.eventId);
      rec[kEventIdHi] = static_cast<uint32_t>(r.eventId >> 32);
      rec[kDpRank] = r.dpRank;
      rec[kKind] = r.kind;
      rec[kBlocks] = r.blocks;
      rec[kMetaEnd] = static_cast<uint32_t>(m.size());
      rec[kWordsEnd] = static_cast<uint32_t>(w.size());
      start = end;
    }
    double* sizes = sizeArray.Data();
    sizes[0] = static_cast<double>(m.size());
    sizes[1] = static_cast<double>(w.size());
    if (m.size() > meta.ElementLength() || w.size() > words.ElementLength()) return Napi::Boolean::New(env, false);
    if (!m.empty()) std::memcpy(meta.Data(), m.data(), m.size() * sizeof(uint32_t));
    if (!w.empty()) std::memcpy(words.Data(), w.data(), w.size() * sizeof(uint64_t));
    return Napi::Boolean::New(env, true);
  }

  // (i) -> why message i of the last decodeBatch was malformed ('' if it was not).
  Napi::Value ErrorOf(const Napi::CallbackInfo& info) {
    const uint32_t i = args::U32(args::Arg(info, 0), "index");
    for (const auto& [index, message] : errors_) {
      if (index == i) return Napi::String::New(info.Env(), message);
    }
    return Napi::String::New(info.Env(), "");
  }

 private:
  std::unique_ptr<dynamo::RouterEventDecoder> decoder_;
  Napi::Reference<Napi::Float64Array> sizes_;
  std::vector<std::pair<uint32_t, std::string>> errors_;
};

}  // namespace

void InitRouterEventDecoder(Napi::Env env, Napi::Object exports) {
  exports.Set("RouterEventDecoder", RouterEventDecoderWrap::Define(env));
  Napi::Object record = Napi::Object::New(env);
  for (uint32_t i = 0; i < kRecordStride; ++i) record.Set(kRecordNames[i], Napi::Number::New(env, i));
  record.Set("stride", Napi::Number::New(env, kRecordStride));
  record.Set("ok", Napi::Number::New(env, static_cast<uint32_t>(dynamo::MessageStatus::kOk)));
  record.Set("malformed", Napi::Number::New(env, static_cast<uint32_t>(dynamo::MessageStatus::kMalformed)));
  record.Set("otherTopic", Napi::Number::New(env, static_cast<uint32_t>(dynamo::MessageStatus::kOtherTopic)));
  record.Set("hasEnvelope", Napi::Number::New(env, dynamo::kHasEnvelope));
  record.Set("counted", Napi::Number::New(env, dynamo::kCounted));
  record.Set("otherTier", Napi::Number::New(env, dynamo::kOtherTier));
  record.Set("unsupportedDomain", Napi::Number::New(env, dynamo::kUnsupportedDomain));
  record.Set("formatEnvelope", Napi::Number::New(env, static_cast<uint32_t>(dynamo::MessageFormat::kEnvelope)));
  record.Set("formatFramed", Napi::Number::New(env, static_cast<uint32_t>(dynamo::MessageFormat::kFramed)));
  record.Set("formatJson", Napi::Number::New(env, static_cast<uint32_t>(dynamo::MessageFormat::kJson)));
  exports.Set("routerEventRecord", record);
}

}  // namespace kvrelay
