// The task-aligned assigner after its top-k (Ultralytics utils/tal.py: select_topk_candidates' count,
// select_highest_overlaps, get_targets and the normalisation), one thread at a time, as host and device
// code. The ATen version (assigner.cc) works on dense (B, M, A) masks; but each box keeps at most k anchors,
// so here each step touches only those: the k picks of each box row mark their anchors, each anchor then
// finds its box (the only one that picked it, or among several the one of highest overlap, as Ultralytics),
// and each (anchor, class) target is written once. The three steps run in order over all threads of the
// batch (assign_targets_kernel.cu; on the host, tests/trainer/loss_test.cc runs them as loops).
#pragma once

#include <cstdint>

#include "trainer/loss/kernels/pair_metric.h"

namespace yc::trainer::kernels {

struct AssignTargetsArgs {
  int64_t batch = 0, boxes = 0, anchors = 0, classes = 0, topk = 0;
  const int64_t* topk_idxs = nullptr;  // (B, M, k) anchors of each box row's top-k alignments
  const bool* inside = nullptr;        // (B, M, A) pair metrics (pair_metric.h)
  const float* overlaps = nullptr;     // (B, M, A)
  const float* align = nullptr;        // (B, M, A)
  const int64_t* labels = nullptr;     // (B, M) class of each box row
  const float* gt_boxes = nullptr;     // (B, M, 4)
  float eps = 1e-9f;                   // of the normalisation
  // Scratch, zeroed before the first step.
  int32_t* picks = nullptr;            // (B, A) how many box rows picked the anchor (it being inside them)
  int64_t* picked_by = nullptr;        // (B, A) one of those rows
  float* best_align = nullptr;         // (B, M) largest alignment among the row's positive anchors
  float* best_overlap = nullptr;       // (B, M) largest overlap among them
  // Outputs.
  int64_t* target_gt_idx = nullptr;    // (B, A)
  bool* fg_mask = nullptr;             // (B, A)
  int64_t* target_labels = nullptr;    // (B, A)
  float* target_boxes = nullptr;       // (B, A, 4)
  float* target_scores = nullptr;      // (B, A, C)
};

YC_HOST_DEVICE inline void AddOne(int32_t* counter) {
#ifdef __CUDA_ARCH__
  atomicAdd(counter, 1);
#else
  ++*counter;
#endif
}

// For values >= +0.0, whose IEEE bits order as integers do.
YC_HOST_DEVICE inline void RaiseTo(float* slot, float value) {
#ifdef __CUDA_ARCH__
  atomicMax(reinterpret_cast<int*>(slot), __float_as_int(value));
#else
  if (value > *slot) *slot = value;
#endif
}

// Step 1, one thread per (b, m, j): box row m's j-th pick marks its anchor if the anchor lies inside the
// box (pad rows are never inside; their picks are all anchor 0 in Ultralytics' version, and dropped there too).
YC_HOST_DEVICE inline void MarkPick(const AssignTargetsArgs& t, int64_t b, int64_t m, int64_t j) {
  const int64_t row = b * t.boxes + m;
  const int64_t a = t.topk_idxs[row * t.topk + j];
  if (!t.inside[row * t.anchors + a]) return;
  AddOne(&t.picks[b * t.anchors + a]);
  t.picked_by[b * t.anchors + a] = m;  // read only where one row picked the anchor
}

// Step 2, one thread per (b, a): the anchor's box row (that of highest overlap when several picked it,
// the first such row on ties, as argmax), the targets taken from it, and the row's best alignment and
// overlap among its anchors.
YC_HOST_DEVICE inline void ChooseBox(const AssignTargetsArgs& t, int64_t b, int64_t a) {
  const int64_t i = b * t.anchors + a;
  const int32_t picks = t.picks[i];
  int64_t m = 0;
  if (picks == 1) {
    m = t.picked_by[i];
  } else if (picks > 1) {
    float best = t.overlaps[(b * t.boxes) * t.anchors + a];
    for (int64_t r = 1; r < t.boxes; ++r) {
      const float v = t.overlaps[(b * t.boxes + r) * t.anchors + a];
      if (v > best) best = v, m = r;
    }
  }
  const int64_t row = b * t.boxes + m;
  t.target_gt_idx[i] = m;
  t.fg_mask[i] = picks > 0;
  t.target_labels[i] = t.labels[row];
  for (int k = 0; k < 4; ++k) t.target_boxes[4 * i + k] = t.gt_boxes[4 * row + k];
  if (picks > 0) {
    RaiseTo(&t.best_align[row], t.align[row * t.anchors + a]);
    RaiseTo(&t.best_overlap[row], t.overlaps[row * t.anchors + a]);
  }
}

// Step 3, one thread per (b, a, c): the soft one-hot target, the anchor's alignment over its box's best,
// times the box's best overlap, in its own class; zero elsewhere and for background anchors.
YC_HOST_DEVICE inline void WriteScore(const AssignTargetsArgs& t, int64_t b, int64_t a, int64_t c) {
  const int64_t i = b * t.anchors + a;
  float score = 0.0f;
  if (t.fg_mask[i] && t.target_labels[i] == c) {
    const int64_t row = b * t.boxes + t.target_gt_idx[i];
    score = t.align[row * t.anchors + a] * t.best_overlap[row] / (t.best_align[row] + t.eps);
  }
  t.target_scores[i * t.classes + c] = score;
}

}  // namespace yc::trainer::kernels
