// Ultralytics RandomHSV, 8.3.79+ (`ultralytics/data/augment.py`): gains g = U(-1,1)^3 * (hsv_h, hsv_s, hsv_v),
// lut_h = ((x + g_h*180) % 180) (additive hue, wraps), lut_s = clip(x*(1+g_s)) with lut_s[0] = 0,
// lut_v = clip(x*(1+g_v)), float->uint8 casts truncate; applied in OpenCV's 8-bit HSV space.
// Our pixels are RGB, and RGB2HSV on RGB gives the same H, S, V as BGR2HSV on BGR.
#pragma once

#include <cstddef>
#include <cstdint>
#include <opencv2/core.hpp>

#include "loader/base/rng.h"
#include "loader/kernels/hsv_lut.h"
#include "loader/options.h"

namespace yc {

struct HsvGains {
  bool enabled = false;  // Ultralytics skips HSV (and its draws) when all three hyps are 0
  double h = 0, s = 0, v = 0;
};
HsvGains DrawHsvGains(Rng& rng, const AugmentHyp& hyp);

HsvLut MakeHsvLut(const HsvGains& gains);

// Baseline: cv::cvtColor(RGB2HSV), per-channel table lookup, cv::cvtColor(HSV2RGB), in place.
void ApplyHsvReference(const HsvLut& lut, cv::Mat* rgb);

// Fast path on `pixels` contiguous RGB pixels, src may equal dst: the fused AVX-512/AVX2 kernel
// (hsv_simd.h) when the CPU has it, else cvtColor + tables on L1-sized runs. `hsv` is caller scratch of
// kHsvChunkPixels * 3 bytes. Agrees with ApplyHsvReference within one level per channel.
constexpr size_t kHsvChunkPixels = 2048;
void ApplyHsv(const HsvLut& lut, const uint8_t* src, uint8_t* dst, size_t pixels, uint8_t* hsv);

// Same, writing three planes (NCHW) directly. `scratch`: kHsvChunkPixels * 6 bytes.
void ApplyHsvToPlanes(const HsvLut& lut, const uint8_t* src, size_t pixels, uint8_t* r, uint8_t* g, uint8_t* b,
                      uint8_t* scratch);

}  // namespace yc
