// The fused HSV kernel with AVX-512, sixteen pixels a step: the same operations as hsv_avx2.cc in the
// same order (so identical bytes), with mask registers instead of variable blends and byte permutes
// (VBMI) for the 3-byte pixel (de)interleave, which leaves the ports to the arithmetic.
// Built with -ffp-contract=off (CMakeLists.txt): a fused multiply-add would change the last bit.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "loader/kernels/hsv_kernel.h"

#define YC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi")))

namespace yc::hsv_kernel {

namespace {

constexpr __mmask64 k48Bytes = (__mmask64{1} << 48) - 1;  // 16 RGB pixels

// Per lane, tabs[table[sector]]: the index comes from a lane permute, its two bits pick with masks.
YC_AVX512 inline __m512 Pick(__m512i table, __m512i sector, __m512 t0, __m512 t1, __m512 t2, __m512 t3) {
  const __m512i idx = _mm512_permutexvar_epi32(sector, table);
  const __mmask16 bit0 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(1));
  const __mmask16 bit1 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(2));
  return _mm512_mask_blend_ps(bit1, _mm512_mask_blend_ps(bit0, t0, t1), _mm512_mask_blend_ps(bit0, t2, t3));
}

// Sixteen pixels: RGB (int32 lanes, 0..255) -> adjusted RGB (int32 lanes). kDivide and kArithmetic
// as in hsv_avx2.cc's Kernel8.
template <bool kDivide, bool kArithmetic>
YC_AVX512 inline void Kernel16(const HsvLut& L, const DivTables& T, __m512i r, __m512i g, __m512i b, __m512i* ro,
                               __m512i* go, __m512i* bo) {
  const __m512i v = _mm512_max_epi32(_mm512_max_epi32(r, g), b);
  const __m512i vmin = _mm512_min_epi32(_mm512_min_epi32(r, g), b);
  const __m512i diff = _mm512_sub_epi32(v, vmin);
  const __m512i half = _mm512_set1_epi32(2048);
  // v = 0 (and diff = 0 below) divide by zero; the product with diff = 0 / hnum = 0 is still 0.
  const __m512i sdiv = kDivide ? _mm512_cvtps_epi32(_mm512_div_ps(_mm512_set1_ps(1044480.0f), _mm512_cvtepi32_ps(v)))
                               : _mm512_i32gather_epi32(v, T.sdiv, 4);
  const __m512i s = _mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(diff, sdiv), half), 12);
  const __mmask16 vr = _mm512_cmpeq_epi32_mask(v, r), vg = _mm512_cmpeq_epi32_mask(v, g);
  const __m512i h_r = _mm512_sub_epi32(g, b);
  const __m512i h_g = _mm512_add_epi32(_mm512_sub_epi32(b, r), _mm512_slli_epi32(diff, 1));
  const __m512i h_b = _mm512_add_epi32(_mm512_sub_epi32(r, g), _mm512_slli_epi32(diff, 2));
  const __m512i hnum = _mm512_mask_blend_epi32(vr, _mm512_mask_blend_epi32(vg, h_b, h_g), h_r);
  const __m512i hdiv = kDivide
                           ? _mm512_cvtps_epi32(_mm512_div_ps(_mm512_set1_ps(122880.0f), _mm512_cvtepi32_ps(diff)))
                           : _mm512_i32gather_epi32(diff, T.hdiv, 4);
  __m512i h = _mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(hnum, hdiv), half), 12);
  h = _mm512_mask_add_epi32(h, _mm512_cmplt_epi32_mask(h, _mm512_setzero_si512()), h, _mm512_set1_epi32(180));
  h = _mm512_and_si512(h, _mm512_set1_epi32(255));

  // LUTs, then OpenCV's HSV2RGB_simd.
  const __m512 inv255 = _mm512_set1_ps(1.0f / 255.0f);
  __m512 hh, ss, vv;
  if (kArithmetic) {
    __m512i h2 = _mm512_add_epi32(h, _mm512_set1_epi32(L.hue_shift));  // h in 0..179, shift in 0..179
    h2 = _mm512_mask_sub_epi32(h2, _mm512_cmpgt_epi32_mask(h2, _mm512_set1_epi32(179)), h2, _mm512_set1_epi32(180));
    hh = _mm512_mul_ps(_mm512_cvtepi32_ps(h2), _mm512_set1_ps(6.0f / 180.0f));
    const __m512 k255 = _mm512_set1_ps(255.0f);
    constexpr int kTrunc = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
    const __m512 s2 =
        _mm512_min_ps(_mm512_roundscale_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(L.s_gain)), kTrunc),
                      k255);
    const __m512 v2 =
        _mm512_min_ps(_mm512_roundscale_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(L.v_gain)), kTrunc),
                      k255);
    ss = _mm512_mul_ps(s2, inv255);
    vv = _mm512_mul_ps(v2, inv255);
  } else {
    hh = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_i32gather_epi32(h, L.h32, 4)), _mm512_set1_ps(6.0f / 180.0f));
    ss = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_i32gather_epi32(s, L.s32, 4)), inv255);
    vv = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_i32gather_epi32(v, L.v32, 4)), inv255);
  }
  const __m512 pre = _mm512_cvtepi32_ps(_mm512_cvttps_epi32(hh));
  const __m512 f = _mm512_sub_ps(hh, pre);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 tab0 = vv;
  const __m512 tab1 = _mm512_mul_ps(vv, _mm512_sub_ps(one, ss));
  const __m512 tab2 = _mm512_mul_ps(vv, _mm512_sub_ps(one, _mm512_mul_ps(ss, f)));
  const __m512 tab3 = _mm512_sub_ps(_mm512_add_ps(tab0, tab1), tab2);
  __m512i sector = _mm512_cvttps_epi32(pre);  // 0..8
  sector = _mm512_mask_sub_epi32(sector, _mm512_cmpgt_epi32_mask(sector, _mm512_set1_epi32(5)), sector,
                                 _mm512_set1_epi32(6));
  // Which tab (0..3) each channel takes per sector: (b, g, r) = {1,3,0} {1,0,2} {3,0,1} {0,2,1} {0,1,3} {2,1,0}.
  const __m512 bf = Pick(_mm512_setr_epi32(1, 1, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), sector, tab0, tab1, tab2,
                         tab3);
  const __m512 gf = Pick(_mm512_setr_epi32(3, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), sector, tab0, tab1, tab2,
                         tab3);
  const __m512 rf = Pick(_mm512_setr_epi32(0, 2, 1, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), sector, tab0, tab1, tab2,
                         tab3);
  const __m512 k255 = _mm512_set1_ps(255.0f);
  // Every tab is in [0, v'/255], so the truncated products are already in 0..255.
  *ro = _mm512_cvttps_epi32(_mm512_mul_ps(rf, k255));
  *go = _mm512_cvttps_epi32(_mm512_mul_ps(gf, k255));
  *bo = _mm512_cvttps_epi32(_mm512_mul_ps(bf, k255));
}

// Byte j of pixel i (channel j) of 48 loaded bytes -> byte 0 of int32 lane i; the other three bytes
// are zero.
YC_AVX512 inline void Unpack16(__m512i raw, __m512i* r, __m512i* g, __m512i* b) {
  const __m512i red = _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45);
  constexpr __mmask64 kLowBytes = 0x1111111111111111ull;
  *r = _mm512_maskz_permutexvar_epi8(kLowBytes, red, raw);
  *g = _mm512_maskz_permutexvar_epi8(kLowBytes, _mm512_add_epi32(red, _mm512_set1_epi32(1)), raw);
  *b = _mm512_maskz_permutexvar_epi8(kLowBytes, _mm512_add_epi32(red, _mm512_set1_epi32(2)), raw);
}

// Sixteen pixels of the warp's 114 fill (about an eighth of a mosaic sample's blocks) all map to one
// grey; those blocks are written from the scalar form's value for (114, 114, 114).
constexpr uint8_t kFillLevel = 114;
YC_AVX512 inline bool AllFill(__m512i raw) {
  return _mm512_mask_cmpneq_epi8_mask(k48Bytes, raw, _mm512_set1_epi8(static_cast<char>(kFillLevel))) == 0;
}
inline uint8_t FillOutput(const HsvLut& lut, const DivTables& T) {
  const uint8_t fill[3] = {kFillLevel, kFillLevel, kFillLevel};
  uint8_t r, g, b;
  PixelScalar(lut, T, fill, &r, &g, &b);
  return r;  // grey in, grey out: s = 0 makes every channel v'
}

template <bool kDivide, bool kArithmetic>
YC_AVX512 void PlanarLoop(const HsvLut& lut, const DivTables& T, const uint8_t* src, uint8_t* ro, uint8_t* go,
                          uint8_t* bo, size_t n) {
  const __m128i fill_out = _mm_set1_epi8(static_cast<char>(FillOutput(lut, T)));
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i raw = _mm512_maskz_loadu_epi8(k48Bytes, src + 3 * i);
    if (AllFill(raw)) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(ro + i), fill_out);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(go + i), fill_out);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(bo + i), fill_out);
      continue;
    }
    __m512i r, g, b;
    Unpack16(raw, &r, &g, &b);
    Kernel16<kDivide, kArithmetic>(lut, T, r, g, b, &r, &g, &b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(ro + i), _mm512_cvtepi32_epi8(r));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(go + i), _mm512_cvtepi32_epi8(g));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bo + i), _mm512_cvtepi32_epi8(b));
  }
  PlanarScalar(lut, T, src + 3 * i, ro + i, go + i, bo + i, n - i);
}

template <bool kDivide, bool kArithmetic>
YC_AVX512 void InterleavedLoop(const HsvLut& lut, const DivTables& T, const uint8_t* src, uint8_t* dst, size_t n) {
  // Dwords (r | g << 8 | b << 16) -> 48 packed bytes: byte k takes byte k % 3 of dword k / 3.
  alignas(64) static const uint8_t kCompact[64] = {
      0,  1,  2,  4,  5,  6,  8,  9,  10, 12, 13, 14, 16, 17, 18, 20, 21, 22, 24, 25, 26, 28,
      29, 30, 32, 33, 34, 36, 37, 38, 40, 41, 42, 44, 45, 46, 48, 49, 50, 52, 53, 54, 56, 57,
      58, 60, 61, 62, 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0};
  const __m512i compact = _mm512_load_si512(kCompact);
  const __m512i fill_out = _mm512_set1_epi8(static_cast<char>(FillOutput(lut, T)));
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i raw = _mm512_maskz_loadu_epi8(k48Bytes, src + 3 * i);
    __m512i packed = fill_out;
    if (!AllFill(raw)) {
      __m512i r, g, b;
      Unpack16(raw, &r, &g, &b);
      Kernel16<kDivide, kArithmetic>(lut, T, r, g, b, &r, &g, &b);
      const __m512i rgb = _mm512_or_si512(r, _mm512_or_si512(_mm512_slli_epi32(g, 8), _mm512_slli_epi32(b, 16)));
      packed = _mm512_permutexvar_epi8(compact, rgb);
    }
    // Exactly the 48 bytes loaded (dst may alias src), without a masked store: those stall the next
    // iteration's load of the same cache line.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 3 * i), _mm512_castsi512_si256(packed));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * i + 32), _mm512_extracti32x4_epi32(packed, 2));
  }
  InterleavedScalar(lut, T, src + 3 * i, dst + 3 * i, n - i);
}

}  // namespace

const Loops& Avx512Loops() {
  static const Loops loops = YC_HSV_LOOPS(PlanarLoop, InterleavedLoop);
  return loops;
}

}  // namespace yc::hsv_kernel

#endif  // x86
