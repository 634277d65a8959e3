#include "bindings/relay/pool_releaser.h"

#include <utility>

#include "core/background_thread.h"
#include "core/page_populator.h"

namespace kvrelay {

PoolReleaser& PoolReleaser::Instance() {
  static PoolReleaser* instance = new PoolReleaser();  // never destroyed: its thread outlives statics
  return *instance;
}

bool PoolReleaser::Queue(std::unique_ptr<pool::PoolFilterState>& state, Freed freed, void* arg) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!background::StartOnce(started_, [this] { Run(); })) return false;
  jobs_.push_back(Job{std::move(state), freed, arg});
  ready_.notify_one();
  return true;
}

void PoolReleaser::Unmap(std::unique_ptr<pool::PoolFilterState> state) {
  const pages::UnmapOnCaller here;
  state.reset();
}

void PoolReleaser::Hold(bool held) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_ = held;
  ready_.notify_one();
}

void PoolReleaser::Run() {
  background::LowerPriority();
  background::NoWakeupPreemption();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ready_.wait(lock, [this] { return !held_ && !jobs_.empty(); });
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    Unmap(std::move(job.state));
    job.freed(job.arg);
    lock.lock();
  }
}

}  // namespace kvrelay
