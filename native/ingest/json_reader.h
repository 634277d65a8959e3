// A bounded, zero-copy JSON reader for Dynamo's serde_json payloads (a JetStream RouterEvent,
// dynamo-event-plane-and-discovery.md §5.3). Pure C++, no N-API, no allocation. Hand-written for the
// reason engine_msgpack.h gives, and because a u64 hash must be read exactly (JavaScript's
// JSON.parse rounds integers above 2^53).
//
// Bounds: every read is checked against the end; nesting is bounded (kMaxJsonDepth) and skipping is
// iterative. Strings are returned raw (between the quotes, escapes not decoded): serde_json escapes
// only control characters, quotes and backslashes, none of which occur in a field name or an enum
// value it writes, so a name compares raw; an escaped string is still checked for well-formed escapes
// and UTF-8. Any violation throws DecodeFailure{kMalformed}.
#pragma once
#include <cstdint>
#include <cstring>

#include "ingest/engine_msgpack.h"

namespace kvrelay {
namespace engine {
namespace json {

constexpr int kMaxJsonDepth = 32;

class Reader {
 public:
  Reader(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}

  bool AtEnd() {
    Space();
    return p_ == end_;
  }

  char Peek() {
    Space();
    if (p_ == end_) Malformed("json: truncated");
    return static_cast<char>(*p_);
  }

  bool TryNull() {
    if (Peek() != 'n') return false;
    Literal("null");
    return true;
  }

  // An object: calls entry(name, length) for each member, positioned at its value, which entry must
  // consume (read or Skip()).
  template <typename F>
  void Object(F entry) {
    Expect('{');
    if (Peek() == '}') {
      ++p_;
      return;
    }
    for (;;) {
      const uint8_t* name;
      uint32_t length;
      String(&name, &length);
      Expect(':');
      entry(name, length);
      const char c = Next();
      if (c == '}') return;
      if (c != ',') Malformed("json: expected ',' or '}' in an object");
    }
  }

  // An array: calls element() for each element, positioned at it.
  template <typename F>
  void Array(F element) {
    Expect('[');
    if (Peek() == ']') {
      ++p_;
      return;
    }
    for (;;) {
      element();
      const char c = Next();
      if (c == ']') return;
      if (c != ',') Malformed("json: expected ',' or ']' in an array");
    }
  }

  // A non-negative integer that fits in 64 bits, exactly (no sign, fraction or exponent).
  uint64_t U64(const char* what) {
    Space();
    if (p_ == end_ || *p_ < '0' || *p_ > '9') Malformed(std::string(what) + ": not a u64");
    uint64_t v = 0;
    const uint8_t* start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      const uint64_t digit = *p_ - '0';
      if (v > (UINT64_MAX - digit) / 10) Malformed(std::string(what) + ": above 2^64 - 1");
      v = v * 10 + digit;
      ++p_;
    }
    if (*start == '0' && p_ - start > 1) Malformed(std::string(what) + ": leading zero");
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) Malformed(std::string(what) + ": not an integer");
    return v;
  }

  // A string, raw (see the file comment).
  void String(const uint8_t** data, uint32_t* length) {
    Expect('"');
    const uint8_t* start = p_;
    while (p_ != end_ && *p_ != '"') {
      if (*p_ < 0x20) Malformed("json: control character in a string");
      if (*p_ == '\\') {
        if (end_ - p_ < 2) Malformed("json: truncated");
        const uint8_t e = p_[1];
        if (e == 'u') {
          if (end_ - p_ < 6) Malformed("json: truncated");
          for (int k = 2; k < 6; ++k) {
            if (!IsHex(p_[k])) Malformed("json: bad \\u escape");
          }
          p_ += 6;
          continue;
        }
        if (std::strchr("\"\\/bfnrt", e) == nullptr || e == 0) Malformed("json: bad escape");
        p_ += 2;
        continue;
      }
      ++p_;
    }
    if (p_ == end_) Malformed("json: unterminated string");
    const size_t n = static_cast<size_t>(p_ - start);
    ++p_;
    if (n > UINT32_MAX) Malformed("json: string too long");
    if (!msgpack::ValidUtf8(start, n)) Malformed("json: string is not valid UTF-8");
    *data = start;
    *length = static_cast<uint32_t>(n);
  }

  // Skips one whole value (iteratively; containers at most kMaxJsonDepth deep).
  void Skip() {
    bool isObject[kMaxJsonDepth];  // the open containers, innermost last
    int depth = 0;
    for (;;) {
      const char c = Peek();
      if (c == '{' || c == '[') {
        ++p_;
        if (Peek() == (c == '{' ? '}' : ']')) {
          ++p_;
        } else {
          if (depth == kMaxJsonDepth) Malformed("json: nested deeper than 32 levels");
          isObject[depth++] = c == '{';
          if (c == '{') SkipKey();
          continue;
        }
      } else {
        Scalar();
      }
      // After a value: the next element of its container, or the container's end.
      for (;;) {
        if (depth == 0) return;
        const char n = Next();
        if (n == ',') {
          if (isObject[depth - 1]) SkipKey();
          break;
        }
        if (n != (isObject[depth - 1] ? '}' : ']')) Malformed("json: expected ',' or the container's end");
        --depth;
      }
    }
  }

 private:
  static bool IsHex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  void Space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  char Next() {
    const char c = Peek();
    ++p_;
    return c;
  }

  void Expect(char c) {
    if (Next() != c) Malformed(std::string("json: expected '") + c + "'");
  }

  void Literal(const char* word) {
    Space();
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) Malformed("json: unexpected token");
    p_ += n;
  }

  void Scalar() {
    const char c = Peek();
    if (c == '"') {
      const uint8_t* d;
      uint32_t n;
      String(&d, &n);
    } else if (c == 't') {
      Literal("true");
    } else if (c == 'f') {
      Literal("false");
    } else if (c == 'n') {
      Literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      Number();
    } else {
      Malformed("json: unexpected token");
    }
  }

  void Number() {
    if (*p_ == '-') ++p_;
    const uint8_t* digits = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ == digits) Malformed("json: bad number");
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      const uint8_t* frac = p_;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == frac) Malformed("json: bad number");
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      const uint8_t* exp = p_;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == exp) Malformed("json: bad number");
    }
  }

  void SkipKey() {
    const uint8_t* d;
    uint32_t n;
    String(&d, &n);
    Expect(':');
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace json
}  // namespace engine
}  // namespace kvrelay
