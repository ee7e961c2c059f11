#include "loader/kernels/separable_resample.h"

#include <algorithm>
#include <cstring>

#include "loader/base/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define YC_HAVE_X86 1
#endif

namespace yc {

namespace {

// Horizontal pass, portable: h[3k + c] = p0[c] * (32 - f) + p1[c] * f.
void HorizontalScalar(const uint8_t* row, const int32_t* offsets, const int32_t* wpairs, int n, int16_t* h) {
  for (int k = 0; k < n; ++k) {
    const uint8_t* p = row + offsets[k];
    const int w0 = wpairs[k] & 0xFFFF, w1 = wpairs[k] >> 16;
    h[3 * k + 0] = static_cast<int16_t>(p[0] * w0 + p[3] * w1);
    h[3 * k + 1] = static_cast<int16_t>(p[1] * w0 + p[4] * w1);
    h[3 * k + 2] = static_cast<int16_t>(p[2] * w0 + p[5] * w1);
  }
}

#ifdef YC_HAVE_X86
// SSSE3: two output pixels per step. Each source pair p0 p1 (6 bytes) is spread to 16-bit lanes
// (p0c0 p1c0 p0c1 p1c1 p0c2 p1c2 0 0) and multiply-added with (w0 w1) pairs. Reads 8 bytes per tap,
// so the caller keeps the last taps of a buffer on the scalar path.
__attribute__((target("ssse3"))) void HorizontalSsse3(const uint8_t* row, const int32_t* offsets, const int32_t* wpairs,
                                                      int n, int16_t* h) {
  const __m128i spread = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  // packs gives a0 a1 a2 0 b0 b1 b2 0 (16-bit); keep a0 a1 a2 b0 b1 b2 in the low 12 bytes.
  const __m128i compact = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1);
  int k = 0;
  for (; k + 2 <= n; k += 2) {
    __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + offsets[k]));
    __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + offsets[k + 1]));
    a = _mm_madd_epi16(_mm_shuffle_epi8(a, spread), _mm_set1_epi32(wpairs[k]));
    b = _mm_madd_epi16(_mm_shuffle_epi8(b, spread), _mm_set1_epi32(wpairs[k + 1]));
    const __m128i packed = _mm_shuffle_epi8(_mm_packs_epi32(a, b), compact);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 3 * k), packed);  // 16 bytes: 4 spill into padding
  }
  if (k < n) HorizontalScalar(row, offsets + k, wpairs + k, n - k, h + 3 * k);
}

bool HaveSsse3() {
  static const bool have = __builtin_cpu_supports("ssse3");
  return have && SimdEnabled();
}
#endif

void Horizontal(const uint8_t* row, size_t row_bytes, const int32_t* offsets, const int32_t* wpairs, int n,
                int16_t* h) {
#ifdef YC_HAVE_X86
  if (HaveSsse3()) {
    // Taps whose 8-byte load would run past this row's pixels stay scalar (the row may be the last
    // one of an mmap'd record). Offsets are monotonic in either direction, so trim both ends.
    int lo = 0, hi = n;
    while (hi > lo && static_cast<size_t>(offsets[hi - 1]) + 8 > row_bytes) --hi;
    while (lo<hi&& static_cast<size_t>(offsets[lo]) + 8> row_bytes) ++lo;
    if (lo > 0) HorizontalScalar(row, offsets, wpairs, lo, h);
    HorizontalSsse3(row, offsets + lo, wpairs + lo, hi - lo, h + 3 * lo);
    if (hi < n) HorizontalScalar(row, offsets + hi, wpairs + hi, n - hi, h + 3 * hi);
    return;
  }
#endif
  HorizontalScalar(row, offsets, wpairs, n, h);
}

// Vertical pass: out = (h0 * (32 - f) + h1 * f + 512) >> 10.
void Vertical(const int16_t* __restrict h0, const int16_t* __restrict h1, int f, int count, uint8_t* __restrict out) {
  const int w0 = 32 - f, w1 = f;
  int i = 0;
#ifdef YC_HAVE_X86
  // SSE2 (baseline on x86-64): interleave h0/h1 and multiply-add with (w0, w1) pairs; GCC's own
  // vectorisation of the scalar loop emulates 32-bit multiplies and is about 3x slower.
  const __m128i weights = _mm_set1_epi32((w0 & 0xFFFF) | (w1 << 16));
  const __m128i round = _mm_set1_epi32(512);
  auto blend = [&](__m128i a, __m128i b, bool high) {
    const __m128i pairs = high ? _mm_unpackhi_epi16(a, b) : _mm_unpacklo_epi16(a, b);
    return _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(pairs, weights), round), 10);
  };
  const bool simd = SimdEnabled();
  if (simd && ResampleAvx512Available()) i = VerticalAvx512(h0, h1, f, count, out);
  for (; simd && i + 16 <= count; i += 16) {
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h0 + i));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h0 + i + 8));
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h1 + i));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h1 + i + 8));
    const __m128i lo = _mm_packs_epi32(blend(a0, b0, false), blend(a0, b0, true));
    const __m128i hi = _mm_packs_epi32(blend(a1, b1, false), blend(a1, b1, true));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(lo, hi));
  }
#endif
  for (; i < count; ++i) out[i] = static_cast<uint8_t>((h0[i] * w0 + h1[i] * w1 + 512) >> 10);
}

}  // namespace

void ResampleSeparable(const cv::Mat& src, const ResampleTaps& cols, const ResampleTaps& rows, cv::Mat* out,
                       ResampleScratch* s) {
  const int nx = static_cast<int>(cols.source.size()), ny = static_cast<int>(rows.source.size());
  if (nx <= 0 || ny <= 0) return;
  s->byte_offset.resize(nx);
  s->weight_pair.resize(nx);
  for (int k = 0; k < nx; ++k) {
    s->byte_offset[k] = cols.source[k] * 3;
    s->weight_pair[k] = (32 - cols.frac[k]) | (cols.frac[k] << 16);
  }
  const size_t padded = static_cast<size_t>(nx) * 3 + 8;  // SIMD stores spill past the end
  for (auto& r : s->rows)
    if (r.size() < padded) r.resize(padded);
  s->cached[0] = s->cached[1] = -1;
  const size_t row_bytes = static_cast<size_t>(src.cols) * 3;

  const bool wide = ResampleAvx512Available() && nx >= 16;
  if (wide) PlanHorizontalAvx512(s->byte_offset.data(), cols.frac.data(), nx, row_bytes, &s->wide);
  auto fill = [&](int slot, int sy) {
    const uint8_t* row = src.ptr<uint8_t>(sy);
    int16_t* h = s->rows[slot].data();
    const int32_t* offsets = s->byte_offset.data();
    const int32_t* wpairs = s->weight_pair.data();
    s->cached[slot] = sy;
    if (!wide) {
      Horizontal(row, row_bytes, offsets, wpairs, nx, h);
      return;
    }
    // First what the wide pass leaves (its stores are exact; the narrow ones may spill into the
    // next block, which the wide pass then overwrites).
    const HorizontalTables& t = s->wide;
    for (int k = 0; k < t.columns; k += 16)
      if (t.window[k / 16] < 0) Horizontal(row, row_bytes, offsets + k, wpairs + k, 16, h + 3 * k);
    if (t.columns < nx)
      Horizontal(row, row_bytes, offsets + t.columns, wpairs + t.columns, nx - t.columns, h + 3 * t.columns);
    HorizontalAvx512(row, t, h);
  };
  auto find = [&](int sy) { return s->cached[0] == sy ? 0 : s->cached[1] == sy ? 1 : -1; };

  // The source rows two output rows ahead, requested now so the horizontal pass finds them in cache
  // (the record is in the page cache, usually not in the CPU's: each sample reads up to 4 new tiles).
  const int span_lo = std::min(cols.source.front(), cols.source.back()) * 3;
  const int span_bytes = (std::max(cols.source.front(), cols.source.back()) + 2) * 3 - span_lo;
  auto prefetch_row = [&](int sy) {
    const char* p = reinterpret_cast<const char*>(src.ptr<uint8_t>(sy)) + span_lo;
    for (int b = 0; b < span_bytes; b += 64) __builtin_prefetch(p + b);
  };
  int prefetched = -1;
  for (int k = 0; k < ny; ++k) {
    const int sy = rows.source[k], f = rows.frac[k];
    if (k + 2 < ny && rows.source[k + 2] != prefetched) {
      prefetched = rows.source[k + 2];
      prefetch_row(prefetched), prefetch_row(prefetched + 1);  // both taps lie inside the tile
    }
    // A zero weight needs no second row (its product is 0 whatever the row holds).
    int i0 = find(sy), i1 = f != 0 ? find(sy + 1) : -1;
    if (i0 < 0) {
      i0 = i1 == 0 ? 1 : 0;
      fill(i0, sy);
    }
    if (f != 0 && i1 < 0) {
      i1 = 1 - i0;
      fill(i1, sy + 1);
    }
    const int16_t* h0 = s->rows[i0].data();
    const int16_t* h1 = f != 0 ? s->rows[i1].data() : h0;
    uint8_t* dst = out->ptr<uint8_t>(rows.first_out + k) + cols.first_out * 3;
    Vertical(h0, h1, f, nx * 3, dst);
  }
}

}  // namespace yc
