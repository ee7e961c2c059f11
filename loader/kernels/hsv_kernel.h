// Internal to the fused HSV kernel (hsv_simd.h): OpenCV's RGB2HSV division tables, the one-pixel
// scalar form that every vector loop reproduces bit for bit (and uses for its tail), and the per-ISA
// loops: hsv_avx2.cc (8 pixels a step) and hsv_avx512.cc (16). hsv_simd.cc picks one per call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "loader/kernels/hsv_lut.h"

namespace yc::hsv_kernel {

// OpenCV's RGB2HSV_b tables (hsv_shift = 12, hrange = 180).
struct DivTables {
  int32_t sdiv[256], hdiv[256];
  // Whether a float division rounded to nearest reproduces both tables (then the kernels divide
  // instead of gathering; checked once rather than assumed).
  bool float_division_exact = true;
  DivTables();
};
const DivTables& Tables();

// One pixel, scalar, same arithmetic as the vector code.
inline void PixelScalar(const HsvLut& lut, const DivTables& T, const uint8_t* p, uint8_t* r_out, uint8_t* g_out,
                        uint8_t* b_out) {
  const int r = p[0], g = p[1], b = p[2];
  const int v = std::max(std::max(r, g), b), vmin = std::min(std::min(r, g), b), diff = v - vmin;
  const int s = (diff * T.sdiv[v] + 2048) >> 12;
  const int hnum = v == r ? g - b : (v == g ? b - r + 2 * diff : r - g + 4 * diff);
  int h = (hnum * T.hdiv[diff] + 2048) >> 12;
  h += h < 0 ? 180 : 0;
  const float hh = lut.h[h & 255] * (6.0f / 180.0f), ss = lut.s[s] * (1.0f / 255.0f), vv = lut.v[v] * (1.0f / 255.0f);
  float pre = static_cast<float>(static_cast<int>(hh));
  const float f = hh - pre;
  const float t1 = vv * (1.f - ss), t2 = vv * (1.f - ss * f);
  const float tab[4] = {vv, t1, t2, (vv + t1) - t2};
  int sector = static_cast<int>(pre) % 6;
  static const int kSector[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};  // b g r
  *b_out = static_cast<uint8_t>(std::clamp(static_cast<int>(tab[kSector[sector][0]] * 255.f), 0, 255));
  *g_out = static_cast<uint8_t>(std::clamp(static_cast<int>(tab[kSector[sector][1]] * 255.f), 0, 255));
  *r_out = static_cast<uint8_t>(std::clamp(static_cast<int>(tab[kSector[sector][2]] * 255.f), 0, 255));
}

inline void InterleavedScalar(const HsvLut& lut, const DivTables& T, const uint8_t* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t r, g, b;
    PixelScalar(lut, T, src + 3 * i, &r, &g, &b);
    dst[3 * i] = r, dst[3 * i + 1] = g, dst[3 * i + 2] = b;
  }
}

inline void PlanarScalar(const HsvLut& lut, const DivTables& T, const uint8_t* src, uint8_t* r, uint8_t* g,
                         uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) PixelScalar(lut, T, src + 3 * i, r + i, g + i, b + i);
}

// One instruction set's loops: `n` pixels from src to dst (interleaved; may alias) or to three planes,
// in three variants (Variant). x86-64 only; hsv_simd.cc checks the CPU before calling them.
using PlanarLoopFn = void (*)(const HsvLut&, const DivTables&, const uint8_t* src, uint8_t* r, uint8_t* g, uint8_t* b,
                              size_t n);
using InterleavedLoopFn = void (*)(const HsvLut&, const DivTables&, const uint8_t* src, uint8_t* dst, size_t n);
struct Loops {
  PlanarLoopFn planar[3];
  InterleavedLoopFn interleaved[3];
};
const Loops& Avx2Loops();
const Loops& Avx512Loops();

// Which variant a LUT can take: the division tables by float division (when that reproduces them),
// and the three LUTs as arithmetic (HsvLut::arithmetic); each replaces gathers, which dominate the
// loops otherwise.
enum Variant { kDivideArithmetic = 0, kDivideGather = 1, kGatherGather = 2 };
inline Variant VariantFor(const HsvLut& lut, const DivTables& T) {
  if (!T.float_division_exact) return kGatherGather;
  return lut.arithmetic ? kDivideArithmetic : kDivideGather;
}

// An instruction set's Loops from its loop templates `Planar<kDivide, kArithmetic>` and
// `Interleaved<...>`, in Variant order, so that order is written once, here beside the enum.
#define YC_HSV_LOOPS(Planar, Interleaved)                                                   \
  ::yc::hsv_kernel::Loops {                                                                  \
    {Planar<true, true>, Planar<true, false>, Planar<false, false>},                         \
        {Interleaved<true, true>, Interleaved<true, false>, Interleaved<false, false>}       \
  }

}  // namespace yc::hsv_kernel
