#include "loader/ops/channel_order.h"

#include <utility>

#include <opencv2/imgproc.hpp>

namespace yc {

bool DrawBgr(Rng& rng, double bgr) {
  const double u = rng.Random();
  return bgr > 0 && !(u > bgr);
}

void SwapRedBlue(uint8_t* hwc, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i) std::swap(hwc[3 * i], hwc[3 * i + 2]);
}

void SwapRedBlueReference(cv::Mat* image) { cv::cvtColor(*image, *image, cv::COLOR_RGB2BGR); }

}  // namespace yc
