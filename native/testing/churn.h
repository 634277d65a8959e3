// The churn workloads of bench/filter.ts, shared by the bench's native loops (pool_bench.cc) and the
// standalone callgrind driver (bench/native/pool_driver.cc), so instruction counts and wall-clock
// rates describe the same op sequences. Pure C++, no N-API.
#pragma once
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "core/ckf.h"
#include "pool/packed_batch.h"
#include "pool/pool_canonical.h"
#include "pool/pool_filter_state.h"

namespace kvrelay {
namespace testing {

// Engine events: prompts of blocksPerPrompt fresh blocks over 4 workers (no parents), removed oldest
// first, last block first like engines.
class EngineChurn {
 public:
  static constexpr size_t kEventsPerBatch = 1024;

  EngineChurn(uint32_t blocksPerPrompt, double slots, double minLoad, double maxLoad)
      : blocks_(blocksPerPrompt), slots_(slots), minLoad_(minLoad), maxLoad_(maxLoad) {}

  // Fills to the middle of the band (not part of any measurement).
  void Fill(pool::PoolFilterState* state) {
    const double middle = (minLoad_ + maxLoad_) / 2 * slots_;
    while (static_cast<double>(LiveBlocks()) < middle) {
      meta_.clear();
      words_.clear();
      for (size_t e = 0; e < kEventsPerBatch && static_cast<double>(LiveBlocks()) < middle; ++e) AddStore();
      errors_.resize(meta_.size() / pool::kMetaStride);
      state->ApplyBatch(meta_.data(), meta_.size(), words_.data(), errors_.data());
    }
    state->Drain(&drainBuckets_, &drainValues_);
  }
  // The next batch: stores below minLoad, removals above maxLoad, a coin flip between.
  void Next() {
    meta_.clear();
    words_.clear();
    for (size_t e = 0; e < kEventsPerBatch; ++e) {
      const double load = static_cast<double>(LiveBlocks()) / slots_;
      const bool store = load < minLoad_ || (load < maxLoad_ && (ckf::SplitmixNext(&rng_) & 1) != 0);
      if (store) {
        AddStore();
      } else {
        AddRemoveOldest();
      }
    }
    errors_.resize(kEventsPerBatch);
  }
  // What the bench times.
  void ApplyAndDrain(pool::PoolFilterState* state) {
    state->ApplyBatch(meta_.data(), meta_.size(), words_.data(), errors_.data());
    state->Drain(&drainBuckets_, &drainValues_);
  }
  uint64_t BatchOps() const { return uint64_t{kEventsPerBatch} * blocks_; }

 private:
  struct Prompt {
    uint64_t worker;
    std::vector<uint64_t> extIds;
  };
  uint64_t LiveBlocks() const { return live_.size() * blocks_; }
  void AddStore() {
    Prompt p{1 + (ckf::SplitmixNext(&rng_) & 3), {}};
    meta_.insert(meta_.end(), {pool::kStored, 0, 0, 0, blocks_});
    words_.push_back(p.worker);
    for (uint32_t i = 0; i < blocks_; ++i) p.extIds.push_back(ckf::SplitmixNext(&rng_));
    words_.insert(words_.end(), p.extIds.begin(), p.extIds.end());
    for (uint32_t i = 0; i < blocks_; ++i) words_.push_back(ckf::SplitmixNext(&rng_));
    live_.push_back(std::move(p));
  }
  void AddRemoveOldest() {
    Prompt& p = live_.front();
    meta_.insert(meta_.end(), {pool::kRemoved, 0, 0, 0, blocks_});
    words_.push_back(p.worker);
    words_.insert(words_.end(), p.extIds.rbegin(), p.extIds.rend());
    live_.pop_front();
  }

  uint32_t blocks_;
  double slots_, minLoad_, maxLoad_;
  uint64_t rng_ = 42;
  std::deque<Prompt> live_;
  std::vector<uint32_t> meta_;
  std::vector<uint64_t> words_;
  std::vector<uint8_t> errors_;
  std::vector<uint32_t> drainBuckets_;
  std::vector<uint64_t> drainValues_;
};

// Raw canonical ops with owner counting: fresh hashes in, oldest out.
class CanonicalChurn {
 public:
  static constexpr size_t kOpsPerBatch = 16384;

  CanonicalChurn(double slots, double minLoad, double maxLoad)
      : slots_(slots), minLoad_(minLoad), maxLoad_(maxLoad), outcomes_(kOpsPerBatch) {}

  void Fill(pool::PoolFilterState* state) {
    while (static_cast<double>(live_.size()) < (minLoad_ + maxLoad_) / 2 * slots_) {
      ops_.assign(kOpsPerBatch, pool::CanonicalOp::kInsert);
      hashes_.clear();
      for (size_t i = 0; i < kOpsPerBatch; ++i) {
        hashes_.push_back(ckf::SplitmixNext(&rng_));
        live_.push_back(hashes_.back());
      }
      state->ApplyCanonicalBatch(ops_.data(), hashes_.data(), kOpsPerBatch, outcomes_.data());
    }
    state->Drain(&drainBuckets_, &drainValues_);
  }
  void Next() {
    ops_.clear();
    hashes_.clear();
    for (size_t i = 0; i < kOpsPerBatch; ++i) {
      const double load = static_cast<double>(live_.size()) / slots_;
      const bool insert = load < minLoad_ || (load < maxLoad_ && (ckf::SplitmixNext(&rng_) & 1) != 0);
      if (insert) {
        ops_.push_back(pool::CanonicalOp::kInsert);
        hashes_.push_back(ckf::SplitmixNext(&rng_));
        live_.push_back(hashes_.back());
      } else {
        ops_.push_back(pool::CanonicalOp::kRemove);
        hashes_.push_back(live_.front());
        live_.pop_front();
      }
    }
  }
  void ApplyAndDrain(pool::PoolFilterState* state) {
    state->ApplyCanonicalBatch(ops_.data(), hashes_.data(), kOpsPerBatch, outcomes_.data());
    state->Drain(&drainBuckets_, &drainValues_);
  }
  uint64_t BatchOps() const { return kOpsPerBatch; }
  const std::vector<pool::RawOutcome>& outcomes() const { return outcomes_; }

 private:
  double slots_, minLoad_, maxLoad_;
  uint64_t rng_ = 42;
  std::deque<uint64_t> live_;
  std::vector<pool::CanonicalOp> ops_;
  std::vector<uint64_t> hashes_;
  std::vector<pool::RawOutcome> outcomes_;
  std::vector<uint32_t> drainBuckets_;
  std::vector<uint64_t> drainValues_;
};

}  // namespace testing
}  // namespace kvrelay
