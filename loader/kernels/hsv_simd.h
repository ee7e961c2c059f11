// The fused HSV kernel: RGB -> HSV (OpenCV's 8-bit integer formulas and tables) -> the three LUTs ->
// RGB (OpenCV's float formulas, truncated like its SIMD path) in one pass over the pixels, 16 at a
// time with AVX-512 or eight with AVX2 (identical bytes), writing interleaved RGB or three planes.
// Used by ApplyHsv / FinishImage when the CPU has AVX2; agrees with the cvtColor baseline within one
// level (tests/loader/hsv_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace yc {

struct HsvLut;

// Fills the kernel's fields of a LUT (MakeHsvLut calls it).
void PrepareHsvSimd(HsvLut* lut);

// True when the running CPU supports the kernel (x86-64 with AVX2) and the cap allows it (simd.h's
// ActiveSimdLevel, which also picks between the AVX-512 and AVX2 loops).
bool HsvSimdAvailable();

// `pixels` RGB pixels from src to dst (interleaved; may alias) or to three planes.
void HsvSimdInterleaved(const HsvLut& lut, const uint8_t* src, uint8_t* dst, size_t pixels);
void HsvSimdPlanar(const HsvLut& lut, const uint8_t* src, uint8_t* r, uint8_t* g, uint8_t* b, size_t pixels);

}  // namespace yc
