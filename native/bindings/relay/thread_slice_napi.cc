// `setThreadSlice` / `threadSlice`: the calling thread's CFS/EEVDF slice (sched_attr.sched_runtime).
// `setThreadName`: the calling thread's name (what top -H, perf and /proc/<pid>/task/*/comm show: the
// relay names its ingest threads, whose CPU the benches report apart from V8's and libuv's).
// Linux 6.12+ lets a task with a shorter slice than the running one preempt it on wake-up; the relay's
// event loop asks for a short one so that, on a box whose cores its own ingest and apply threads
// keep busy, it runs when its socket or timer wakes it instead of queueing behind them for a
// default slice. No privilege is needed: the slice changes latency, not the thread's CPU share.
#include <napi.h>

#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "bindings/modules.h"
#include "bindings/napi_args.h"

namespace kvrelay {
namespace {

// The kernel's bounds on a fair task's slice (kernel/sched/syscalls.c: 0.1 ms .. 100 ms).
constexpr uint64_t kMinSliceUs = 100;
constexpr uint64_t kMaxSliceUs = 100'000;

// linux/sched.h SCHED_FLAG_RESET_ON_FORK: children (threads included) do not inherit the attributes.
constexpr uint64_t kSchedFlagResetOnFork = 0x01;
// linux/sched/types.h, which glibc does not expose.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

bool GetAttr(SchedAttr* attr) {
  std::memset(attr, 0, sizeof(*attr));
  return syscall(SYS_sched_getattr, 0, attr, sizeof(*attr), 0) == 0;
}

// Kernels without a settable fair slice reject it with EINVAL (or lack the call): not an error.
bool Unsupported(int error) { return error == ENOSYS || error == EINVAL || error == E2BIG || error == EPERM; }

Napi::Value SetThreadSlice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 1) throw Napi::TypeError::New(env, "setThreadSlice(microseconds) takes one argument");
  const uint64_t us = args::UInt(info[0], "microseconds", kMaxSliceUs);
  if (us < kMinSliceUs) throw Napi::RangeError::New(env, "microseconds must be an integer in [100, 100000]");
  SchedAttr attr;
  if (!GetAttr(&attr)) {
    if (Unsupported(errno)) return Napi::Boolean::New(env, false);
    throw Napi::Error::New(env, std::string("sched_getattr: ") + std::strerror(errno));
  }
  // Only fair (SCHED_OTHER / SCHED_BATCH) threads have a slice to shorten.
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return Napi::Boolean::New(env, false);
  attr.size = sizeof(attr);
  // Threads created by this one afterwards (libuv's pool, ingest workers, ZMQ I/O) start at the
  // default slice, not this one: with it they all inherited the short slice and the loop gained
  // nothing over them (issue 26 item 10). Also keeps a launcher's reset-on-fork, which 0 cleared.
  attr.sched_flags = kSchedFlagResetOnFork;
  attr.sched_runtime = us * 1000;
  if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
    if (Unsupported(errno)) return Napi::Boolean::New(env, false);
    throw Napi::Error::New(env, std::string("sched_setattr: ") + std::strerror(errno));
  }
  // Kernels before EEVDF accept the attribute and ignore the runtime of a fair task.
  SchedAttr now;
  return Napi::Boolean::New(env, GetAttr(&now) && now.sched_runtime == attr.sched_runtime);
}

// The calling thread's slice in microseconds, or null where the kernel does not report one.
Napi::Value ThreadSlice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 0) throw Napi::TypeError::New(env, "threadSlice() takes no arguments");
  SchedAttr attr;
  if (!GetAttr(&attr) || attr.sched_runtime == 0) return env.Null();
  return Napi::Number::New(env, static_cast<double>(attr.sched_runtime / 1000));
}

// Linux keeps 15 bytes of a thread's name (TASK_COMM_LEN less its terminator).
constexpr size_t kMaxThreadName = 15;

Napi::Value SetThreadName(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "setThreadName(name: string) takes one string");
  const std::string name = info[0].As<Napi::String>().Utf8Value();
  bool printable = !name.empty() && name.size() <= kMaxThreadName;
  for (char c : name) printable = printable && c >= 0x20 && c < 0x7f;
  if (!printable) throw Napi::RangeError::New(env, "name must be 1 to 15 printable ASCII characters");
  return Napi::Boolean::New(env, prctl(PR_SET_NAME, name.c_str(), 0, 0, 0) == 0);
}

}  // namespace

void InitThreadSlice(Napi::Env env, Napi::Object exports) {
  exports.Set("setThreadSlice", Napi::Function::New(env, SetThreadSlice, "setThreadSlice"));
  exports.Set("threadSlice", Napi::Function::New(env, ThreadSlice, "threadSlice"));
  exports.Set("setThreadName", Napi::Function::New(env, SetThreadName, "setThreadName"));
}

}  // namespace kvrelay
