// Open-addressing u64 -> V map (linear probing, backward-shift deletion, no tombstones).
// The pool state does millions of lookups per second on random 64-bit keys; std::unordered_map's
// per-node allocation and pointer chasing cost several times more.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "zeroed_buffer.h"

namespace kvrelay {

template <typename V>
class U64Map {
 public:
  U64Map() { Rehash(16); }

  size_t size() const { return size_ + (hasZero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // Bytes of the slot array (the map's heap footprint apart from the object itself).
  size_t MemoryBytes() const { return slots_.size() * sizeof(Slot); }

  V* Find(uint64_t key) {
    if (key == 0) return hasZero_ ? &zeroValue_ : nullptr;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == 0) return nullptr;
    }
  }
  const V* Find(uint64_t key) const { return const_cast<U64Map*>(this)->Find(key); }

  // Makes room for `extra` more keys, so that the next `extra` Emplace calls never rehash
  // (pointers returned by Find stay valid across them).
  void Reserve(size_t extra) {
    size_t need = size_ + extra;
    size_t capacity = slots_.size();
    while (need * 2 > capacity) capacity *= 2;
    if (capacity != slots_.size()) Rehash(capacity);
  }

  // Inserts key -> value if absent. Returns the value slot and whether it was inserted.
  std::pair<V*, bool> Emplace(uint64_t key, const V& value) {
    if (key == 0) {
      if (hasZero_) return {&zeroValue_, false};
      hasZero_ = true;
      zeroValue_ = value;
      return {&zeroValue_, true};
    }
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return {&s.value, false};
      if (s.key == 0) {
        s.key = key;
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
    }
  }

  bool Erase(uint64_t key) {
    V* value = Find(key);
    if (value == nullptr) return false;
    EraseFound(value);
    return true;
  }

  // Erases the entry whose value Find just returned (saves the second probe).
  void EraseFound(const V* value) {
    if (value == &zeroValue_) {
      hasZero_ = false;
      return;
    }
    const Slot* slot = reinterpret_cast<const Slot*>(reinterpret_cast<const char*>(value) - offsetof(Slot, value));
    const size_t i = static_cast<size_t>(slot - slots_.data());
    // Backward shift: pull later entries of the probe run into the hole when their home allows it.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const size_t home = Home(slots_[j].key);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key = 0;
    --size_;
  }

  template <typename F>
  void ForEach(F f) const {
    if (hasZero_) f(uint64_t{0}, zeroValue_);
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].key != 0) f(slots_[i].key, slots_[i].value);
    }
  }

  // The lines of the home slot and of the two after it: a probe run, and the backward shift of an
  // erase, read past the home slot, and a run crossing into an unfetched line costs a full miss.
  // Into L2 (prefetcht2): callers issue hundreds at once, and L1-targeted prefetches stall on the few
  // L1 miss buffers while L2-targeted ones keep ~2x more misses in flight (measured).
  // always_inline: GCC marks a prefetch-only function const and drops the call as dead.
  __attribute__((always_inline)) void Prefetch(uint64_t key) const {
    const size_t home = Home(key);
    __builtin_prefetch(&slots_[home], 0, 1);
    __builtin_prefetch(&slots_[(home + 2) & mask_], 0, 1);
  }

 private:
  // All-zero bytes = empty slot (ZeroedBuffer); key 0 itself lives in zeroValue_.
  struct Slot {
    uint64_t key;
    V value;
  };

  // Fibonacci hashing: one multiply, the high bits pick the slot. Spreads sequential and strided ids
  // as well as random hashes, and is on the critical path of every probe and backward shift (a
  // two-multiply finalizer here cost ~10 % of pool ingest).
  size_t Home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_); }

  void Rehash(size_t capacity) {
    ZeroedBuffer<Slot> old(capacity);
    std::swap(old, slots_);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = 0;
    for (size_t k = 0; k < old.size(); ++k) {
      const Slot& s = old[k];
      if (s.key == 0) continue;
      size_t i = Home(s.key);
      while (slots_[i].key != 0) i = (i + 1) & mask_;
      slots_[i] = s;
      ++size_;
    }
  }

  ZeroedBuffer<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 64;  // 64 - log2(capacity)
  size_t size_ = 0;
  bool hasZero_ = false;
  V zeroValue_{};
};

}  // namespace kvrelay
