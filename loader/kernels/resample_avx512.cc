#include "loader/kernels/resample_avx512.h"

#include <algorithm>
#include <cstring>

#include "loader/base/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define YC_RESAMPLE_X86 1
#define YC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#endif

namespace yc {

namespace {

constexpr int kBlock = 16;           // output pixels per step
constexpr size_t kBlockBytes = 256;  // permute A | permute B | weights A | weights B (+ padding)
constexpr int kWindowBytes = 128;    // the two source registers vpermi2b picks from

uint64_t LoadMask(int64_t bytes) {
  if (bytes <= 0) return 0;
  return bytes >= 64 ? ~uint64_t{0} : (uint64_t{1} << bytes) - 1;
}

}  // namespace

bool ResampleAvx512Available() { return ActiveSimdLevel() == SimdLevel::kAvx512; }

void PlanHorizontalAvx512(const int32_t* byte_offset, const int32_t* frac, int n, size_t row_bytes,
                          HorizontalTables* t) {
  const int blocks = n / kBlock;
  t->columns = blocks * kBlock;
  t->storage.resize(blocks * kBlockBytes + 64);
  t->aligned_offset = (64 - reinterpret_cast<uintptr_t>(t->storage.data()) % 64) % 64;
  t->window.assign(blocks, -1);
  t->masks.assign(2 * static_cast<size_t>(blocks), 0);
  for (int j = 0; j < blocks; ++j) {
    const int32_t* off = byte_offset + j * kBlock;
    // Offsets are monotonic (increasing, or decreasing for a mirrored map).
    const int32_t lo = std::min(off[0], off[kBlock - 1]), hi = std::max(off[0], off[kBlock - 1]) + 6;
    if (hi - lo > kWindowBytes) continue;
    uint8_t* b = t->storage.data() + t->aligned_offset + j * kBlockBytes;
    std::memset(b, 0, kBlockBytes);
    // Output value 3k + c (pixel k of the block, channel c) is the pair of bytes 2(3k + c), +1 of a
    // 96-byte layout: its two taps in the permutes (bytes 0..63: A, 64..95: B) and its two weights
    // 128 bytes further (A's weights at 128, B's at 192).
    for (int k = 0; k < kBlock; ++k) {
      const int rel = off[k] - lo;
      const int f = frac[j * kBlock + k];
      for (int c = 0; c < 3; ++c) {
        const int p = 2 * (3 * k + c);
        b[p] = static_cast<uint8_t>(rel + c);
        b[p + 1] = static_cast<uint8_t>(rel + 3 + c);
        b[128 + p] = static_cast<uint8_t>(32 - f);
        b[128 + p + 1] = static_cast<uint8_t>(f);
      }
    }
    t->window[j] = lo;
    const int64_t inside = static_cast<int64_t>(row_bytes) - lo;  // loads must not leave the row
    t->masks[2 * j] = LoadMask(inside);
    t->masks[2 * j + 1] = LoadMask(inside - 64);
  }
}

#ifdef YC_RESAMPLE_X86
YC_AVX512 static void HorizontalLoop(const uint8_t* row, const HorizontalTables& t, int16_t* h) {
  const uint8_t* tables = t.storage.data() + t.aligned_offset;
  const int blocks = t.columns / kBlock;
  for (int j = 0; j < blocks; ++j) {
    const int32_t lo = t.window[j];
    if (lo < 0) continue;
    const uint8_t* b = tables + j * kBlockBytes;
    const __m512i w0 = _mm512_maskz_loadu_epi8(t.masks[2 * j], row + lo);
    const __m512i w1 = _mm512_maskz_loadu_epi8(t.masks[2 * j + 1], row + lo + 64);
    const __m512i pairs_a = _mm512_permutex2var_epi8(w0, _mm512_load_si512(b), w1);
    const __m512i pairs_b = _mm512_permutex2var_epi8(w0, _mm512_load_si512(b + 64), w1);
    const __m512i sums_a = _mm512_maddubs_epi16(pairs_a, _mm512_load_si512(b + 128));
    const __m256i sums_b = _mm256_maddubs_epi16(_mm512_castsi512_si256(pairs_b),
                                                _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 192)));
    int16_t* out = h + 3 * kBlock * j;
    _mm512_storeu_si512(out, sums_a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32), sums_b);
  }
}

YC_AVX512 static int VerticalLoop(const int16_t* h0, const int16_t* h1, int f, int count, uint8_t* out) {
  const __m512i weights = _mm512_set1_epi32((32 - f) | (f << 16));
  const __m512i round = _mm512_set1_epi32(512);
  int i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512i a = _mm512_loadu_si512(h0 + i), b = _mm512_loadu_si512(h1 + i);
    // Per 128-bit lane: unpack lo/hi pairs (h0, h1), weight, and pack back into the original order.
    const __m512i lo_sum = _mm512_madd_epi16(_mm512_unpacklo_epi16(a, b), weights);
    const __m512i hi_sum = _mm512_madd_epi16(_mm512_unpackhi_epi16(a, b), weights);
    const __m512i lo = _mm512_srai_epi32(_mm512_add_epi32(lo_sum, round), 10);
    const __m512i hi = _mm512_srai_epi32(_mm512_add_epi32(hi_sum, round), 10);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtusepi16_epi8(_mm512_packs_epi32(lo, hi)));
  }
  return i;
}
#endif

int VerticalAvx512(const int16_t* h0, const int16_t* h1, int f, int count, uint8_t* out) {
#ifdef YC_RESAMPLE_X86
  return VerticalLoop(h0, h1, f, count, out);
#else
  (void)h0, (void)h1, (void)f, (void)count, (void)out;
  return 0;
#endif
}

void HorizontalAvx512(const uint8_t* row, const HorizontalTables& t, int16_t* h) {
#ifdef YC_RESAMPLE_X86
  HorizontalLoop(row, t, h);
#else
  (void)row, (void)t, (void)h;
#endif
}

}  // namespace yc
