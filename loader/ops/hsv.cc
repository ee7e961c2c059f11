#include "loader/ops/hsv.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "loader/kernels/hsv_simd.h"

namespace yc {

HsvGains DrawHsvGains(Rng& rng, const AugmentHyp& hyp) {
  HsvGains g;
  if (hyp.hsv_h == 0 && hyp.hsv_s == 0 && hyp.hsv_v == 0) return g;
  g.enabled = true;
  g.h = rng.Uniform(-1, 1) * hyp.hsv_h;
  g.s = rng.Uniform(-1, 1) * hyp.hsv_s;
  g.v = rng.Uniform(-1, 1) * hyp.hsv_v;
  return g;
}

HsvLut MakeHsvLut(const HsvGains& g) {
  HsvLut lut;
  for (int x = 0; x < 256; ++x) {
    double h = std::fmod(x + g.h * 180.0, 180.0);  // Python/NumPy % is non-negative for a positive divisor
    if (h < 0) h += 180.0;
    lut.h[x] = static_cast<uint8_t>(static_cast<int>(h));
    lut.s[x] = static_cast<uint8_t>(std::clamp(x * (1.0 + g.s), 0.0, 255.0));
    lut.v[x] = static_cast<uint8_t>(std::clamp(x * (1.0 + g.v), 0.0, 255.0));
  }
  lut.s[0] = 0;  // "prevent pure white changing color"
  lut.s_mul = 1.0 + g.s;
  lut.v_mul = 1.0 + g.v;
  PrepareHsvSimd(&lut);
  return lut;
}

namespace {
void LookupHsv(const HsvLut& lut, uint8_t* hsv, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i, hsv += 3) {
    hsv[0] = lut.h[hsv[0]];
    hsv[1] = lut.s[hsv[1]];
    hsv[2] = lut.v[hsv[2]];
  }
}
}  // namespace

void ApplyHsvToPlanes(const HsvLut& lut, const uint8_t* src, size_t pixels, uint8_t* r, uint8_t* g, uint8_t* b,
                      uint8_t* scratch) {
  if (HsvSimdAvailable()) {
    HsvSimdPlanar(lut, src, r, g, b, pixels);
    return;
  }
  for (size_t done = 0; done < pixels;) {
    const size_t n = std::min(kHsvChunkPixels, pixels - done);
    uint8_t* rgb = scratch + kHsvChunkPixels * 3;
    ApplyHsv(lut, src + done * 3, rgb, n, scratch);
    const cv::Mat in(1, static_cast<int>(n), CV_8UC3, rgb);
    cv::Mat planes[3] = {cv::Mat(1, static_cast<int>(n), CV_8UC1, r + done),
                         cv::Mat(1, static_cast<int>(n), CV_8UC1, g + done),
                         cv::Mat(1, static_cast<int>(n), CV_8UC1, b + done)};
    cv::split(in, planes);
    done += n;
  }
}

void ApplyHsvReference(const HsvLut& lut, cv::Mat* rgb) {
  cv::Mat hsv;
  cv::cvtColor(*rgb, hsv, cv::COLOR_RGB2HSV);
  for (int y = 0; y < hsv.rows; ++y) LookupHsv(lut, hsv.ptr<uint8_t>(y), static_cast<size_t>(hsv.cols));
  cv::cvtColor(hsv, *rgb, cv::COLOR_HSV2RGB);
}

void ApplyHsv(const HsvLut& lut, const uint8_t* src, uint8_t* dst, size_t pixels, uint8_t* hsv) {
  if (HsvSimdAvailable()) {
    HsvSimdInterleaved(lut, src, dst, pixels);
    return;
  }
  for (size_t done = 0; done < pixels;) {
    const int n = static_cast<int>(std::min(kHsvChunkPixels, pixels - done));
    const cv::Mat in(1, n, CV_8UC3, const_cast<uint8_t*>(src + done * 3));
    cv::Mat buf(1, n, CV_8UC3, hsv);
    cv::Mat out(1, n, CV_8UC3, dst + done * 3);
    cv::cvtColor(in, buf, cv::COLOR_RGB2HSV);
    LookupHsv(lut, hsv, static_cast<size_t>(n));
    cv::cvtColor(buf, out, cv::COLOR_HSV2RGB);
    done += static_cast<size_t>(n);
  }
}

}  // namespace yc
