// Ultralytics' bgr hyperparameter (ultralytics/data/augment.py Format._format_img): its images come out
// of OpenCV in BGR and are flipped to RGB unless `random.uniform(0, 1) > bgr` fails, so with
// probability bgr a train image reaches the model in BGR order (validation never: dataset.py builds
// its Format with bgr 0 when not augmenting). Our records are RGB, so here the same draw swaps red and
// blue. One draw per sample, the last of its plan (loader/render/plan.h), made even when bgr is 0, as
// Ultralytics draws it for every image.
#pragma once

#include <cstddef>
#include <cstdint>

#include <opencv2/core.hpp>

#include "loader/base/rng.h"

namespace yc {

// true: this sample's channels go out in BGR order. bgr = 0 never fires.
bool DrawBgr(Rng& rng, double bgr);

// Swaps the first and third byte of each of `pixels` HWC pixels in place (the fast path, on a batch row run).
void SwapRedBlue(uint8_t* hwc, size_t pixels);

// The reference: OpenCV's channel reordering of a whole CV_8UC3 image, in place.
void SwapRedBlueReference(cv::Mat* image);

}  // namespace yc
