// pages::Populator (test/native/pages.test.ts, bench/pages.ts): its pause around the caller's own
// address-space changes, what population leaves in a buffer, and how long another thread's mmap and
// munmap wait while it runs. Test/bench addon only.
#include <napi.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "bindings/napi_args.h"
#include "core/page_populator.h"
#include "testing/modules.h"
#include "testing/population_hold.h"
#include "testing/resident.h"
#include "core/zeroed_buffer.h"

namespace kvrelay {
namespace testing {
namespace {

constexpr std::chrono::seconds kPopulationTimeout{30};
constexpr size_t kSmallPageWords = 4096 / sizeof(uint64_t);

void WaitPopulated(Napi::Env env) {
  if (!pages::Populator::Instance().WaitIdle(kPopulationTimeout)) throw Napi::Error::New(env, "population did not end within 30 s");
}

void RequireReady(Napi::Env env, const WarmPagesScope& scope) {
  if (!scope.ready()) throw Napi::Error::New(env, "kept pages were not unmapped within 30 s");
}

constexpr auto kKeepForTheCheck = std::chrono::minutes(10);
constexpr size_t kHugePageWords = pages::kHugePage / sizeof(uint64_t);
uint64_t Pattern(size_t i) { return 0x9e3779b97f4a7c15ULL ^ i; }

// () -> { whilePaused, afterResume }: whether a buffer asked to populate in the background was
// populated within 300 ms while an AddressSpaceChange was open, and once it closed.
Napi::Value CheckPopulatorPause(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  pages::Populator& populator = pages::Populator::Instance();
  ZeroedBuffer<uint64_t> buffer(size_t{1} << 19);  // 4 MiB: mapped, two huge pages
  bool whilePaused;
  {
    const pages::AddressSpaceChange change;
    buffer.PopulateInBackground();
    // Without the pause the thread takes the job at once and is done in a few ms.
    populator.WaitIdle(std::chrono::milliseconds(300));
    whilePaused = buffer.Populated();
  }
  WaitPopulated(env);
  Napi::Object out = Napi::Object::New(env);
  out.Set("whilePaused", Napi::Boolean::New(env, whilePaused));
  out.Set("afterResume", Napi::Boolean::New(env, buffer.Populated()));
  return out;
}

// () -> { untouchedBytes, residentGrowth, writesKept }: a 32 MiB buffer whose owner wrote a word into
// every small page of its first half before the (held) populating thread got to it. Population must
// fault the untouched half in for writing (the resident set grows by it: a read would only map the
// shared zero page) and leave every word the owner wrote as it was.
Napi::Value CheckPopulatorResult(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  constexpr size_t kWords = size_t{4} << 20;
  const auto written = Pattern;
  const WarmPagesScope noKeptPages(std::chrono::milliseconds(0));  // fresh pages only
  RequireReady(env, noKeptPages);
  ZeroedBuffer<uint64_t> buffer(kWords);
  uint64_t before;
  {
    const PopulationHold hold;
    buffer.PopulateInBackground();
    for (size_t i = 0; i < kWords / 2; i += kSmallPageWords) buffer[i] = written(i);
    before = ResidentBytes();
  }
  WaitPopulated(env);
  const uint64_t after = ResidentBytes();
  const uint64_t growth = after > before ? after - before : 0;  // a shrink elsewhere must not wrap to a pass
  bool kept = true;
  for (size_t i = 0; i < kWords; i += kSmallPageWords) kept = kept && buffer[i] == (i < kWords / 2 ? written(i) : 0);
  Napi::Object out = Napi::Object::New(env);
  out.Set("untouchedBytes", Napi::Number::New(env, static_cast<double>(kWords / 2 * sizeof(uint64_t))));
  out.Set("residentGrowth", Napi::Number::New(env, static_cast<double>(growth)));
  out.Set("writesKept", Napi::Boolean::New(env, kept));
  return out;
}

// () -> { keptBytes, leftBytes, residentGrowth, populatedBytes, zeroed, writable, unmappedAtExpiry }:
// a drained buffer of 16 huge pages and a bit, every small page written, gives its front back; a
// fresh buffer of 8 huge pages is then populated. Its pages must be the kept ones (the resident set
// barely grows), all zeros and writable; the 8 pages left kept must go when their hold ends.
Napi::Value CheckWarmPagesReuse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  pages::Populator& populator = pages::Populator::Instance();
  constexpr size_t kDrainedWords = 16 * kHugePageWords + kSmallPageWords;  // a tail that stays mapped
  constexpr size_t kFreshWords = 8 * kHugePageWords;
  Napi::Object out = Napi::Object::New(env);
  {
    const WarmPagesScope scope(kKeepForTheCheck);
    RequireReady(env, scope);
    ZeroedBuffer<uint64_t> drained(kDrainedWords);
    for (size_t i = 0; i < kDrainedWords; i += kSmallPageWords) drained[i] = Pattern(i);
    drained.ReleaseFront(kDrainedWords);
    out.Set("keptBytes", Napi::Number::New(env, static_cast<double>(populator.WarmBytes())));
    const uint64_t before = ResidentBytes();
    ZeroedBuffer<uint64_t> fresh(kFreshWords);
    fresh.PopulateInBackground();
    WaitPopulated(env);
    fresh.Use();
    const uint64_t after = ResidentBytes();
    out.Set("residentGrowth", Napi::Number::New(env, static_cast<double>(after > before ? after - before : 0)));
    out.Set("populatedBytes", Napi::Number::New(env, static_cast<double>(kFreshWords * sizeof(uint64_t))));
    out.Set("leftBytes", Napi::Number::New(env, static_cast<double>(populator.WarmBytes())));
    bool zeroed = true;
    for (size_t i = 0; i < kFreshWords; ++i) zeroed = zeroed && fresh[i] == 0;
    for (size_t i = 0; i < kFreshWords; i += kSmallPageWords) fresh[i] = Pattern(i);
    bool writable = true;
    for (size_t i = 0; i < kFreshWords; i += kSmallPageWords) writable = writable && fresh[i] == Pattern(i);
    out.Set("zeroed", Napi::Boolean::New(env, zeroed));
    out.Set("writable", Napi::Boolean::New(env, writable));
    const uint64_t kept = ResidentBytes();
    populator.SetWarmHold(std::chrono::milliseconds(0));
    const bool unmapped = populator.WaitWarmEmpty(kPopulationTimeout);
    const uint64_t expired = ResidentBytes();
    out.Set("unmappedAtExpiry", Napi::Number::New(env, unmapped && kept > expired ? static_cast<double>(kept - expired) : 0));
  }
  return out;
}

// () -> { keptBytes, leftBytes, writesKept }: a buffer whose owner starts using it (Use) before the
// held populating thread got to it takes no kept page: the owner's words all stay.
Napi::Value CheckWarmPagesInUse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  pages::Populator& populator = pages::Populator::Instance();
  constexpr size_t kWords = 4 * kHugePageWords;
  const WarmPagesScope scope(kKeepForTheCheck);
  RequireReady(env, scope);
  ZeroedBuffer<uint64_t> drained(kWords);
  for (size_t i = 0; i < kWords; i += kSmallPageWords) drained[i] = Pattern(i);
  drained.ReleaseFront(kWords);
  Napi::Object out = Napi::Object::New(env);
  out.Set("keptBytes", Napi::Number::New(env, static_cast<double>(populator.WarmBytes())));
  ZeroedBuffer<uint64_t> used(kWords);
  {
    const PopulationHold hold;
    used.PopulateInBackground();
    used.Use();
    for (size_t i = 0; i < kWords; i += kSmallPageWords) used[i] = ~Pattern(i);
  }
  WaitPopulated(env);
  bool kept = true;
  for (size_t i = 0; i < kWords; i += kSmallPageWords) kept = kept && used[i] == ~Pattern(i);
  out.Set("leftBytes", Napi::Number::New(env, static_cast<double>(populator.WarmBytes())));
  out.Set("writesKept", Napi::Boolean::New(env, kept));
  return out;
}

// Whether the small page at `base` is mapped (mincore fails with ENOMEM where nothing is).
bool Mapped(void* base) {
  unsigned char resident = 0;
  return mincore(base, 4096, &resident) == 0;
}

// () -> { orphanedMapped, queuedUnmapped, underWayUnmapped }: buffers freed while their population
// was still to come (the thread held): without pages::UnmapOnCaller one is left to the thread, still
// mapped on return; under it one is unmapped on return. And one freed under it while the thread was
// faulting it in: unmapped on return too (the thread let go of it first).
Napi::Value CheckUnmapOnCaller(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  pages::Populator& populator = pages::Populator::Instance();
  constexpr size_t kWords = size_t{1} << 21;  // 16 MiB
  bool orphanedMapped;
  bool queuedUnmapped;
  {
    const PopulationHold hold;
    auto orphaned = std::make_unique<ZeroedBuffer<uint64_t>>(kWords);
    orphaned->PopulateInBackground();
    void* a = orphaned->data();
    orphaned.reset();
    orphanedMapped = Mapped(a);
    auto withdrawn = std::make_unique<ZeroedBuffer<uint64_t>>(kWords);
    withdrawn->PopulateInBackground();
    void* b = withdrawn->data();
    {
      const pages::UnmapOnCaller here;
      withdrawn.reset();
    }
    queuedUnmapped = !Mapped(b);
  }
  WaitPopulated(env);
  // 256 MiB: some 100 ms of faults, the first of which it waits for.
  auto underWay = std::make_unique<ZeroedBuffer<uint64_t>>(16 * kWords);
  const uint64_t before = populator.GetCounts().touched;
  underWay->PopulateInBackground();
  const auto deadline = std::chrono::steady_clock::now() + kPopulationTimeout;
  while (populator.GetCounts().touched == before && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  void* c = underWay->data();
  {
    const pages::UnmapOnCaller here;
    underWay.reset();
  }
  const bool underWayUnmapped = !Mapped(c);
  WaitPopulated(env);
  Napi::Object out = Napi::Object::New(env);
  out.Set("orphanedMapped", Napi::Boolean::New(env, orphanedMapped));
  out.Set("queuedUnmapped", Napi::Boolean::New(env, queuedUnmapped));
  out.Set("underWayUnmapped", Napi::Boolean::New(env, underWayUnmapped));
  return out;
}

// () -> { touched, replaced, expired }: pages::Populator's counts (huge pages) since it started.
Napi::Value PopulatorCounts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const pages::Populator::Counts c = pages::Populator::Instance().GetCounts();
  Napi::Object out = Napi::Object::New(env);
  out.Set("touched", Napi::Number::New(env, static_cast<double>(c.touched)));
  out.Set("replaced", Napi::Number::New(env, static_cast<double>(c.replaced)));
  out.Set("expired", Napi::Number::New(env, static_cast<double>(c.expired)));
  return out;
}

struct MapLatencies {
  double maxMs = 0;
  double totalMs = 0;
  size_t count = 0;
};

// One mmap of 256 KiB (the size of a malloc'd large block), a write into it and its munmap: what V8,
// malloc and ZMQ do on the relay's other threads.
void TimeMapUnmap(MapLatencies& into) {
  constexpr size_t kBytes = size_t{256} << 10;
  const auto start = std::chrono::steady_clock::now();
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    static_cast<volatile char*>(p)[0] = 1;
    munmap(p, kBytes);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  into.maxMs = std::max(into.maxMs, ms);
  into.totalMs += ms;
  into.count += 1;
}

Napi::Object LatencyObject(Napi::Env env, const MapLatencies& l) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("maxMs", Napi::Number::New(env, l.maxMs));
  out.Set("meanMs", Napi::Number::New(env, l.count == 0 ? 0 : l.totalMs / static_cast<double>(l.count)));
  out.Set("count", Napi::Number::New(env, static_cast<double>(l.count)));
  return out;
}

// (mib) -> { idle, busy: { maxMs, meanMs, count }, populateMs }: this thread's mmap + write + munmap
// of 256 KiB every 200 µs, for 300 ms with the populating thread idle, then while it populates a
// fresh buffer of `mib` MiB (until it is done).
Napi::Value BenchPopulatorContention(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t mib = args::UInt(args::Arg(info, 0), "mib", 4096);
  if (mib == 0) throw Napi::RangeError::New(env, "mib must be at least 1");
  constexpr auto kPace = std::chrono::microseconds(200);
  WaitPopulated(env);
  MapLatencies idle;
  for (const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300); std::chrono::steady_clock::now() < end;) {
    TimeMapUnmap(idle);
    std::this_thread::sleep_for(kPace);
  }
  MapLatencies busy;
  ZeroedBuffer<uint64_t> buffer(size_t{mib} << 17);
  const auto start = std::chrono::steady_clock::now();
  buffer.PopulateInBackground();
  while (!buffer.Populated()) {
    TimeMapUnmap(busy);
    std::this_thread::sleep_for(kPace);
  }
  const double populateMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  WaitPopulated(env);
  Napi::Object out = Napi::Object::New(env);
  out.Set("idle", LatencyObject(env, idle));
  out.Set("busy", LatencyObject(env, busy));
  out.Set("populateMs", Napi::Number::New(env, populateMs));
  return out;
}

// (mib) -> { freshMs, keptMs, replaced }: how long the populating thread takes for a buffer of `mib`
// MiB of fresh pages, then for one of the same size once a drained buffer of that size gave its huge
// pages back (WarmPages: moved in and zeroed), and how many huge pages it so replaced.
Napi::Value BenchWarmPages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t mib = args::UInt(args::Arg(info, 0), "mib", 4096);
  if (mib < 2) throw Napi::RangeError::New(env, "mib must be at least 2");
  const size_t words = size_t{mib} << 17;
  const WarmPagesScope scope(kKeepForTheCheck);
  RequireReady(env, scope);
  const auto populate = [&](ZeroedBuffer<uint64_t>* buffer) {
    const auto start = std::chrono::steady_clock::now();
    buffer->PopulateInBackground();
    WaitPopulated(env);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  ZeroedBuffer<uint64_t> drained(words);
  const double freshMs = populate(&drained);
  drained.Use();
  drained.ReleaseFront(words);
  const uint64_t before = pages::Populator::Instance().GetCounts().replaced;
  ZeroedBuffer<uint64_t> successor(words);
  const double keptMs = populate(&successor);
  Napi::Object out = Napi::Object::New(env);
  out.Set("freshMs", Napi::Number::New(env, freshMs));
  out.Set("keptMs", Napi::Number::New(env, keptMs));
  out.Set("replaced", Napi::Number::New(env, static_cast<double>(pages::Populator::Instance().GetCounts().replaced - before)));
  return out;
}

}  // namespace

void InitPagePopulatorCheck(Napi::Env env, Napi::Object exports) {
  exports.Set("checkPopulatorPause", Napi::Function::New(env, CheckPopulatorPause, "checkPopulatorPause"));
  exports.Set("checkPopulatorResult", Napi::Function::New(env, CheckPopulatorResult, "checkPopulatorResult"));
  exports.Set("checkWarmPagesReuse", Napi::Function::New(env, CheckWarmPagesReuse, "checkWarmPagesReuse"));
  exports.Set("checkWarmPagesInUse", Napi::Function::New(env, CheckWarmPagesInUse, "checkWarmPagesInUse"));
  exports.Set("checkUnmapOnCaller", Napi::Function::New(env, CheckUnmapOnCaller, "checkUnmapOnCaller"));
  exports.Set("populatorCounts", Napi::Function::New(env, PopulatorCounts, "populatorCounts"));
  exports.Set("benchWarmPages", Napi::Function::New(env, BenchWarmPages, "benchWarmPages"));
  exports.Set("benchPopulatorContention", Napi::Function::New(env, BenchPopulatorContention, "benchPopulatorContention"));
}

}  // namespace testing
}  // namespace kvrelay
