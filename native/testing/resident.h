// The process's resident set, for the test/bench addon's memory checks.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace kvrelay {
namespace testing {

// Resident set size of this process in bytes, from /proc/self/statm (0 if unreadable).
inline uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace testing
}  // namespace kvrelay
