#include "loader/base/core_clock.h"

#include <chrono>
#include <cstdint>

namespace yc {

bool CoreClockAvailable() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

CoreClockSample SampleCoreClock(int multiplies) {
  CoreClockSample s;
  const int steps = (multiplies + 3) / 4;
  uint64_t x = 1;
  const uint64_t k = 3;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
#if defined(__x86_64__)
    // Register operands only: an immediate form could be folded away by a recent renamer.
    asm volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0" : "+r"(x) : "r"(k));
#else
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
#endif
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.cycles = CoreClockAvailable() ? 12.0 * steps : 0.0;
  return s;
}

}  // namespace yc
