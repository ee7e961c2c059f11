// One (box, anchor) pair of the task-aligned assigner, as host and device code: whether the anchor's
// centre lies inside the ground-truth box, the CIoU of the box with the anchor's predicted box (clamped at
// 0), and the alignment metric score^alpha * CIoU^beta (Ultralytics utils/tal.py, get_box_metrics and
// select_candidates_in_gts). The expressions are pair_metrics.cc's ATen ones, in the same order and in
// float, so the CUDA kernel (pair_metrics_kernel.cu) and the ATen ops differ only where CUDA's atan and
// pow round differently from ATen's. No LibTorch here: nvcc compiles it too.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define YC_HOST_DEVICE __host__ __device__
#else
#define YC_HOST_DEVICE
#endif

namespace yc::trainer::kernels {

struct BoxXyxy {
  float x1, y1, x2, y2;
};

struct PairMetricParams {
  float alpha;       // exponent of the class score
  float beta;        // exponent of the CIoU
  float inside_eps;  // an anchor centre is inside when its least distance to an edge exceeds this
};

struct PairMetric {
  bool inside;   // anchor centre inside a real box
  float overlap; // CIoU clamped at 0 where inside, else 0
  float align;   // score^alpha * overlap^beta where inside, else 0
};

YC_HOST_DEVICE inline float MaxOf(float a, float b) { return a > b ? a : b; }
YC_HOST_DEVICE inline float MinOf(float a, float b) { return a < b ? a : b; }

// ATen's pow with a scalar exponent takes these exponents apart (sqrt, square, cube); so does this.
YC_HOST_DEVICE inline float PowScalar(float x, float e) {
  if (e == 0.5f) return sqrtf(x);
  if (e == 1.0f) return x;
  if (e == 2.0f) return x * x;
  if (e == 3.0f) return x * x * x;
  return powf(x, e);
}

// CIoU of box 1 (the ground truth) with box 2 (the prediction), as box_ops.cc's BboxIoU (eps 1e-7).
YC_HOST_DEVICE inline float CompleteIoU(const BoxXyxy& g, const BoxXyxy& p) {
  const float eps = 1e-7f;  // ATen casts the double scalars of pair_metrics.cc to float the same way
  const float w1 = g.x2 - g.x1, h1 = g.y2 - g.y1 + eps, w2 = p.x2 - p.x1, h2 = p.y2 - p.y1 + eps;
  const float inter = MaxOf(MinOf(g.x2, p.x2) - MaxOf(g.x1, p.x1), 0.0f) *
                      MaxOf(MinOf(g.y2, p.y2) - MaxOf(g.y1, p.y1), 0.0f);
  const float iou = inter / (w1 * h1 + w2 * h2 - inter + eps);
  const float cw = MaxOf(g.x2, p.x2) - MinOf(g.x1, p.x1);
  const float ch = MaxOf(g.y2, p.y2) - MinOf(g.y1, p.y1);
  const float c2 = cw * cw + ch * ch + eps;
  const float dx = p.x1 + p.x2 - g.x1 - g.x2, dy = p.y1 + p.y2 - g.y1 - g.y2;
  const float rho2 = (dx * dx + dy * dy) / 4.0f;
  const float da = atanf(w2 / h2) - atanf(w1 / h1);
  const float v = da * da * static_cast<float>(4.0 / (M_PI * M_PI));
  return iou - (rho2 / c2 + v * (v / (v - iou + static_cast<float>(1.0 + 1e-7))));
}

YC_HOST_DEVICE inline PairMetric ComputePairMetric(const BoxXyxy& gt, bool real_box, const BoxXyxy& pd, float ax,
                                                   float ay, float score, const PairMetricParams& p) {
  PairMetric m;
  m.inside = real_box && ax - gt.x1 > p.inside_eps && ay - gt.y1 > p.inside_eps && gt.x2 - ax > p.inside_eps &&
             gt.y2 - ay > p.inside_eps;
  m.overlap = m.inside ? MaxOf(CompleteIoU(gt, pd), 0.0f) : 0.0f;
  m.align = PowScalar(m.inside ? score : 0.0f, p.alpha) * PowScalar(m.overlap, p.beta);
  return m;
}

struct PairMetricsArgs {
  int64_t batch = 0, boxes = 0, anchors = 0, classes = 0;
  const float* gt_boxes = nullptr;   // (B, M, 4) xyxy, contiguous
  const bool* real_box = nullptr;    // (B, M): false for pad rows
  const int64_t* labels = nullptr;   // (B, M) class of each box, in [0, classes)
  const float* pd_boxes = nullptr;   // (B, A, 4) xyxy, contiguous, same units as gt_boxes
  const float* pd_scores = nullptr;  // (B, A, classes) sigmoid scores, contiguous
  const float* anchor_points = nullptr;  // (A, 2) anchor centres, contiguous
  PairMetricParams params{};
  bool* inside = nullptr;            // (B, M, A) outputs
  float* overlaps = nullptr;
  float* align = nullptr;
};

// One thread's work over the whole batch: box row `row` (b * M + m) with anchor `a`, its class score read
// at the box's label, the three values written at (row, a).
YC_HOST_DEVICE inline void WritePairMetric(const PairMetricsArgs& t, int64_t row, int64_t a) {
  const int64_t b = row / t.boxes;
  const float* g = t.gt_boxes + 4 * row;
  const float* q = t.pd_boxes + 4 * (b * t.anchors + a);
  const float score = t.pd_scores[(b * t.anchors + a) * t.classes + t.labels[row]];
  const PairMetric m = ComputePairMetric({g[0], g[1], g[2], g[3]}, t.real_box[row], {q[0], q[1], q[2], q[3]},
                                         t.anchor_points[2 * a], t.anchor_points[2 * a + 1], score, t.params);
  const int64_t out = row * t.anchors + a;
  t.inside[out] = m.inside;
  t.overlaps[out] = m.overlap;
  t.align[out] = m.align;
}

}  // namespace yc::trainer::kernels
