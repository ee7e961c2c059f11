// Ultralytics' multi_scale (models/yolo/detect/train.py DetectionTrainer.preprocess_batch): each train batch
// at a random size, sz = randrange(int(imgsz * 0.5), int(imgsz * 1.5 + stride)) // stride * stride, the
// images resized by sf = sz / max(h, w) to ceil(side * sf / stride) * stride per side with bilinear
// interpolation (align_corners=False), left as they are when sf == 1. The labels are normalised, so they
// stay. Ultralytics draws sz from Python's global `random`; here it is a hash of (seed, iteration), so a
// run is the same at any thread count, on every rank, and after --resume.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace yc::trainer {

// The size for global iteration `ni` (at least `stride`: for imgsz 32 Ultralytics' range reaches 0).
int64_t MultiScaleSize(int64_t imgsz, int64_t stride, uint64_t seed, int64_t ni);

// (B, C, H, W) float images at `size` as Ultralytics resizes them (their memory format kept).
at::Tensor MultiScaleImages(const at::Tensor& images, int64_t size, int64_t stride);

}  // namespace yc::trainer
