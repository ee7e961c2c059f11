#include "trainer/loss/assigner.h"

#include <c10/core/GradMode.h>

#include "trainer/loss/assigner_kernels.h"
#include "trainer/loss/pair_metrics.h"

namespace yc::trainer {

Assignment TaskAlignedAssigner::operator()(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                                           const at::Tensor& anc_points, const at::Tensor& gt_labels,
                                           const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const {
  c10::NoGradGuard no_grad;
  const int64_t bs = pd_scores.size(0), na = pd_scores.size(1), nc = pd_scores.size(2);
  const int64_t nmax = gt_bboxes.size(1);
  Assignment out;
  if (nmax == 0) {
    out.target_labels = at::full({bs, na}, options_.num_classes, pd_scores.options().dtype(at::kLong));
    out.target_bboxes = at::zeros_like(pd_bboxes);
    out.target_scores = at::zeros_like(pd_scores);
    out.fg_mask = at::zeros({bs, na}, pd_scores.options().dtype(at::kBool));
    out.target_gt_idx = at::zeros({bs, na}, pd_scores.options().dtype(at::kLong));
    return out;
  }
  const auto fopt = pd_scores.options();
  auto labels = gt_labels.to(at::kLong).squeeze(-1).clamp(0, nc - 1);  // (B, M); pads are class 0, masked below
  auto valid_gt = mask_gt.to(at::kBool);                                // (B, M, 1)

  const int64_t k = std::min(options_.topk, na);
  if (options_.cuda_kernels && AssignerKernelsApply(pd_scores)) {  // the same steps in kernels of our own
    PairMetrics pairs = ComputePairMetricsKernel(gt_bboxes, pd_bboxes, anc_points, valid_gt, pd_scores, labels,
                                                 options_.alpha, options_.beta, options_.eps);
    auto topk_idxs = std::get<1>(pairs.align_metric.topk(k, -1, /*largest=*/true));  // (B, M, k)
    return AssignTargetsKernel(pairs, topk_idxs, labels, gt_bboxes, options_.num_classes, options_.eps);
  }

  // get_pos_mask and get_box_metrics (pair_metrics.h): the score of each box's own class at every anchor,
  // then the in-box mask, CIoU and alignment of every (box, anchor) pair.
  auto bbox_scores = pd_scores.transpose(1, 2).gather(1, labels.unsqueeze(-1).expand({bs, nmax, na}));
  PairMetrics pairs = ComputePairMetrics(gt_bboxes, pd_bboxes, anc_points, valid_gt, bbox_scores, options_.alpha,
                                         options_.beta, options_.eps);
  const at::Tensor& mask_pair = pairs.mask;        // (B, M, A)
  const at::Tensor& overlaps = pairs.overlaps;     // (B, M, A)
  at::Tensor align_metric = pairs.align_metric;    // (B, M, A)

  // select_topk_candidates: top-k anchors per box; pad rows point all k picks at anchor 0, whose count
  // then exceeds 1 and is dropped.
  auto topk_idxs = std::get<1>(align_metric.topk(k, -1, /*largest=*/true));  // (B, M, k)
  topk_idxs = topk_idxs.masked_fill(valid_gt.logical_not(), 0);
  auto count = at::zeros({bs, nmax, na}, fopt.dtype(at::kChar));
  count.scatter_add_(-1, topk_idxs, at::ones_like(topk_idxs, fopt.dtype(at::kChar)));
  auto mask_topk = count.eq(1);
  auto mask_pos = mask_topk.logical_and(mask_pair).to(fopt.dtype());  // (B, M, A) float

  // select_highest_overlaps: an anchor positive for several boxes keeps only the box of highest overlap.
  auto fg = mask_pos.sum(-2);  // (B, A)
  auto multi = fg.gt(1).unsqueeze(1).expand({bs, nmax, na});
  auto best = overlaps.argmax(1);  // (B, A)
  auto is_max = at::zeros_like(mask_pos).scatter_(1, best.unsqueeze(1), 1.0);
  mask_pos = at::where(multi, is_max, mask_pos);
  fg = mask_pos.sum(-2);
  auto target_gt_idx = mask_pos.argmax(-2);  // (B, A)

  // get_targets
  auto flat_idx = target_gt_idx + at::arange(bs, target_gt_idx.options()).unsqueeze(-1) * nmax;
  auto target_labels = labels.flatten().index_select(0, flat_idx.flatten()).view({bs, na});
  auto target_bboxes = gt_bboxes.reshape({-1, 4}).index_select(0, flat_idx.flatten()).view({bs, na, 4});
  auto fg_mask = fg.gt(0);
  auto target_scores = at::zeros({bs, na, options_.num_classes}, fopt)
                           .scatter_(2, target_labels.unsqueeze(-1), 1.0)
                           .mul_(fg_mask.unsqueeze(-1).to(fopt.dtype()));

  // Normalise: each positive's target is its alignment over the box's best alignment, times the box's
  // best overlap.
  align_metric = align_metric * mask_pos;
  auto pos_align = std::get<0>(align_metric.max(-1, /*keepdim=*/true));                 // (B, M, 1)
  auto pos_overlaps = std::get<0>((overlaps * mask_pos).max(-1, /*keepdim=*/true));     // (B, M, 1)
  auto norm = std::get<0>((align_metric * pos_overlaps / (pos_align + options_.eps)).max(-2)).unsqueeze(-1);
  out.target_labels = target_labels;
  out.target_bboxes = target_bboxes;
  out.target_scores = target_scores * norm;
  out.fg_mask = fg_mask;
  out.target_gt_idx = target_gt_idx;
  return out;
}

}  // namespace yc::trainer
