// Run-time choice of the hand-written x86 SIMD kernels (separable resampler, fused HSV). Each kernel
// uses the widest instruction set that both the CPU supports and this cap allows. The cap starts at
// the environment variable YOLOCACHE_SIMD (avx512 | avx2 | none; default avx512) so a user or a bench
// can compare kernels side by side; tests lower it to check each kernel against the portable
// fallbacks, which are what non-x86 hosts run. The AVX-512 and AVX2 kernels produce identical bytes;
// the portable HSV path (cvtColor) agrees with them within one level.
#pragma once

namespace yc {

enum class SimdLevel { kNone = 0, kAvx2 = 1, kAvx512 = 2 };

SimdLevel SimdCap();
void SetSimdCap(SimdLevel cap);
const char* SimdLevelName(SimdLevel level);

// What the running CPU supports: kAvx512 needs F, BW and VBMI (16-lane arithmetic, byte masks, byte
// permutes) plus VL and DQ, which the HSV kernel is compiled with (every VBMI CPU has them); kAvx2
// needs AVX2 (and with it SSSE3).
SimdLevel CpuSimdLevel();
// The level the kernels run at now: the lower of the CPU's and the cap.
SimdLevel ActiveSimdLevel();

// True unless the cap is kNone.
bool SimdEnabled();

}  // namespace yc
