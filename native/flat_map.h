// Open-addressing u64 -> V map (linear probing, backward-shift deletion, no tombstones).
// The pool state does millions of lookups per second on random 64-bit keys; std::unordered_map's
// per-node allocation and pointer chasing cost several times more.
// Lean by design (#8: the producer's bytes per tracked block): slots are packed to 4-byte alignment
// (a u32 value makes a 12-byte slot), the capacity is any slot count rather than a power of two (the
// home slot is a multiply-high range reduction), and the load stays in [kGrowToLoad, kMaxLoad]
// instead of the [1/4, 1/2] of power-of-two doubling.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "zeroed_buffer.h"

namespace kvrelay {

template <typename V>
class U64Map {
 public:
  U64Map() { Rehash(kMinCapacity); }

  size_t size() const { return size_ + (hasZero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // Bytes of the slot array (the map's heap footprint apart from the object itself).
  size_t MemoryBytes() const { return slots_.size() * sizeof(Slot); }

  V* Find(uint64_t key) {
    if (key == 0) return hasZero_ ? &zeroValue_ : nullptr;
    for (size_t i = Home(key);; i = Next(i)) {
      Slot& s = slots_[i];
      const uint64_t k = s.key();
      if (k == key) return &s.value;
      if (k == 0) return nullptr;
    }
  }
  const V* Find(uint64_t key) const { return const_cast<U64Map*>(this)->Find(key); }

  // Makes room for `extra` more keys, so that the next `extra` Emplace calls never rehash
  // (pointers returned by Find and Emplace stay valid across them: an insertion moves no entry).
  void Reserve(size_t extra) {
    if (!Fits(size_ + extra)) Rehash(CapacityFor(size_ + extra));
  }

  // Inserts key -> value if absent. Returns the value slot and whether it was inserted.
  std::pair<V*, bool> Emplace(uint64_t key, const V& value) {
    if (key == 0) {
      if (hasZero_) return {&zeroValue_, false};
      hasZero_ = true;
      zeroValue_ = value;
      return {&zeroValue_, true};
    }
    for (size_t i = Home(key);; i = Next(i)) {
      Slot& s = slots_[i];
      const uint64_t k = s.key();
      if (k == key) return {&s.value, false};
      if (k == 0) {
        if (!Fits(size_ + 1)) {
          Rehash(CapacityFor(size_ + 1));
          return Emplace(key, value);
        }
        s.SetKey(key);
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
    // Backward shift: pull later entries of the probe run into the hole when their home allows it,
    // i.e. when an entry sits at least as far past its home as past the hole. This scan is most of an
    // erase at the top of the load band (the run after a slot is ~15 entries long there), so it runs
    // without wrap tests until the scan itself wraps: with hole < j < capacity, j - home in unsigned
    // arithmetic is the entry's displacement, or huge for an entry whose own probe wrapped (home > j),
    // which may always move.
    size_t hole = i;
    size_t j = i + 1;
    for (; j < capacity_ && slots_[j].key() != 0; ++j) {
      if (j - Home(slots_[j].key()) >= j - hole) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    if (j == capacity_) {
      for (j = 0; slots_[j].key() != 0; ++j) {
        const size_t home = Home(slots_[j].key());
        if (Distance(home, j) >= Distance(hole, j)) {
          slots_[hole] = slots_[j];
          hole = j;
        }
      }
    }
    slots_[hole].SetKey(0);
    --size_;
  }

  template <typename F>
  void ForEach(F f) const {
    if (hasZero_) f(uint64_t{0}, zeroValue_);
    for (size_t i = 0; i < slots_.size(); ++i) {
      const uint64_t k = slots_[i].key();
      if (k != 0) f(k, slots_[i].value);
    }
  }

  // The line of the home slot and the next one: a probe run, and the backward shift of an erase,
  // read past the home slot, and a run crossing into an unfetched line costs a full miss.
  // Into L2 (prefetcht2): callers issue hundreds at once, and L1-targeted prefetches stall on the few
  // L1 miss buffers while L2-targeted ones keep ~2x more misses in flight (measured).
  // always_inline: GCC marks a prefetch-only function const and drops the call as dead.
  __attribute__((always_inline)) void Prefetch(uint64_t key) const {
    const char* home = reinterpret_cast<const char*>(&slots_[Home(key)]);
    __builtin_prefetch(home, 0, 1);
    __builtin_prefetch(home + 64, 0, 1);  // past the end lands in the buffer's tail padding (see Rehash)
  }

 private:
  // All-zero bytes = empty slot (ZeroedBuffer); key 0 itself lives in zeroValue_. The key is two u32
  // halves so that a 4-byte value packs into 12 bytes.
  struct Slot {
    uint32_t keyHalves[2];
    V value;
    uint64_t key() const {
      uint64_t k;
      std::memcpy(&k, keyHalves, sizeof(k));
      return k;
    }
    void SetKey(uint64_t k) { std::memcpy(keyHalves, &k, sizeof(k)); }
  };

  // Load band: grow when an insertion would pass kMaxLoad, to kGrowToLoad (x1.25). Linear probing
  // stays short at 0.8 (~3 slots per hit, ~13 per miss: two or three lines of 12-16-byte slots).
  static constexpr size_t kMaxLoadPer1024 = 832;   // 0.8125
  static constexpr size_t kGrowToLoadPer1024 = 666;  // 0.65
  static constexpr size_t kMinCapacity = 16;

  static size_t CapacityFor(size_t entries) {
    const size_t capacity = entries * 1024 / kGrowToLoadPer1024 + 1;
    return capacity < kMinCapacity ? kMinCapacity : capacity;
  }
  bool Fits(size_t entries) const { return entries * 1024 <= capacity_ * kMaxLoadPer1024; }

  // Fibonacci hashing, then a multiply-high range reduction to [0, capacity): two multiplies and no
  // power-of-two capacity. Spreads sequential and strided ids as well as random hashes.
  size_t Home(uint64_t key) const {
    const unsigned __int128 mixed = key * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>((mixed * capacity_) >> 64);
  }
  size_t Next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }
  // Probe steps from slot `from` forward to slot `to`.
  size_t Distance(size_t from, size_t to) const { return to >= from ? to - from : to + capacity_ - from; }

  void Rehash(size_t capacity) {
    // One line of tail padding: Prefetch reads up to 64 bytes past the home slot.
    ZeroedBuffer<Slot> old(capacity + (64 + sizeof(Slot) - 1) / sizeof(Slot));
    std::swap(old, slots_);
    const size_t oldCapacity = capacity_;
    capacity_ = capacity;
    size_ = 0;
    for (size_t k = 0; k < oldCapacity; ++k) {
      const Slot& s = old[k];
      const uint64_t key = s.key();
      if (key == 0) continue;
      size_t i = Home(key);
      while (slots_[i].key() != 0) i = Next(i);
      slots_[i] = s;
      ++size_;
    }
  }

  ZeroedBuffer<Slot> slots_;
  size_t capacity_ = 0;  // slots in use (slots_ has tail padding after them)
  size_t size_ = 0;
  bool hasZero_ = false;
  V zeroValue_{};
};

}  // namespace kvrelay
