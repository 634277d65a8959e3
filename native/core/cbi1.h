// CBI1 codec (hashing-ckf-cbi1.md §3): snapshot chunks and deltas of absolute CKF bucket words,
// the decoder with its exact check order, and snapshot assembly. Pure C++ (no N-API), so the
// encoder can run on worker threads; cbi1_napi.cc is the JavaScript surface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// Bucket words are copied as whole u64 arrays; the wire is little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "CBI1 codec assumes a little-endian host");

namespace kvrelay {
namespace cbi1 {

constexpr uint8_t kMagic[4] = {'C', 'B', 'I', '1'};
constexpr uint16_t kWireVersion = 1;
constexpr size_t kHeaderLen = 48;
constexpr size_t kChecksumOffset = 44;
constexpr uint64_t kSnapshotChunkBuckets = 512 * 1024;
constexpr uint64_t kMaxBucketCount = uint64_t{1} << 24;
constexpr size_t kChunkBodyPrefix = 16;
constexpr size_t kMaxFrameBytes = kHeaderLen + kChunkBodyPrefix + kSnapshotChunkBuckets * 8;  // 4194368
constexpr size_t kDeltaBodyPrefix = 12;
constexpr size_t kDeltaImageBytes = 12;
constexpr uint64_t kMaxDeltaImages = (kMaxFrameBytes - kHeaderLen - kDeltaBodyPrefix) / kDeltaImageBytes;  // 349525
constexpr uint16_t kFlagSnapshotChunk = 1;
constexpr uint16_t kFlagDelta = 2;
constexpr uint16_t kFormatVersion = 1;
constexpr uint8_t kFingerprintBits = 16;
constexpr uint8_t kSlotsPerBucket = 4;

// A validated FilterFormat: bucket_count is a power of two in 2..=2^24.
struct FilterFormat {
  uint64_t seed;
  uint64_t bucketCount;
};

// One named detail of an error; `big` details are u64 values a consumer reads as bigint.
struct ErrorDetail {
  const char* name;
  uint64_t value;
  bool big;
};

// ImagesWireError. `code` is the variant name used by the golden vectors, with Format errors
// written as "Format.<FormatError>" (e.g. "Format.Mismatch"). `argument` marks errors caused by a
// caller's bad argument (surfaced as RangeError) rather than by frame content.
struct Cbi1Error {
  std::string code;
  std::vector<ErrorDetail> details;
  bool argument = false;
  bool hasExpected = false;  // Format.Mismatch carries the expected format
  FilterFormat expected{0, 0};

  std::string Message() const;
};

// FilterFormat::new: throws Format.BucketCount (an argument error) for a bad count.
FilterFormat MakeFormat(uint64_t seed, uint64_t bucketCount);
// codec::encode_snapshot's identity check: (version, bits, slots) must be (1, 16, 4).
void CheckFormatIdentity(uint64_t formatVersion, uint64_t fingerprintBits, uint64_t slotsPerBucket);

struct Header {
  uint16_t wireVersion;
  uint16_t flags;
  uint8_t fingerprintBits;
  uint8_t slotsPerBucket;
  uint16_t formatVersion;
  uint64_t seed;
  uint64_t bucketCount;
  uint64_t dcId;
  uint64_t epoch;
  uint32_t checksum;
};

enum class FrameKind { Delta, Chunk };

// A decoded frame. Pointers refer into the decoded bytes (or a caller's arrays); u64/u32 values
// there are little-endian and possibly unaligned, so read them with the Load helpers.
struct DecodedFrame {
  FrameKind kind;
  Header header;
  // Delta
  uint64_t baseEpoch = 0;
  uint32_t imageCount = 0;
  const uint8_t* images = nullptr;  // imageCount × (bucket u32, value u64)
  // Chunk
  uint32_t chunkIndex = 0;
  uint32_t chunkCount = 0;
  uint64_t bucketOffset = 0;
  uint64_t wordCount = 0;
  const uint8_t* words = nullptr;  // wordCount × u64
};

uint32_t LoadU32(const uint8_t* p);
uint64_t LoadU64(const uint8_t* p);

// --- Encoding -------------------------------------------------------------------------------
// Each encoder is split into a validation step (throws Cbi1Error, allocates nothing) and a write
// step into a caller-provided buffer of exactly the reported length.

size_t DeltaFrameLen(size_t imageCount);
void ValidateDelta(const FilterFormat& format, const uint32_t* buckets, size_t imageCount);
void WriteDelta(const FilterFormat& format, uint64_t dcId, uint64_t baseSequence, uint64_t sequence,
                const uint32_t* buckets, const uint64_t* values, size_t imageCount, uint8_t* out);

uint32_t ChunkCount(const FilterFormat& format);
size_t ChunkFrameLen(const FilterFormat& format, uint32_t chunkIndex);
void ValidateSnapshot(const FilterFormat& format, size_t wordCount);
void WriteChunk(const FilterFormat& format, uint64_t dcId, uint64_t epoch, const uint64_t* words,
                uint32_t chunkIndex, uint8_t* out);
// Every chunk frame back to back: chunk i starts at i × kMaxFrameBytes (all chunks but the last
// are full), SnapshotFramesLen bytes in all.
size_t SnapshotFramesLen(const FilterFormat& format);
void WriteSnapshot(const FilterFormat& format, uint64_t dcId, uint64_t epoch, const uint64_t* words, uint8_t* out);

// --- Decoding -------------------------------------------------------------------------------

// decode(expected, bytes) with every check of §3.5 in order; throws Cbi1Error.
DecodedFrame Decode(const FilterFormat& expected, const uint8_t* bytes, size_t len);

// --- Snapshot assembly (§3.6) ---------------------------------------------------------------

struct AssembledSnapshot {
  uint64_t epoch;
  std::vector<uint32_t> buckets;
  std::vector<uint64_t> values;
};

class SnapshotAssembly {
 public:
  // With collectImages false the assembly only validates order, epochs and coverage (a consumer
  // that copies the dense chunk words itself needs no image list of the whole table).
  SnapshotAssembly(const FilterFormat& format, bool collectImages)
      : bucketCount_(format.bucketCount), collectImages_(collectImages) {}
  // true when the snapshot completed; `out` then holds the sparse nonzero images (none when
  // images are not collected).
  bool Absorb(const DecodedFrame& frame, AssembledSnapshot* out);
  void Reset();

 private:
  [[noreturn]] void ResetAndThrow(const char* code);

  uint64_t bucketCount_;
  bool collectImages_;
  uint64_t epoch_ = 0;
  uint32_t chunkCount_ = 0;
  uint32_t nextChunk_ = 0;
  uint64_t nextBucket_ = 0;
  std::vector<uint32_t> buckets_;
  std::vector<uint64_t> values_;
};

}  // namespace cbi1
}  // namespace kvrelay
