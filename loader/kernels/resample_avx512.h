// The separable resampler's passes (separable_resample.h) with AVX-512. The horizontal one, with
// VBMI, takes sixteen output pixels a step. An axis-aligned warp uses the same column taps on every source row, so the
// taps are turned once per tile into byte permutes and weight bytes: per row and block of 16 output
// pixels, two loads of the row's 128-byte window, two vpermi2b that lay out each (left, right) tap
// pair per channel, and two vpmaddubsw that weight them. Same integers as the scalar pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace yc {

struct HorizontalTables {
  // Per 16-column block: 256 bytes (two 64-byte permutes, 96 weight bytes, padding), 64-byte aligned.
  std::vector<uint8_t> storage;
  size_t aligned_offset = 0;
  std::vector<int32_t> window;  // per block: first row byte of its 128-byte window, or -1 (not vectorised)
  std::vector<uint64_t> masks;  // per block: the window's two 64-byte load masks (bytes inside the row)
  int columns = 0;              // output columns covered by the tables (a multiple of 16)
};

// True when the CPU has AVX-512 F/BW/VBMI and the cap allows it (simd.h's ActiveSimdLevel): both
// passes below may run.
bool ResampleAvx512Available();

// Tables for `n` output columns: tap pairs at row bytes byte_offset[k] and byte_offset[k] + 3,
// weights (32 - frac[k], frac[k]). Blocks whose taps span more than 128 bytes (downscaling by more
// than ~2.6x) are left to the caller, as is the tail after the last full block.
void PlanHorizontalAvx512(const int32_t* byte_offset, const int32_t* frac, int n, size_t row_bytes,
                          HorizontalTables* tables);

// h[3k + c] = row[byte_offset[k] + c] * (32 - frac[k]) + row[byte_offset[k] + 3 + c] * frac[k] for
// the columns of every vectorised block.
void HorizontalAvx512(const uint8_t* row, const HorizontalTables& tables, int16_t* h);

// The vertical pass: out[i] = (h0[i] * (32 - f) + h1[i] * f + 512) >> 10, 32 values a step; returns
// how many leading values it wrote (the caller finishes the rest).
int VerticalAvx512(const int16_t* h0, const int16_t* h1, int f, int count, uint8_t* out);

}  // namespace yc
