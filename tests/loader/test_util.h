// Helpers shared by the loader tests: image comparison and hashing.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <opencv2/core.hpp>
#include <vector>

#include "loader/base/simd.h"
#include "loader/batch.h"

namespace yc::testing {

// Caps the x86 SIMD kernels at `level` for a scope (simd.h), then restores the previous cap.
struct ScopedSimdCap {
  explicit ScopedSimdCap(SimdLevel level) : saved_(SimdCap()) { SetSimdCap(level); }
  ~ScopedSimdCap() { SetSimdCap(saved_); }
  ScopedSimdCap(const ScopedSimdCap&) = delete;
  ScopedSimdCap& operator=(const ScopedSimdCap&) = delete;

 private:
  SimdLevel saved_;
};

// Switches the x86 SIMD kernels off for a scope when `off` (the portable fallbacks run instead).
struct ScopedNoSimd : ScopedSimdCap {
  explicit ScopedNoSimd(bool off = true) : ScopedSimdCap(off ? SimdLevel::kNone : SimdCap()) {}
};
constexpr SimdLevel kAllSimdLevels[] = {SimdLevel::kNone, SimdLevel::kAvx2, SimdLevel::kAvx512};

struct ImageDiff {
  double mean_abs = 0;  // mean over all channel values
  int max_abs = 0;
  double frac_over_2 = 0;  // fraction of values differing by more than 2 levels
};

inline ImageDiff CompareImages(const cv::Mat& a, const cv::Mat& b) {
  ImageDiff d;
  CV_Assert(a.size() == b.size() && a.type() == b.type());
  double sum = 0;
  size_t over = 0, count = 0;
  for (int y = 0; y < a.rows; ++y) {
    const uint8_t* pa = a.ptr<uint8_t>(y);
    const uint8_t* pb = b.ptr<uint8_t>(y);
    for (int x = 0; x < a.cols * a.channels(); ++x) {
      const int diff = std::abs(int(pa[x]) - int(pb[x]));
      sum += diff;
      d.max_abs = std::max(d.max_abs, diff);
      over += diff > 2;
      ++count;
    }
  }
  d.mean_abs = sum / count;
  d.frac_over_2 = static_cast<double>(over) / count;
  return d;
}

// FNV-1a over a batch's image bytes, labels and record ids.
inline uint64_t HashBatch(const Batch& b) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, size_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(b.images, b.bytes());
  mix(b.labels.data(), b.labels.size() * sizeof(float));
  for (const SampleInfo& s : b.samples) mix(&s.record, sizeof(s.record));
  mix(&b.height, sizeof(b.height));
  mix(&b.width, sizeof(b.width));
  return h;
}

// Image i of a batch as an HWC RGB Mat (copied out of either layout).
inline cv::Mat BatchImage(const Batch& b, int i) {
  cv::Mat out(b.height, b.width, CV_8UC3);
  const uint8_t* src = b.image(i);
  const size_t plane = static_cast<size_t>(b.height) * b.width;
  for (int y = 0; y < b.height; ++y)
    for (int x = 0; x < b.width; ++x)
      for (int c = 0; c < 3; ++c) {
        const size_t p = static_cast<size_t>(y) * b.width + x;
        out.ptr<uint8_t>(y)[x * 3 + c] = b.layout == ImageLayout::kNHWC ? src[p * 3 + c] : src[c * plane + p];
      }
  return out;
}

}  // namespace yc::testing
