// The fused HSV kernel with AVX2, eight pixels a step (hsv_kernel.h).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>

#include "loader/kernels/hsv_kernel.h"

namespace yc::hsv_kernel {

namespace {

// Per lane, tabs[table[sector]]: the index comes from a lane permute, its two bits drive two blends.
__attribute__((target("avx2"))) inline __m256 Pick(__m256i table, __m256i sector, __m256 t0, __m256 t1, __m256 t2,
                                                   __m256 t3) {
  const __m256i idx = _mm256_permutevar8x32_epi32(table, sector);
  const __m256 bit0 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 31));
  const __m256 bit1 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 30));
  return _mm256_blendv_ps(_mm256_blendv_ps(t0, t1, bit0), _mm256_blendv_ps(t2, t3, bit0), bit1);
}

// Eight pixels: RGB (int32 lanes, 0..255) -> adjusted RGB (int32 lanes). kDivide: the division
// tables by float division (DivTables::float_division_exact); kArithmetic: the LUTs as arithmetic
// (HsvLut::arithmetic). Both replace gathers, which dominate the kernel otherwise.
template <bool kDivide, bool kArithmetic>
__attribute__((target("avx2"))) inline void Kernel8(const HsvLut& L, const DivTables& T, __m256i r, __m256i g,
                                                    __m256i b, __m256i* ro, __m256i* go, __m256i* bo) {
  const __m256i v = _mm256_max_epi32(_mm256_max_epi32(r, g), b);
  const __m256i vmin = _mm256_min_epi32(_mm256_min_epi32(r, g), b);
  const __m256i diff = _mm256_sub_epi32(v, vmin);
  const __m256i half = _mm256_set1_epi32(2048);
  // v = 0 (and diff = 0 below) divide by zero; the product with diff = 0 / hnum = 0 is still 0.
  const __m256i sdiv = kDivide ? _mm256_cvtps_epi32(_mm256_div_ps(_mm256_set1_ps(1044480.0f), _mm256_cvtepi32_ps(v)))
                               : _mm256_i32gather_epi32(T.sdiv, v, 4);
  const __m256i s = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, sdiv), half), 12);
  const __m256i vr = _mm256_cmpeq_epi32(v, r), vg = _mm256_cmpeq_epi32(v, g);
  const __m256i h_r = _mm256_sub_epi32(g, b);
  const __m256i h_g = _mm256_add_epi32(_mm256_sub_epi32(b, r), _mm256_slli_epi32(diff, 1));
  const __m256i h_b = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_slli_epi32(diff, 2));
  const __m256i hnum = _mm256_blendv_epi8(_mm256_blendv_epi8(h_b, h_g, vg), h_r, vr);
  const __m256i hdiv = kDivide ? _mm256_cvtps_epi32(_mm256_div_ps(_mm256_set1_ps(122880.0f), _mm256_cvtepi32_ps(diff)))
                               : _mm256_i32gather_epi32(T.hdiv, diff, 4);
  __m256i h = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(hnum, hdiv), half), 12);
  h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), h), _mm256_set1_epi32(180)));
  h = _mm256_and_si256(h, _mm256_set1_epi32(255));

  // LUTs, then OpenCV's HSV2RGB_simd.
  const __m256 inv255 = _mm256_set1_ps(1.0f / 255.0f);
  __m256 hh, ss, vv;
  if (kArithmetic) {
    __m256i h2 = _mm256_add_epi32(h, _mm256_set1_epi32(L.hue_shift));  // h in 0..179, shift in 0..179
    h2 = _mm256_sub_epi32(h2, _mm256_and_si256(_mm256_cmpgt_epi32(h2, _mm256_set1_epi32(179)), _mm256_set1_epi32(180)));
    hh = _mm256_mul_ps(_mm256_cvtepi32_ps(h2), _mm256_set1_ps(6.0f / 180.0f));
    const __m256 k255 = _mm256_set1_ps(255.0f);
    const __m256 s2 = _mm256_min_ps(_mm256_round_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(L.s_gain)),
                                                    _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC),
                                    k255);
    const __m256 v2 = _mm256_min_ps(_mm256_round_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(L.v_gain)),
                                                    _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC),
                                    k255);
    ss = _mm256_mul_ps(s2, inv255);
    vv = _mm256_mul_ps(v2, inv255);
  } else {
    hh = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_i32gather_epi32(L.h32, h, 4)), _mm256_set1_ps(6.0f / 180.0f));
    ss = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_i32gather_epi32(L.s32, s, 4)), inv255);
    vv = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_i32gather_epi32(L.v32, v, 4)), inv255);
  }
  const __m256 pre = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(hh));
  const __m256 f = _mm256_sub_ps(hh, pre);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 tab0 = vv;
  const __m256 tab1 = _mm256_mul_ps(vv, _mm256_sub_ps(one, ss));
  const __m256 tab2 = _mm256_mul_ps(vv, _mm256_sub_ps(one, _mm256_mul_ps(ss, f)));
  // v (1 - s (1 - f)) = tab0 + tab1 - tab2; may differ from OpenCV's product in the last bit.
  const __m256 tab3 = _mm256_sub_ps(_mm256_add_ps(tab0, tab1), tab2);
  __m256i sector = _mm256_cvttps_epi32(pre);  // 0..8
  sector = _mm256_sub_epi32(sector,
                            _mm256_and_si256(_mm256_cmpgt_epi32(sector, _mm256_set1_epi32(5)), _mm256_set1_epi32(6)));
  // Which tab (0..3) each channel takes per sector: (b, g, r) = {1,3,0} {1,0,2} {3,0,1} {0,2,1} {0,1,3} {2,1,0}.
  const __m256 bf = Pick(_mm256_setr_epi32(1, 1, 3, 0, 0, 2, 0, 0), sector, tab0, tab1, tab2, tab3);
  const __m256 gf = Pick(_mm256_setr_epi32(3, 0, 0, 2, 1, 1, 0, 0), sector, tab0, tab1, tab2, tab3);
  const __m256 rf = Pick(_mm256_setr_epi32(0, 2, 1, 1, 3, 0, 0, 0), sector, tab0, tab1, tab2, tab3);
  const __m256 k255 = _mm256_set1_ps(255.0f);
  // Every tab is in [0, v'/255], so the truncated products are already in 0..255.
  *ro = _mm256_cvttps_epi32(_mm256_mul_ps(rf, k255));
  *go = _mm256_cvttps_epi32(_mm256_mul_ps(gf, k255));
  *bo = _mm256_cvttps_epi32(_mm256_mul_ps(bf, k255));
}

// Loads pixels i..i+7 (24 bytes; reads 28) as three int32 vectors: lane 0 of the 256-bit register
// holds pixels 0..3, lane 1 pixels 4..7, and per-lane byte shuffles pick each channel.
__attribute__((target("avx2"))) inline void Load8(const uint8_t* p, __m256i* r, __m256i* g, __m256i* b) {
  const __m256i raw =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12)), 1);
  const __m256i mr = _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1, 0, -1, -1, -1, 3, -1,
                                      -1, -1, 6, -1, -1, -1, 9, -1, -1, -1);
  const __m256i mg = _mm256_setr_epi8(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1, 1, -1, -1, -1, 4, -1,
                                      -1, -1, 7, -1, -1, -1, 10, -1, -1, -1);
  const __m256i mb = _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1, 2, -1, -1, -1, 5, -1,
                                      -1, -1, 8, -1, -1, -1, 11, -1, -1, -1);
  *r = _mm256_shuffle_epi8(raw, mr);
  *g = _mm256_shuffle_epi8(raw, mg);
  *b = _mm256_shuffle_epi8(raw, mb);
}

// 8 int32 lanes (0..255) -> 8 bytes.
__attribute__((target("avx2"))) inline __m128i Narrow8(__m256i x) {
  const __m256i packed = _mm256_packus_epi16(_mm256_packus_epi32(x, x), _mm256_setzero_si256());
  // lane 0 holds bytes 0..3 (then copies), lane 1 bytes 4..7: gather dwords 0 and 4.
  const __m256i joined = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
  return _mm256_castsi256_si128(joined);
}

// Leaves at least this many pixels to the scalar tail, so the 28-byte loads and 16-byte stores of the
// last vector step stay inside the buffers.
constexpr size_t kTail = 10;

template <bool kDivide, bool kArithmetic>
__attribute__((target("avx2"))) void PlanarLoop(const HsvLut& lut, const DivTables& T, const uint8_t* src, uint8_t* ro,
                                                uint8_t* go, uint8_t* bo, size_t n) {
  const HsvLut& L = lut;
  size_t i = 0;
  for (; i + 8 + kTail <= n; i += 8) {
    __m256i r, g, b;
    Load8(src + 3 * i, &r, &g, &b);
    Kernel8<kDivide, kArithmetic>(L, T, r, g, b, &r, &g, &b);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(ro + i), Narrow8(r));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(go + i), Narrow8(g));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(bo + i), Narrow8(b));
  }
  PlanarScalar(lut, T, src + 3 * i, ro + i, go + i, bo + i, n - i);
}

template <bool kDivide, bool kArithmetic>
__attribute__((target("avx2"))) void InterleavedLoop(const HsvLut& lut, const DivTables& T, const uint8_t* src,
                                                     uint8_t* dst, size_t n) {
  const HsvLut& L = lut;
  // Per 128-bit lane: dwords (r | g << 8 | b << 16) -> 12 packed bytes.
  const __m256i compact = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6, 8,
                                           9, 10, 12, 13, 14, -1, -1, -1, -1);
  size_t i = 0;
  for (; i + 8 + kTail <= n; i += 8) {
    __m256i r, g, b;
    Load8(src + 3 * i, &r, &g, &b);
    Kernel8<kDivide, kArithmetic>(L, T, r, g, b, &r, &g, &b);
    const __m256i rgb = _mm256_or_si256(r, _mm256_or_si256(_mm256_slli_epi32(g, 8), _mm256_slli_epi32(b, 16)));
    const __m256i packed = _mm256_shuffle_epi8(rgb, compact);
    // dst may alias src. The first store spills 4 bytes into pixels i+4.., already loaded and then
    // rewritten by the second store, which writes exactly 12 bytes so pixel i+8 is left intact.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * i), _mm256_castsi256_si128(packed));
    const __m128i hi = _mm256_extracti128_si256(packed, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + 3 * i + 12), hi);
    const int32_t last = _mm_extract_epi32(hi, 2);
    std::memcpy(dst + 3 * i + 20, &last, 4);
  }
  InterleavedScalar(lut, T, src + 3 * i, dst + 3 * i, n - i);
}

}  // namespace

const Loops& Avx2Loops() {
  static const Loops loops = YC_HSV_LOOPS(PlanarLoop, InterleavedLoop);
  return loops;
}

}  // namespace yc::hsv_kernel

#endif  // x86
