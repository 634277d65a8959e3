// Scopes over pages::Populator's test hooks, undone on every way out, a throw included: a check that
// failed inside one must not leave later ones without population, or with pages kept for them.
#pragma once
#include <chrono>

#include "core/page_populator.h"

namespace kvrelay {
namespace testing {

class PopulationHold {
 public:
  explicit PopulationHold(bool held = true) { pages::Populator::Instance().Hold(held); }
  ~PopulationHold() { pages::Populator::Instance().Hold(false); }
  PopulationHold(const PopulationHold&) = delete;
  PopulationHold& operator=(const PopulationHold&) = delete;
};

// Starts with no page kept in WarmPages (those earlier checks left are unmapped) and keeps the pages
// given during the scope for `hold`; ends with none kept and the default hold. Wait() false: kept
// pages were still there after 30 s.
class WarmPagesScope {
 public:
  explicit WarmPagesScope(std::chrono::milliseconds hold) : ready_(Drain()) { pages::Populator::Instance().SetWarmHold(hold); }
  ~WarmPagesScope() {
    Drain();
    pages::Populator::Instance().SetWarmHold(pages::WarmPages::kDefaultHold);
  }
  WarmPagesScope(const WarmPagesScope&) = delete;
  WarmPagesScope& operator=(const WarmPagesScope&) = delete;
  bool ready() const { return ready_; }

 private:
  static bool Drain() {
    pages::Populator& populator = pages::Populator::Instance();
    populator.SetWarmHold(std::chrono::milliseconds(0));
    return populator.WaitWarmEmpty(std::chrono::seconds(30));
  }
  bool ready_;
};

}  // namespace testing
}  // namespace kvrelay
