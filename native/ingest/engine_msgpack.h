// A bounded, zero-copy msgpack reader for engine KV-event payloads (engine-inputs.md §1.4-§1.6). Pure
// C++, no N-API, no allocation.
//
// Hand-written on purpose: no well-kept C/C++ msgpack library is available from the npm registry
// (the registry's msgpack packages are JS codecs; msgpack-c, mpack and cmp are not packaged there),
// and the decoder needs a schema-directed reader anyway: it walks a peer-controlled buffer once,
// reads values where they lie, and never sizes anything from a header before bounding it.
//
// Bounds (hostile input is normal):
// - every read is checked against the end of the payload;
// - an array claiming n elements needs n bytes left, a map with n entries 2n bytes (each element
//   takes at least one), so a length header cannot claim more than the payload holds;
// - nesting is bounded (kMaxDepth) and skipping is iterative (no recursion);
// - strings must be valid UTF-8, map keys scalars (what msgpackr turns into property names);
// - extension types and the reserved byte 0xc1 are refused (engines send neither).
// Any violation throws DecodeFailure{kMalformed}.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace kvrelay {
namespace engine {

struct DecodeFailure {
  enum class Code : uint8_t { kMalformed, kRankOutOfRange };
  Code code;
  std::string message;
  uint32_t rank = 0;  // kRankOutOfRange: the offending rank
};

[[noreturn]] inline void Malformed(std::string message) {
  throw DecodeFailure{DecodeFailure::Code::kMalformed, std::move(message)};
}

namespace msgpack {

// Containers nest at most this deep (the batch is depth 0). Engine batches need 9 (block_mm_infos);
// the bound only keeps hostile nesting cheap.
constexpr int kMaxDepth = 32;

enum class Type : uint8_t { kNil, kBool, kInt, kFloat, kStr, kBin, kArray, kMap };

struct Value {
  Type type;
  // kInt: a 64-bit encoding (0xcf / 0xd3), which msgpackr decodes to a bigint, not a number.
  bool wide;
  // kInt: below zero; `bits` then holds the two's complement.
  bool negative;
  bool boolean;
  uint64_t bits;
  double number;         // kFloat
  const uint8_t* data;   // kStr / kBin bytes
  uint32_t length;       // kStr / kBin bytes, kArray elements, kMap entries
};

inline bool ValidUtf8(const uint8_t* p, size_t n) {
  if (n <= 16) {  // keys and enum values: one pass over a short ASCII string
    uint8_t any = 0;
    for (size_t k = 0; k < n; ++k) any |= p[k];
    if (any < 0x80) return true;
  }
  size_t i = 0;
  while (i < n) {
    // ASCII runs 8 bytes at a time.
    if (i + 8 <= n) {
      uint64_t chunk;
      std::memcpy(&chunk, p + i, 8);
      if ((chunk & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (b >= 0xc2 && b <= 0xdf) {
      len = 2;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      len = 3;
      cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      len = 4;
      cp = b & 0x07;
    } else {
      return false;  // continuation byte, overlong lead (0xc0/0xc1) or beyond U+10FFFF
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const uint8_t c = p[i + k];
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
      return false;  // overlong, surrogate or out of range
    }
    i += len;
  }
  return true;
}

class Cursor {
 public:
  Cursor(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}

  const uint8_t* position() const { return p_; }
  const uint8_t* end() const { return end_; }
  bool AtEnd() const { return p_ == end_; }
  size_t Remaining() const { return static_cast<size_t>(end_ - p_); }

  // Consumes a nil; false (consuming nothing) when the next value is something else.
  bool TryReadNil() {
    if (p_ == end_ || *p_ != 0xc0) return false;
    ++p_;
    return true;
  }

  // Whether the next value is an array (without consuming it); false at the end.
  bool NextIsArray() const {
    if (p_ == end_) return false;
    const uint8_t b = *p_;
    return (b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd;
  }
  bool NextIsMap() const {
    if (p_ == end_) return false;
    const uint8_t b = *p_;
    return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf;
  }

  // Reads one value's header; strings and bins include their bytes, containers only their length
  // (their elements follow).
  Value Read() {
    Value v{};
    const uint8_t b = Byte();
    if (b <= 0x7f) return Int(v, b);
    if (b >= 0xe0) return NegativeInt(v, static_cast<int8_t>(b));
    if (b <= 0x8f) return Container(v, Type::kMap, b & 0x0f);
    if (b <= 0x9f) return Container(v, Type::kArray, b & 0x0f);
    if (b <= 0xbf) return Str(v, b & 0x1f);
    switch (b) {
      case 0xc0:
        v.type = Type::kNil;
        return v;
      case 0xc2:
      case 0xc3:
        v.type = Type::kBool;
        v.boolean = b == 0xc3;
        return v;
      case 0xc4: return Bin(v, Big<uint8_t>());
      case 0xc5: return Bin(v, Big<uint16_t>());
      case 0xc6: return Bin(v, Big<uint32_t>());
      case 0xca: {
        const uint32_t raw = Big<uint32_t>();
        float f;
        std::memcpy(&f, &raw, 4);
        v.type = Type::kFloat;
        v.number = f;
        return v;
      }
      case 0xcb: {
        const uint64_t raw = Big<uint64_t>();
        v.type = Type::kFloat;
        std::memcpy(&v.number, &raw, 8);
        return v;
      }
      case 0xcc: return Int(v, Big<uint8_t>());
      case 0xcd: return Int(v, Big<uint16_t>());
      case 0xce: return Int(v, Big<uint32_t>());
      case 0xcf:
        v.wide = true;
        return Int(v, Big<uint64_t>());
      case 0xd0: return NegativeInt(v, static_cast<int8_t>(Big<uint8_t>()));
      case 0xd1: return NegativeInt(v, static_cast<int16_t>(Big<uint16_t>()));
      case 0xd2: return NegativeInt(v, static_cast<int32_t>(Big<uint32_t>()));
      case 0xd3:
        v.wide = true;
        return NegativeInt(v, static_cast<int64_t>(Big<uint64_t>()));
      case 0xd9: return Str(v, Big<uint8_t>());
      case 0xda: return Str(v, Big<uint16_t>());
      case 0xdb: return Str(v, Big<uint32_t>());
      case 0xdc: return Container(v, Type::kArray, Big<uint16_t>());
      case 0xdd: return Container(v, Type::kArray, Big<uint32_t>());
      case 0xde: return Container(v, Type::kMap, Big<uint16_t>());
      case 0xdf: return Container(v, Type::kMap, Big<uint32_t>());
      case 0xc1: Malformed("msgpack: reserved byte 0xc1");
      default: Malformed("msgpack: extension types are not accepted");  // 0xc7-0xc9, 0xd4-0xd8
    }
  }

  // Reads a map key: a string (returned) or a scalar that can never name a field (msgpackr turns
  // nil, booleans and numbers into property names; other keys are refused).
  bool ReadKey(const uint8_t** name, uint32_t* length) {
    const Value k = Read();
    if (k.type == Type::kStr) {
      *name = k.data;
      *length = k.length;
      return true;
    }
    if (k.type == Type::kArray || k.type == Type::kMap || k.type == Type::kBin) Malformed("msgpack: map key is not a scalar");
    return false;
  }

  // Skips the elements of a container whose header `v` was just read at nesting `depth`.
  void SkipContents(const Value& v, int depth) {
    if (v.type != Type::kArray && v.type != Type::kMap) return;
    if (v.length == 0) return;
    // Levels below `depth`: elements left and whether the level is a map (its even-numbered
    // elements, counted from the end, are keys).
    uint64_t remaining[kMaxDepth + 1];
    bool isMap[kMaxDepth + 1];
    int top = 0;
    if (depth + 1 > kMaxDepth) Malformed("msgpack: nested deeper than 32 levels");
    remaining[0] = v.type == Type::kMap ? 2ull * v.length : v.length;
    isMap[0] = v.type == Type::kMap;
    for (;;) {
      while (remaining[top] == 0) {
        if (top == 0) return;
        --top;
      }
      const bool key = isMap[top] && remaining[top] % 2 == 0;
      --remaining[top];
      const Value e = Read();
      const bool container = e.type == Type::kArray || e.type == Type::kMap;
      if (key && (container || e.type == Type::kBin)) Malformed("msgpack: map key is not a scalar");
      if (!container || e.length == 0) continue;
      if (depth + top + 2 > kMaxDepth) Malformed("msgpack: nested deeper than 32 levels");
      ++top;
      remaining[top] = e.type == Type::kMap ? 2ull * e.length : e.length;
      isMap[top] = e.type == Type::kMap;
    }
  }

  // Skips one whole value at nesting `depth`.
  void Skip(int depth) { SkipContents(Read(), depth); }

  // Engine hashes: the bits of a uint64 / int64 (vLLM's int hashes; an int64 is its two's
  // complement) or a non-negative fixint. false (consuming nothing) for anything else.
  bool TryReadPlainUint64(uint64_t* out) {
    if (Remaining() >= 9 && (*p_ == 0xcf || *p_ == 0xd3)) {
      uint64_t be;
      std::memcpy(&be, p_ + 1, 8);
      *out = __builtin_bswap64(be);
      p_ += 9;
      return true;
    }
    if (p_ != end_ && *p_ <= 0x7f) {
      *out = *p_++;
      return true;
    }
    return false;
  }

  // The bulk of a payload (token ids): reads up to `n` consecutive non-negative integers of at most
  // 32 bits in their plain encodings (fixint, uint8/16/32) into `out`, and stops before anything
  // else or within 5 bytes of the end. Returns how many it read; Read() takes over from there.
  size_t ReadSmallUints(uint32_t* out, size_t n) {
    const uint8_t* p = p_;
    const uint8_t* const stop = Remaining() >= 5 ? end_ - 4 : p;  // each read may look 5 bytes ahead
    size_t i = 0;
    for (; i < n && p < stop; ++i) {
      const uint8_t b = *p;
      if (b <= 0x7f) {
        out[i] = b;
        p += 1;
        continue;
      }
      const unsigned width = b - 0xcc;  // 0xcc, 0xcd, 0xce: 1, 2, 4 bytes, without a branch on which
      if (width > 2) break;
      uint32_t be;
      std::memcpy(&be, p + 1, 4);
      const unsigned bytes = 1u << width;
      out[i] = static_cast<uint32_t>(__builtin_bswap32(be) >> (32 - 8 * bytes));
      p += 1 + bytes;
    }
    p_ = p;
    return i;
  }

 private:
  uint8_t Byte() {
    if (p_ == end_) Malformed("msgpack: truncated");
    return *p_++;
  }

  template <typename T>
  T Big() {
    if (Remaining() < sizeof(T)) Malformed("msgpack: truncated");
    T out;
    std::memcpy(&out, p_, sizeof(T));
    p_ += sizeof(T);
    if constexpr (sizeof(T) == 2) return __builtin_bswap16(out);
    if constexpr (sizeof(T) == 4) return __builtin_bswap32(out);
    if constexpr (sizeof(T) == 8) return __builtin_bswap64(out);
    return out;
  }

  static Value Int(Value v, uint64_t x) {
    v.type = Type::kInt;
    v.bits = x;
    return v;
  }
  static Value NegativeInt(Value v, int64_t x) {
    v.type = Type::kInt;
    v.negative = x < 0;
    v.bits = static_cast<uint64_t>(x);
    return v;
  }
  Value Container(Value v, Type type, uint32_t n) {
    const uint64_t minBytes = type == Type::kMap ? 2ull * n : n;
    if (minBytes > Remaining()) Malformed(type == Type::kMap ? "msgpack: map claims more entries than the payload holds"
                                                             : "msgpack: array claims more elements than the payload holds");
    v.type = type;
    v.length = n;
    return v;
  }
  Value Bytes(Value v, Type type, uint32_t n) {
    if (n > Remaining()) Malformed("msgpack: truncated");
    v.type = type;
    v.data = p_;
    v.length = n;
    p_ += n;
    return v;
  }
  Value Str(Value v, uint32_t n) {
    v = Bytes(v, Type::kStr, n);
    if (!ValidUtf8(v.data, v.length)) Malformed("msgpack: string is not valid UTF-8");
    return v;
  }
  Value Bin(Value v, uint32_t n) { return Bytes(v, Type::kBin, n); }

  const uint8_t* p_;
  const uint8_t* end_;
};

inline bool Equals(const uint8_t* data, uint32_t length, const char* literal) {
  const size_t n = std::strlen(literal);
  return length == n && std::memcmp(data, literal, n) == 0;
}

}  // namespace msgpack
}  // namespace engine
}  // namespace kvrelay
