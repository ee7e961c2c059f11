// Box geometry shared by the model head, the loss, NMS and the metrics: format conversion, IoU/CIoU,
// anchor grids and the distance <-> box transforms of an anchor-free head. Tensor ops only, any device,
// no host syncs. Formats: xyxy = corners, xywh = centre + size, always in the last dimension.
#pragma once

#include <vector>

#include <ATen/ATen.h>

namespace yc::trainer {

at::Tensor XywhToXyxy(const at::Tensor& xywh);
at::Tensor XyxyToXywh(const at::Tensor& xyxy);

// Element-wise (broadcasting) overlap of two xyxy box tensors (..., 4) -> (...). Plain IoU, or CIoU
// (IoU minus centre-distance and aspect-ratio penalties) with the aspect term's alpha detached, exactly
// as Ultralytics' bbox_iou(xywh=False, CIoU=True), eps 1e-7 included.
enum class IoUKind { kIoU, kCIoU };
at::Tensor BboxIoU(const at::Tensor& box1, const at::Tensor& box2, IoUKind kind, double eps = 1e-7);

// Pairwise IoU matrix of xyxy boxes a (N, 4) and b (M, 4) -> (N, M), as Ultralytics' box_iou.
at::Tensor BoxIoUMatrix(const at::Tensor& a, const at::Tensor& b, double eps = 1e-7);

// Cell-centre anchor points of every level, in grid units (x, y), and each anchor's stride.
struct Anchors {
  at::Tensor points;   // (A, 2)
  at::Tensor strides;  // (A, 1)
};
// Levels are given by their (H, W); points are (x + offset, y + offset), row-major per level.
Anchors MakeAnchors(const std::vector<std::pair<int64_t, int64_t>>& level_hw, const std::vector<double>& strides,
                    at::TensorOptions options, double offset = 0.5);
// Same, taking (H, W) from (B, C, H, W) feature maps and dtype/device from the first one.
Anchors MakeAnchors(const std::vector<at::Tensor>& feats, const std::vector<double>& strides, double offset = 0.5);

// Same values computed from the feature maps themselves (ones_like + cumsum, no arange with a device):
// a traced graph built with it names no device, so a TorchScript file traced on one device runs on
// any (the Detect head uses it while tracing; trainer/io/torchscript_export.h).
Anchors MakeAnchorsFromInputs(const std::vector<at::Tensor>& feats, const std::vector<double>& strides,
                              double offset = 0.5);

// (left, top, right, bottom) distances around anchor points -> xyxy (or xywh) boxes along `dim`.
at::Tensor Dist2Bbox(const at::Tensor& distance, const at::Tensor& anchor_points, bool xywh, int64_t dim = -1);
// xyxy boxes -> (l, t, r, b) distances from the anchor points, clamped to [0, reg_max - 0.01].
at::Tensor Bbox2Dist(const at::Tensor& anchor_points, const at::Tensor& bbox, double reg_max);

}  // namespace yc::trainer
