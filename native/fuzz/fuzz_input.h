// Reading a fuzzer's byte string as the fields a target needs. Short input yields zeros, never reads
// past the end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvrelay {
namespace fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  template <typename T>
  T Take() {
    T v{};
    const size_t n = Left() < sizeof(T) ? Left() : sizeof(T);
    std::memcpy(&v, p_, n);
    p_ += n;
    return v;
  }
  size_t Left() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* Here() const { return p_; }
  void Skip(size_t n) { p_ += n < Left() ? n : Left(); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Aborts the fuzzer with a message (a failed invariant is a finding, like a sanitizer report).
#define FUZZ_CHECK(cond)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      __builtin_printf("FUZZ_CHECK failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                           \
    }                                                                             \
  } while (0)

}  // namespace fuzz
}  // namespace kvrelay
