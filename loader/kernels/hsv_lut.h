// The HSV look-up tables of one sample (Ultralytics RandomHSV, ops/hsv.h makes them) and the fields the
// fused kernel (hsv_simd.h) prepares from them.
#pragma once

#include <cstdint>

namespace yc {

struct HsvLut {
  uint8_t h[256], s[256], v[256];
  double s_mul = 1, v_mul = 1;  // 1 + gain: lut_s/lut_v are these products, clipped and truncated
  // Prepared once per sample for the fused kernel (hsv_simd.h): the tables widened for gathers, and
  // whether they are exactly reproduced by arithmetic (lut_h = (x + hue_shift) mod 180,
  // lut_s/lut_v = min(trunc(x * gain), 255) in float), which avoids the gathers.
  alignas(32) int32_t h32[256], s32[256], v32[256];
  bool arithmetic = false;
  int hue_shift = 0;
  float s_gain = 1, v_gain = 1;
};

}  // namespace yc
