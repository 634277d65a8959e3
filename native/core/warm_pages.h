// Huge pages a drained table gave back (ZeroedBuffer::ReleaseFront), kept mapped for a few seconds so
// that the next successor's population can move them into its mapping (mremap) and zero them, instead
// of faulting fresh pages in. On the project's VM the guest reports freed huge pages to the host within
// ~2 s (free page reporting) and the host backs them again at first touch: a fresh page cost
// 1.2-2.2 ms per MiB there, a kept one moved and zeroed ~0.1 ms. A pool that grows does so table after
// table, each successor ~1.66x the table drained before it, so most of a successor can come from here.
// The pages are the process's until they expire: they are not part of any table's held bytes, and the
// memory at rest returns to the tables' own once growth stops for kHold.
//
// Not thread-safe: pages::Populator owns one and guards it with its mutex; only its thread unmaps or
// moves a piece, so a piece is never unmapped under a touch of the same thread's population.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace kvrelay {
namespace pages {

// A transparent huge page (x86-64): the tables' alignment, and what a drain gives back at a time.
constexpr size_t kHugePage = size_t{2} << 20;
// A base page: what a mapping's length rounds to, and the step that faults a region in page by page.
constexpr size_t kSmallPage = size_t{4} << 10;

class WarmPages {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kPiece = kHugePage;  // mremap moves it whole
  // Past the growth interval of a pool filling at ~1 M blocks/s (a table of 4 M entries grows every
  // ~1.5 s), short enough that a pool at rest is back to its tables' memory soon after.
  static constexpr std::chrono::milliseconds kDefaultHold{3000};
  // Bounds what a burst of drains can keep: the oldest pieces past it go first.
  static constexpr size_t kMaxBytes = size_t{1} << 30;

  // Takes [base, base + length), whole huge pages at a huge-page boundary, as pieces kept at `now`.
  void Keep(char* base, size_t length, Clock::time_point now) {
    for (size_t at = 0; at + kPiece <= length; at += kPiece) pieces_.push_back(Piece{base + at, now});
  }
  // The oldest piece still kept, or null: the newer ones may still serve a later successor.
  char* Take() {
    if (pieces_.empty()) return nullptr;
    char* piece = pieces_.front().base;
    pieces_.pop_front();
    return piece;
  }
  // Moves the pieces to unmap now into `out`: kept for `hold` or more, and the oldest past kMaxBytes.
  void TakeExpired(Clock::time_point now, std::chrono::milliseconds hold, std::vector<char*>* out) {
    while (!pieces_.empty() && (now - pieces_.front().keptAt >= hold || Bytes() > kMaxBytes)) {
      out->push_back(pieces_.front().base);
      pieces_.pop_front();
    }
  }
  bool empty() const { return pieces_.empty(); }
  size_t Bytes() const { return pieces_.size() * kPiece; }
  // When the oldest piece expires (empty(): none).
  Clock::time_point NextExpiry(std::chrono::milliseconds hold) const { return pieces_.front().keptAt + hold; }

 private:
  struct Piece {
    char* base;
    Clock::time_point keptAt;
  };
  std::deque<Piece> pieces_;
};

}  // namespace pages
}  // namespace kvrelay
