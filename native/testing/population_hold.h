// Holds pages::Populator's thread for the scope (its Hold test hook), released on every way out, a
// throw included: a check that failed while holding it must not leave later ones without population.
#pragma once
#include "page_populator.h"

namespace kvrelay {
namespace testing {

class PopulationHold {
 public:
  explicit PopulationHold(bool held = true) { pages::Populator::Instance().Hold(held); }
  ~PopulationHold() { pages::Populator::Instance().Hold(false); }
  PopulationHold(const PopulationHold&) = delete;
  PopulationHold& operator=(const PopulationHold&) = delete;
};

}  // namespace testing
}  // namespace kvrelay
