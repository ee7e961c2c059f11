// Test-time augmentation (Ultralytics' augment=True; nn/tasks.py DetectionModel._predict_augment): the
// eval forward at three passes -- the image as given, left-right flipped at 0.83 scale, and at 0.67 scale
// -- each padded up to the largest stride with 0.447 (utils/torch_utils.py scale_img), their boxes mapped
// back to the input's pixels (_descale_pred), the first pass's coarsest level and the last pass's finest
// level dropped (_clip_augmented), and the rest concatenated along the anchors for one NMS.
//
//   model->eval();
//   DetectOutput out = AugmentedForward(*model, images);  // out.pred (B, 4 + nc, A') -> NonMaxSuppression
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

#include "trainer/model/detection_model.h"

namespace yc::trainer {

// Ultralytics' scale_img(img, ratio, gs=grid): (B, C, H, W) resized bilinearly (align_corners=False) to
// (int(H * ratio), int(W * ratio)), then padded right and bottom with 0.447 to ceil(H * ratio / grid) *
// grid by ceil(W * ratio / grid) * grid. ratio 1 returns `images` itself.
at::Tensor ScaleImage(const at::Tensor& images, double ratio, int64_t grid);

// The augmented eval forward of `model` (in eval mode; H and W multiples of 32, as DetectionModel::forward).
// pred: (B, 4 + nc, A') xywh boxes in the input's pixels and sigmoid scores, A' the anchors the three passes
// keep. feats: the first pass's per-level outputs (the plain forward's), for the val loss.
DetectOutput AugmentedForward(DetectionModelImpl& model, const at::Tensor& images);

}  // namespace yc::trainer
