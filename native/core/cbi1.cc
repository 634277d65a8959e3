#include "core/cbi1.h"

#include <cstring>

#include "core/copy_hash.h"

namespace kvrelay {
namespace cbi1 {
namespace {

[[noreturn]] void Throw(const char* code, std::initializer_list<ErrorDetail> details = {}) {
  throw Cbi1Error{code, details};
}

void StoreU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
void StoreU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }
void StoreU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }
uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t BodyChecksum(const uint8_t* frame, size_t len) {
  return static_cast<uint32_t>(XXH3_64bits(frame + kHeaderLen, len - kHeaderLen));
}

void WriteHeader(uint8_t* out, const FilterFormat& format, uint16_t flags, uint64_t dcId, uint64_t epoch,
                 uint32_t checksum) {
  std::memcpy(out, kMagic, sizeof kMagic);
  StoreU16(out + 4, kWireVersion);
  StoreU16(out + 6, flags);
  out[8] = kFingerprintBits;
  out[9] = kSlotsPerBucket;
  StoreU16(out + 10, kFormatVersion);
  StoreU64(out + 12, format.seed);
  StoreU64(out + 20, format.bucketCount);
  StoreU64(out + 28, dcId);
  StoreU64(out + 36, epoch);
  StoreU32(out + kChecksumOffset, checksum);
}

Header ReadHeader(const uint8_t* p) {
  Header h;
  h.wireVersion = LoadU16(p + 4);
  h.flags = LoadU16(p + 6);
  h.fingerprintBits = p[8];
  h.slotsPerBucket = p[9];
  h.formatVersion = LoadU16(p + 10);
  h.seed = LoadU64(p + 12);
  h.bucketCount = LoadU64(p + 20);
  h.dcId = LoadU64(p + 28);
  h.epoch = LoadU64(p + 36);
  h.checksum = LoadU32(p + kChecksumOffset);
  return h;
}

// FilterFormat::validate against a received header.
void ValidateHeaderFormat(const FilterFormat& expected, const Header& h) {
  if (h.formatVersion != kFormatVersion) Throw("Format.Version", {{"value", h.formatVersion, false}});
  if (h.fingerprintBits != kFingerprintBits) Throw("Format.FingerprintBits", {{"value", h.fingerprintBits, false}});
  if (h.slotsPerBucket != kSlotsPerBucket) Throw("Format.SlotsPerBucket", {{"value", h.slotsPerBucket, false}});
  if (h.seed != expected.seed || h.bucketCount != expected.bucketCount) {
    throw Cbi1Error{"Format.Mismatch", {{"seed", h.seed, true}, {"buckets", h.bucketCount, true}}, false, true, expected};
  }
}

uint64_t ChunkWordCount(const FilterFormat& format, uint32_t chunkIndex) {
  uint64_t start = uint64_t{chunkIndex} * kSnapshotChunkBuckets;
  uint64_t end = start + kSnapshotChunkBuckets;
  return (end < format.bucketCount ? end : format.bucketCount) - start;
}

void DecodeDeltaBody(const FilterFormat& expected, const uint8_t* body, size_t len, DecodedFrame* f) {
  if (len < kDeltaBodyPrefix) Throw("Malformed");
  f->baseEpoch = LoadU64(body);
  f->imageCount = LoadU32(body + 8);
  if (f->imageCount > kMaxDeltaImages) {
    Throw("DeltaImageCount", {{"actual", f->imageCount, false}, {"maximum", kMaxDeltaImages, false}});
  }
  // imageCount ≤ 349525, so the product cannot overflow size_t.
  if (len != kDeltaBodyPrefix + kDeltaImageBytes * f->imageCount) Throw("Malformed");
  f->images = body + kDeltaBodyPrefix;
  for (uint32_t i = 0; i < f->imageCount; ++i) {
    if (LoadU32(f->images + i * kDeltaImageBytes) >= expected.bucketCount) Throw("Malformed");
  }
}

void DecodeChunkBody(const FilterFormat& expected, const uint8_t* body, size_t len, DecodedFrame* f) {
  if (len < kChunkBodyPrefix) Throw("Malformed");
  f->chunkIndex = LoadU32(body);
  f->chunkCount = LoadU32(body + 4);
  f->bucketOffset = LoadU64(body + 8);
  if (f->chunkCount == 0 || f->chunkIndex >= f->chunkCount) Throw("Malformed");
  size_t wordBytes = len - kChunkBodyPrefix;
  if (wordBytes % 8 != 0) Throw("Malformed");
  f->wordCount = wordBytes / 8;
  // Unreachable through Decode (the frame limit caps a chunk at exactly this many words); kept
  // because it is part of the specified body check order.
  if (f->wordCount > kSnapshotChunkBuckets) {
    Throw("SnapshotChunkWordCount", {{"actual", f->wordCount, false}, {"maximum", kSnapshotChunkBuckets, false}});
  }
  uint64_t end = f->bucketOffset + f->wordCount;
  if (end < f->bucketOffset || end > expected.bucketCount) Throw("Malformed");
  f->words = body + kChunkBodyPrefix;
}

}  // namespace

std::string Cbi1Error::Message() const {
  std::string message = "CBI1 " + code;
  for (size_t i = 0; i < details.size(); ++i) {
    message += i == 0 ? " (" : ", ";
    message += details[i].name;
    message += " ";
    message += std::to_string(details[i].value);
  }
  if (!details.empty()) message += ")";
  if (hasExpected) {
    message += "; expected seed " + std::to_string(expected.seed) + ", buckets " + std::to_string(expected.bucketCount);
  }
  return message;
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

FilterFormat MakeFormat(uint64_t seed, uint64_t bucketCount) {
  bool powerOfTwo = bucketCount != 0 && (bucketCount & (bucketCount - 1)) == 0;
  if (!powerOfTwo || bucketCount < 2 || bucketCount > kMaxBucketCount) {
    throw Cbi1Error{"Format.BucketCount", {{"value", bucketCount, false}}, true};
  }
  return FilterFormat{seed, bucketCount};
}

void CheckFormatIdentity(uint64_t formatVersion, uint64_t fingerprintBits, uint64_t slotsPerBucket) {
  if (formatVersion != kFormatVersion || fingerprintBits != kFingerprintBits || slotsPerBucket != kSlotsPerBucket) {
    Throw("UnsupportedFormatIdentity", {{"formatVersion", formatVersion, false},
                                        {"fingerprintBits", fingerprintBits, false},
                                        {"slotsPerBucket", slotsPerBucket, false}});
  }
}

size_t DeltaFrameLen(size_t imageCount) { return kHeaderLen + kDeltaBodyPrefix + kDeltaImageBytes * imageCount; }

void ValidateDelta(const FilterFormat& format, const uint32_t* buckets, size_t imageCount) {
  if (imageCount > kMaxDeltaImages) {
    Throw("DeltaImageCount", {{"actual", imageCount, false}, {"maximum", kMaxDeltaImages, false}});
  }
  for (size_t i = 0; i < imageCount; ++i) {
    if (buckets[i] >= format.bucketCount) {
      Throw("BucketIndex", {{"bucket", buckets[i], false}, {"bucketCount", format.bucketCount, false}});
    }
  }
}

void WriteDelta(const FilterFormat& format, uint64_t dcId, uint64_t baseSequence, uint64_t sequence,
                const uint32_t* buckets, const uint64_t* values, size_t imageCount, uint8_t* out) {
  uint8_t* body = out + kHeaderLen;
  StoreU64(body, baseSequence);
  StoreU32(body + 8, static_cast<uint32_t>(imageCount));
  uint8_t* image = body + kDeltaBodyPrefix;
  for (size_t i = 0; i < imageCount; ++i, image += kDeltaImageBytes) {
    StoreU32(image, buckets[i]);
    StoreU64(image + 4, values[i]);
  }
  WriteHeader(out, format, kFlagDelta, dcId, sequence, BodyChecksum(out, DeltaFrameLen(imageCount)));
}

uint32_t ChunkCount(const FilterFormat& format) {
  return static_cast<uint32_t>((format.bucketCount + kSnapshotChunkBuckets - 1) / kSnapshotChunkBuckets);
}

size_t ChunkFrameLen(const FilterFormat& format, uint32_t chunkIndex) {
  return kHeaderLen + kChunkBodyPrefix + 8 * ChunkWordCount(format, chunkIndex);
}

void ValidateSnapshot(const FilterFormat& format, size_t wordCount) {
  if (wordCount != format.bucketCount) {
    Throw("SnapshotBucketCount", {{"expected", format.bucketCount, false}, {"actual", wordCount, false}});
  }
}

void WriteChunk(const FilterFormat& format, uint64_t dcId, uint64_t epoch, const uint64_t* words,
                uint32_t chunkIndex, uint8_t* out) {
  uint64_t offset = uint64_t{chunkIndex} * kSnapshotChunkBuckets;
  uint64_t count = ChunkWordCount(format, chunkIndex);
  uint8_t* body = out + kHeaderLen;
  StoreU32(body, chunkIndex);
  StoreU32(body + 4, ChunkCount(format));
  StoreU64(body + 8, offset);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, body, kChunkBodyPrefix);
  CopyAndHash(body + kChunkBodyPrefix, reinterpret_cast<const uint8_t*>(words + offset), count * 8, &state);
  WriteHeader(out, format, kFlagSnapshotChunk, dcId, epoch, static_cast<uint32_t>(XXH3_64bits_digest(&state)));
}

size_t SnapshotFramesLen(const FilterFormat& format) {
  uint32_t count = ChunkCount(format);
  return (count - 1) * kMaxFrameBytes + ChunkFrameLen(format, count - 1);
}

void WriteSnapshot(const FilterFormat& format, uint64_t dcId, uint64_t epoch, const uint64_t* words, uint8_t* out) {
  for (uint32_t i = 0; i < ChunkCount(format); ++i) WriteChunk(format, dcId, epoch, words, i, out + i * kMaxFrameBytes);
}

DecodedFrame Decode(const FilterFormat& expected, const uint8_t* bytes, size_t len) {
  if (len < kHeaderLen) Throw("Truncated");
  if (len > kMaxFrameBytes) Throw("FrameTooLarge", {{"actual", len, false}, {"maximum", kMaxFrameBytes, false}});
  if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0) Throw("Magic");
  uint16_t wireVersion = LoadU16(bytes + 4);
  if (wireVersion != kWireVersion) Throw("WireVersion", {{"value", wireVersion, false}});
  DecodedFrame f;
  f.header = ReadHeader(bytes);
  if (BodyChecksum(bytes, len) != f.header.checksum) Throw("Checksum");
  // Check 7 (bucket_count fits usize) cannot fail on a 64-bit host.
  ValidateHeaderFormat(expected, f.header);
  const uint8_t* body = bytes + kHeaderLen;
  size_t bodyLen = len - kHeaderLen;
  switch (f.header.flags) {
    case kFlagDelta:
      f.kind = FrameKind::Delta;
      DecodeDeltaBody(expected, body, bodyLen, &f);
      return f;
    case kFlagSnapshotChunk:
      f.kind = FrameKind::Chunk;
      DecodeChunkBody(expected, body, bodyLen, &f);
      return f;
    default:
      Throw("Flags", {{"value", f.header.flags, false}});
  }
}

void SnapshotAssembly::Reset() {
  epoch_ = 0;
  chunkCount_ = 0;
  nextChunk_ = 0;
  nextBucket_ = 0;
  std::vector<uint32_t>().swap(buckets_);
  std::vector<uint64_t>().swap(values_);
}

void SnapshotAssembly::ResetAndThrow(const char* code) {
  Reset();
  Throw(code);
}

bool SnapshotAssembly::Absorb(const DecodedFrame& frame, AssembledSnapshot* out) {
  // A non-chunk frame is refused without disturbing the assembly in progress.
  if (frame.kind != FrameKind::Chunk) Throw("ChunkSequence");
  if (frame.chunkCount == 0 || frame.chunkIndex >= frame.chunkCount) ResetAndThrow("ChunkSequence");
  if (frame.chunkIndex == 0) {
    Reset();
    epoch_ = frame.header.epoch;
    chunkCount_ = frame.chunkCount;
    if (collectImages_) {
      // Room for a full table up front: growing by doubling copied and faulted in far more memory
      // than the images need, while untouched reserved pages cost no physical memory.
      buckets_.reserve(bucketCount_);
      values_.reserve(bucketCount_);
    }
  }
  if (frame.chunkIndex != nextChunk_ || frame.chunkCount != chunkCount_ || frame.header.epoch != epoch_ ||
      frame.header.bucketCount != bucketCount_ || frame.bucketOffset != nextBucket_) {
    ResetAndThrow("ChunkSequence");
  }
  // A decoded frame never exceeds bucket_count (the decoder checks it); this guards the u32
  // bucket index against a hand-built chunk.
  if (frame.wordCount > bucketCount_ - nextBucket_) ResetAndThrow("Malformed");
  for (uint64_t i = 0; collectImages_ && i < frame.wordCount; ++i) {
    uint64_t word = LoadU64(frame.words + i * 8);
    if (word != 0) {
      buckets_.push_back(static_cast<uint32_t>(nextBucket_ + i));
      values_.push_back(word);
    }
  }
  nextBucket_ += frame.wordCount;
  nextChunk_ += 1;
  if (nextChunk_ < chunkCount_) return false;
  if (nextBucket_ != bucketCount_) ResetAndThrow("IncompleteCoverage");
  out->epoch = epoch_;
  out->buckets = std::move(buckets_);
  out->values = std::move(values_);
  Reset();
  return true;
}

}  // namespace cbi1
}  // namespace kvrelay
