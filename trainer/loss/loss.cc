#include "trainer/loss/loss.h"

#include <algorithm>
#include <string>

#include "trainer/loss/box_buckets.h"
#include "trainer/runtime/autocast.h"
#include "trainer/model/box_ops.h"
#include "trainer/model/sync_batch_norm.h"

namespace yc::trainer {

Result<int64_t> MaxBoxesPerImage(const at::Tensor& labels_cpu, int64_t batch_size, int64_t nc) {
  if (!labels_cpu.defined() || labels_cpu.numel() == 0) return int64_t{0};
  if (labels_cpu.dim() != 2 || labels_cpu.size(1) != 6) {
    return Status::InvalidArgument("label table: expected (N, 6) [batch_idx, cls, cx, cy, w, h], got " +
                                   std::to_string(labels_cpu.dim()) + "-d tensor");
  }
  auto table = labels_cpu.to(at::kCPU).to(at::kDouble).contiguous();
  auto idx = table.select(1, 0).to(at::kLong).contiguous();
  auto cls = table.select(1, 1).contiguous();
  std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(batch_size, 0)), 0);
  const int64_t* p = idx.data_ptr<int64_t>();
  const double* c = cls.data_ptr<double>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    if (nc > 0 && !(c[i] >= 0 && c[i] < static_cast<double>(nc))) {
      return Status::InvalidArgument("label table: row " + std::to_string(i) + " has class " + std::to_string(c[i]) +
                                     " outside [0, " + std::to_string(nc) + ")");
    }
    if (p[i] < 0 || p[i] >= batch_size) {
      return Status::InvalidArgument("label table: row " + std::to_string(i) + " has batch index " +
                                     std::to_string(p[i]) + " outside [0, " + std::to_string(batch_size) + ")");
    }
    ++counts[static_cast<size_t>(p[i])];
  }
  return counts.empty() ? int64_t{0} : *std::max_element(counts.begin(), counts.end());
}

at::Tensor PreprocessTargets(const at::Tensor& labels, int64_t batch_size, int64_t max_boxes, double img_h,
                             double img_w) {
  const auto opt = labels.options().dtype(at::kFloat);
  if (max_boxes <= 0 || labels.numel() == 0) return at::zeros({batch_size, 0, 5}, opt);
  auto table = labels.to(at::kFloat);
  // Group rows by image (stable, so each image keeps its row order) and give each row its slot within
  // the image: position minus the image's first position.
  auto bidx = table.select(1, 0).to(at::kLong);
  auto sorted = bidx.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  auto order = std::get<1>(sorted);
  auto sb = std::get<0>(sorted);
  table = table.index_select(0, order);
  auto counts = at::zeros({batch_size}, sb.options()).index_add_(0, sb, at::ones_like(sb));
  auto starts = counts.cumsum(0) - counts;
  auto slot = at::arange(sb.size(0), sb.options()) - starts.index_select(0, sb);

  // Column-wise scalar products: a small (4,) scale tensor would need a host-to-device copy (a sync).
  auto xywh = at::stack({table.select(1, 2) * img_w, table.select(1, 3) * img_h, table.select(1, 4) * img_w,
                         table.select(1, 5) * img_h},
                        1);
  auto boxes = XywhToXyxy(xywh);
  auto rows = at::cat({table.narrow(1, 1, 1), boxes}, 1);  // (N, 5) cls, xyxy
  auto out = at::zeros({batch_size, max_boxes, 5}, opt);
  out.index_put_({sb, slot}, rows);
  return out;
}

at::Tensor DistributionFocalLoss(const at::Tensor& pred_dist, const at::Tensor& target) {
  const int64_t reg_max = pred_dist.size(-1);
  auto t = target.clamp(0, static_cast<double>(reg_max) - 1 - 0.01);
  auto tl = t.to(at::kLong);
  auto tr = tl + 1;
  auto wl = tr.to(t.scalar_type()) - t;
  auto wr = 1 - wl;
  auto logp = pred_dist.log_softmax(-1);
  auto ce_l = -logp.gather(-1, tl.unsqueeze(-1)).squeeze(-1);
  auto ce_r = -logp.gather(-1, tr.unsqueeze(-1)).squeeze(-1);
  return ce_l * wl + ce_r * wr;
}

DetectionLoss::DetectionLoss(int64_t nc, std::vector<double> strides, LossOptions options)
    : nc_(nc), strides_(std::move(strides)), options_(options) {
  AssignerOptions a;
  a.topk = options_.topk;
  a.num_classes = nc_;
  a.alpha = options_.alpha;
  a.beta = options_.beta;
  a.cuda_kernels = options_.assigner_kernels;
  assigner_ = TaskAlignedAssigner(a);
}

Status DetectionLoss::CheckFeats(const std::vector<at::Tensor>& feats) const {
  if (feats.size() != strides_.size()) {
    return Status::InvalidArgument("detection loss: " + std::to_string(feats.size()) + " feature levels for " +
                                   std::to_string(strides_.size()) + " strides");
  }
  for (const auto& f : feats) {
    if (!f.defined() || f.dim() != 4 || f.size(1) != nc_ + 4 * options_.reg_max || f.size(0) != feats[0].size(0)) {
      return Status::InvalidArgument("detection loss: each level must be (B, " +
                                     std::to_string(nc_ + 4 * options_.reg_max) + ", H, W)");
    }
  }
  return Status::OK();
}

Result<LossOutput> DetectionLoss::operator()(const std::vector<at::Tensor>& feats, const at::Tensor& labels,
                                             int64_t max_boxes, const AssignerMarks* marks) const {
  YC_RETURN_IF_ERROR(CheckFeats(feats));
  if (labels.defined() && labels.numel() > 0 && (labels.dim() != 2 || labels.size(1) != 6)) {
    return Status::InvalidArgument("detection loss: label table must be (N, 6) [batch_idx, cls, cx, cy, w, h]");
  }
  if (max_boxes < 0) return Status::InvalidArgument("detection loss: max_boxes must be >= 0");
  const auto& f0 = feats.front();
  const double img_h = static_cast<double>(f0.size(2)) * strides_.front();
  const double img_w = static_cast<double>(f0.size(3)) * strides_.front();
  auto table = labels.defined() ? labels.to(f0.device()) : at::zeros({0, 6}, f0.options().dtype(at::kFloat));
  // Padded to its box-count bucket (box_buckets.h; the loss is the same), the widths a captured step uses.
  return Compute(feats, PreprocessTargets(table, f0.size(0), BoxCountBucket(max_boxes), img_h, img_w), marks);
}

Result<LossOutput> DetectionLoss::FromTargets(const std::vector<at::Tensor>& feats, const at::Tensor& targets,
                                              const AssignerMarks* marks) const {
  YC_RETURN_IF_ERROR(CheckFeats(feats));
  if (!targets.defined() || targets.dim() != 3 || targets.size(0) != feats.front().size(0) || targets.size(2) != 5) {
    return Status::InvalidArgument("detection loss: targets must be (B, M, 5) [cls, x1, y1, x2, y2]");
  }
  return Compute(feats, targets.to(at::kFloat), marks);
}

LossOutput DetectionLoss::Compute(const std::vector<at::Tensor>& feats, const at::Tensor& targets,
                                  const AssignerMarks* marks) const {
  // fp32 throughout, even when called inside an autocast region (matmul/softmax would otherwise drop
  // to half precision).
  AutocastGuard fp32(feats.front().device().type(), /*enabled=*/false);
  const int64_t reg_max = options_.reg_max;
  const int64_t no = nc_ + 4 * reg_max;
  const int64_t bs = feats.front().size(0);
  std::vector<at::Tensor> flat;
  flat.reserve(feats.size());
  for (const auto& f : feats) flat.push_back(f.to(at::kFloat).reshape({bs, no, -1}));
  auto cat = at::cat(flat, 2);                                                   // (B, no, A)
  auto pred_distri = cat.narrow(1, 0, 4 * reg_max).permute({0, 2, 1}).contiguous();  // (B, A, 4 * reg_max)
  auto pred_scores = cat.narrow(1, 4 * reg_max, nc_).permute({0, 2, 1}).contiguous();  // (B, A, nc)
  const int64_t na = pred_scores.size(1);

  auto anchors = MakeAnchors(feats, strides_, 0.5);
  auto anchor_points = anchors.points.to(at::kFloat);  // (A, 2) grid units
  auto stride_tensor = anchors.strides.to(at::kFloat);  // (A, 1)

  auto gt_labels = targets.narrow(2, 0, 1);  // targets: (B, M, 5)
  auto gt_bboxes = targets.narrow(2, 1, 4);
  auto mask_gt = gt_bboxes.sum(2, /*keepdim=*/true).gt(0.0);

  // Decode predicted distances (expectation over bins) into xyxy boxes in grid units.
  auto proj = at::arange(reg_max, pred_distri.options());
  auto dist = pred_distri.view({bs, na, 4, reg_max}).softmax(3).matmul(proj);  // (B, A, 4)
  auto pred_bboxes = Dist2Bbox(dist, anchor_points, /*xywh=*/false);            // (B, A, 4)

  if (marks != nullptr && marks->starts) marks->starts();
  Assignment asg = assigner_(pred_scores.detach().sigmoid(), pred_bboxes.detach() * stride_tensor,
                             anchor_points * stride_tensor, gt_labels, gt_bboxes, mask_gt);
  if (marks != nullptr && marks->ends) marks->ends();

  auto target_scores_sum = asg.target_scores.sum();
  if (global_) global_->SumInPlace(target_scores_sum);  // no gradient flows through the targets
  target_scores_sum = target_scores_sum.clamp_min(1.0);
  auto loss_cls =
      at::binary_cross_entropy_with_logits(pred_scores, asg.target_scores, {}, {}, at::Reduction::None).sum() /
      target_scores_sum;

  // Box and DFL terms over foreground anchors: weights are zero elsewhere.
  auto fg = asg.fg_mask.to(at::kFloat);
  auto weight = asg.target_scores.sum(-1) * fg;  // (B, A)
  auto target_bboxes = asg.target_bboxes / stride_tensor;  // grid units
  auto iou = BboxIoU(pred_bboxes, target_bboxes, IoUKind::kCIoU);  // (B, A)
  auto loss_box = ((1.0 - iou) * weight).sum() / target_scores_sum;
  auto target_ltrb = Bbox2Dist(anchor_points, target_bboxes, static_cast<double>(reg_max - 1));  // (B, A, 4)
  auto dfl = DistributionFocalLoss(pred_distri.view({bs, na, 4, reg_max}), target_ltrb).mean(-1);  // (B, A)
  auto loss_dfl = (dfl * weight).sum() / target_scores_sum;

  auto items = at::stack({loss_box * options_.box_gain, loss_cls * options_.cls_gain, loss_dfl * options_.dfl_gain});
  if (global_) items = items * static_cast<double>(global_->world_size());
  LossOutput out;
  out.total = items.sum() * static_cast<double>(bs);
  out.items = items.detach();
  return out;
}

}  // namespace yc::trainer
