// Run-time switch for the hand-written x86 SIMD kernels (separable resampler, fused HSV). They are
// used when the CPU supports them; tests turn them off to check the portable fallbacks, which are
// what non-x86 hosts run.
#pragma once

namespace yc {

// True unless switched off; each kernel also checks its own CPU feature.
bool SimdEnabled();
void SetSimdEnabled(bool enabled);

}  // namespace yc
