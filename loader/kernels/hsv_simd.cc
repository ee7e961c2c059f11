#include "loader/kernels/hsv_simd.h"

#include <algorithm>
#include <cmath>

#include "loader/base/simd.h"
#include "loader/kernels/hsv_kernel.h"
#include "loader/kernels/hsv_lut.h"

#if defined(__x86_64__) || defined(__i386__)
#define YC_HSV_X86 1
#endif

namespace yc {

namespace hsv_kernel {

DivTables::DivTables() {
  sdiv[0] = hdiv[0] = 0;
  for (int i = 1; i < 256; ++i) {
    sdiv[i] = static_cast<int32_t>(std::lrint((255 << 12) / (1. * i)));
    hdiv[i] = static_cast<int32_t>(std::lrint((180 << 12) / (6. * i)));
    const volatile float fi = static_cast<float>(i);  // keep the division in float
    float_division_exact =
        float_division_exact && std::lrint(1044480.0f / fi) == sdiv[i] && std::lrint(122880.0f / fi) == hdiv[i];
  }
}

const DivTables& Tables() {
  static const DivTables t;
  return t;
}

}  // namespace hsv_kernel

namespace {

// A float gain g with min(trunc(x * g), 255) == table[x] for every x: float(c) or a neighbour.
bool FloatGain(const uint8_t* table, double c, float* gain) {
  const float base = static_cast<float>(c);
  const float candidates[3] = {base, std::nextafter(base, 10.0f), std::nextafter(base, 0.0f)};
  for (float g : candidates) {
    bool ok = true;
    for (int x = 0; x < 256 && ok; ++x) {
      const volatile float product = static_cast<float>(x) * g;  // the kernel's float multiply
      ok = std::min(std::trunc(static_cast<float>(product)), 255.0f) == table[x];
    }
    if (ok) {
      *gain = g;
      return true;
    }
  }
  return false;
}

// The loops of the widest instruction set the CPU and the cap allow, or null (portable form).
const hsv_kernel::Loops* ActiveLoops() {
#ifdef YC_HSV_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return &hsv_kernel::Avx512Loops();
    case SimdLevel::kAvx2:
      return &hsv_kernel::Avx2Loops();
    case SimdLevel::kNone:
      break;
  }
#endif
  return nullptr;
}

}  // namespace

void PrepareHsvSimd(HsvLut* lut) {
  for (int i = 0; i < 256; ++i) lut->h32[i] = lut->h[i], lut->s32[i] = lut->s[i], lut->v32[i] = lut->v[i];
  lut->hue_shift = lut->h[0];
  bool hue_ok = true;
  for (int x = 0; x < 180; ++x) hue_ok = hue_ok && lut->h[x] == (x + lut->hue_shift) % 180;
  lut->arithmetic =
      hue_ok && FloatGain(lut->s, lut->s_mul, &lut->s_gain) && FloatGain(lut->v, lut->v_mul, &lut->v_gain);
}

bool HsvSimdAvailable() { return ActiveSimdLevel() != SimdLevel::kNone; }

void HsvSimdInterleaved(const HsvLut& lut, const uint8_t* src, uint8_t* dst, size_t pixels) {
  const hsv_kernel::DivTables& T = hsv_kernel::Tables();
  if (const hsv_kernel::Loops* loops = ActiveLoops())
    loops->interleaved[VariantFor(lut, T)](lut, T, src, dst, pixels);
  else
    hsv_kernel::InterleavedScalar(lut, T, src, dst, pixels);
}

void HsvSimdPlanar(const HsvLut& lut, const uint8_t* src, uint8_t* r, uint8_t* g, uint8_t* b, size_t pixels) {
  const hsv_kernel::DivTables& T = hsv_kernel::Tables();
  if (const hsv_kernel::Loops* loops = ActiveLoops())
    loops->planar[VariantFor(lut, T)](lut, T, src, r, g, b, pixels);
  else
    hsv_kernel::PlanarScalar(lut, T, src, r, g, b, pixels);
}

}  // namespace yc
