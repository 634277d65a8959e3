// libFuzzer target: CBI1 decode and snapshot assembly. Input = [u8 log2 bucketCount - 1][u8 options]
// [u64 seed] then frames, each [u16 length][bytes]. Option bit 0 rewrites each frame's checksum
// before decoding, so mutations reach the body checks instead of stopping at the checksum.
// Every frame is decoded against the expected format; each accepted delta must re-encode to the same
// bytes, each accepted chunk is absorbed by two assemblies (with and without images). A rejected
// frame must leave the assemblies as they were: the run is checked against a replay of only the
// accepted frames.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/cbi1.h"
#include "fuzz_input.h"
#define XXH_INLINE_ALL
#include "xxhash.h"

using kvrelay::fuzz::Input;
namespace cbi1 = kvrelay::cbi1;

namespace {

struct Outcome {
  bool threw;
  bool complete;
  cbi1::AssembledSnapshot snapshot;
};

Outcome AbsorbOne(cbi1::SnapshotAssembly* a, const cbi1::DecodedFrame& f) {
  Outcome o{false, false, {}};
  try {
    o.complete = a->Absorb(f, &o.snapshot);
  } catch (const cbi1::Cbi1Error&) {
    o.threw = true;
  }
  return o;
}

void CheckSnapshot(const cbi1::FilterFormat& format, const cbi1::AssembledSnapshot& s) {
  FUZZ_CHECK(s.buckets.size() == s.values.size());
  for (size_t i = 0; i < s.buckets.size(); ++i) {
    FUZZ_CHECK(s.buckets[i] < format.bucketCount);
    FUZZ_CHECK(i == 0 || s.buckets[i] > s.buckets[i - 1]);
    FUZZ_CHECK(s.values[i] != 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint64_t bucketCount = uint64_t{1} << (1 + in.Take<uint8_t>() % 20);
  const uint8_t options = in.Take<uint8_t>();
  const cbi1::FilterFormat format = cbi1::MakeFormat(in.Take<uint64_t>(), bucketCount);

  cbi1::SnapshotAssembly images(format, true);
  cbi1::SnapshotAssembly plain(format, false);
  std::vector<std::vector<uint8_t>> accepted;  // chunk frames that decoded, in order
  std::vector<Outcome> outcomes;
  while (in.Left() > 0) {
    const size_t len = in.Take<uint16_t>();
    std::vector<uint8_t> frame(in.Here(), in.Here() + (len < in.Left() ? len : in.Left()));
    in.Skip(len);
    if ((options & 1) && frame.size() >= cbi1::kHeaderLen) {
      const uint32_t sum = static_cast<uint32_t>(XXH3_64bits(frame.data() + cbi1::kHeaderLen, frame.size() - cbi1::kHeaderLen));
      std::memcpy(frame.data() + cbi1::kChecksumOffset, &sum, sizeof sum);
    }
    cbi1::DecodedFrame f;
    try {
      f = cbi1::Decode(format, frame.data(), frame.size());
    } catch (const cbi1::Cbi1Error&) {
      continue;
    }
    FUZZ_CHECK(f.header.seed == format.seed && f.header.bucketCount == format.bucketCount);
    if (f.kind == cbi1::FrameKind::Delta) {
      std::vector<uint32_t> buckets(f.imageCount);
      std::vector<uint64_t> values(f.imageCount);
      for (uint32_t i = 0; i < f.imageCount; ++i) {
        buckets[i] = cbi1::LoadU32(f.images + i * cbi1::kDeltaImageBytes);
        values[i] = cbi1::LoadU64(f.images + i * cbi1::kDeltaImageBytes + 4);
      }
      cbi1::ValidateDelta(format, buckets.data(), f.imageCount);  // what decodes must encode
      std::vector<uint8_t> again(cbi1::DeltaFrameLen(f.imageCount));
      cbi1::WriteDelta(format, f.header.dcId, f.baseEpoch, f.header.epoch, buckets.data(), values.data(),
                       f.imageCount, again.data());
      FUZZ_CHECK(again == frame);
      continue;
    }
    FUZZ_CHECK(f.bucketOffset + f.wordCount <= format.bucketCount);
    const Outcome a = AbsorbOne(&images, f);
    const Outcome b = AbsorbOne(&plain, f);
    FUZZ_CHECK(a.threw == b.threw && a.complete == b.complete);
    if (a.complete) {
      CheckSnapshot(format, a.snapshot);
      FUZZ_CHECK(b.snapshot.buckets.empty());
      FUZZ_CHECK(a.snapshot.epoch == b.snapshot.epoch);
    }
    accepted.push_back(frame);
    outcomes.push_back(a);
  }
  // The same chunks again through a fresh assembly: identical outcomes (nothing depended on the
  // frames that were rejected in between).
  cbi1::SnapshotAssembly replay(format, true);
  for (size_t i = 0; i < accepted.size(); ++i) {
    const Outcome r = AbsorbOne(&replay, cbi1::Decode(format, accepted[i].data(), accepted[i].size()));
    FUZZ_CHECK(r.threw == outcomes[i].threw && r.complete == outcomes[i].complete);
    if (r.complete) {
      FUZZ_CHECK(r.snapshot.buckets == outcomes[i].snapshot.buckets);
      FUZZ_CHECK(r.snapshot.values == outcomes[i].snapshot.values);
    }
  }
  return 0;
}
