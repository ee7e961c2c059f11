#include "loader/base/simd.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace yc {

namespace {

SimdLevel CapFromEnvironment() {
  const char* value = std::getenv("YOLOCACHE_SIMD");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "avx512") == 0) return SimdLevel::kAvx512;
  if (std::strcmp(value, "avx2") == 0) return SimdLevel::kAvx2;
  if (std::strcmp(value, "none") == 0) return SimdLevel::kNone;
  std::fprintf(stderr, "yolocache: ignoring YOLOCACHE_SIMD=%s (expected avx512, avx2 or none)\n", value);
  return SimdLevel::kAvx512;
}

std::atomic<SimdLevel>& Cap() {
  static std::atomic<SimdLevel> cap{CapFromEnvironment()};
  return cap;
}

}  // namespace

SimdLevel SimdCap() { return Cap().load(std::memory_order_relaxed); }
void SetSimdCap(SimdLevel cap) { Cap().store(cap, std::memory_order_relaxed); }

const char* SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return "avx512";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kNone:
      break;
  }
  return "none";
}

SimdLevel CpuSimdLevel() {
#if defined(__x86_64__) || defined(__i386__)
  // Every feature the AVX-512 kernels are compiled for (hsv_avx512.cc's target attribute).
  static const SimdLevel level = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                                         __builtin_cpu_supports("avx512vbmi")
                                     ? SimdLevel::kAvx512
                                 : __builtin_cpu_supports("avx2") ? SimdLevel::kAvx2
                                                                  : SimdLevel::kNone;
  return level;
#else
  return SimdLevel::kNone;
#endif
}

SimdLevel ActiveSimdLevel() { return std::min(CpuSimdLevel(), SimdCap()); }

bool SimdEnabled() { return SimdCap() != SimdLevel::kNone; }

}  // namespace yc
