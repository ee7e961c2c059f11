// assigner_kernels.h: LibTorch's tensors handed to the CUDA kernels as pointers. The launches are compiled
// with YOLOCACHE_CUDA_KERNELS only where CMake built kernels/*.cu; the arguments' preparation everywhere.
#include "trainer/loss/assigner_kernels.h"

#include <stdexcept>
#include <string>

#ifndef YOLOCACHE_CUDA_KERNELS
#define YOLOCACHE_CUDA_KERNELS 0
#endif
#if YOLOCACHE_CUDA_KERNELS
#include <cstdio>
#include <map>
#include <mutex>

#include <c10/core/GradMode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "trainer/loss/kernels/assign_targets_kernel.h"
#include "trainer/loss/kernels/pair_metrics_kernel.h"
#endif

namespace yc::trainer {

namespace {

// A contiguous tensor of `dtype` on `device` (no copy where it already is one).
at::Tensor Dense(const at::Tensor& t, const at::Device& device, at::ScalarType dtype) {
  return t.to(device, dtype).contiguous();
}

}  // namespace

PairMetricsCall PreparePairMetrics(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes,
                                   const at::Tensor& anc_points, const at::Tensor& valid_gt,
                                   const at::Tensor& pd_scores, const at::Tensor& labels, double alpha, double beta,
                                   double inside_eps) {
  const at::Device device = pd_scores.device();
  const at::Tensor gt = Dense(gt_bboxes, device, at::kFloat);  // the boxes are a narrow of the targets
  const at::Tensor pd = Dense(pd_bboxes, device, at::kFloat);
  const at::Tensor anchors = Dense(anc_points, device, at::kFloat);
  const at::Tensor scores = pd_scores.contiguous();
  const bool shapes_agree = gt.dim() == 3 && gt.size(2) == 4 && pd.dim() == 3 && pd.size(2) == 4 &&
                            scores.dim() == 3 && pd.size(0) == gt.size(0) && scores.size(0) == gt.size(0) &&
                            scores.size(1) == pd.size(1) && anchors.dim() == 2 && anchors.size(0) == pd.size(1) &&
                            anchors.size(1) == 2;
  if (!shapes_agree) throw std::invalid_argument("pair metrics kernel: boxes, scores and anchors disagree in shape");
  const at::Tensor real = Dense(valid_gt, device, at::kBool).reshape({gt.size(0), gt.size(1)});
  const at::Tensor classes = Dense(labels, device, at::kLong).reshape({gt.size(0), gt.size(1)});

  PairMetricsCall call;
  call.inputs = {gt, pd, anchors, scores, real, classes};
  kernels::PairMetricsArgs& args = call.args;
  args.batch = gt.size(0);
  args.boxes = gt.size(1);
  args.anchors = pd.size(1);
  args.classes = scores.size(2);
  const auto fopt = scores.options();
  call.out.mask = at::empty({args.batch, args.boxes, args.anchors}, fopt.dtype(at::kBool));
  call.out.overlaps = at::empty({args.batch, args.boxes, args.anchors}, fopt);
  call.out.align_metric = at::empty({args.batch, args.boxes, args.anchors}, fopt);
  args.gt_boxes = gt.data_ptr<float>();
  args.real_box = real.data_ptr<bool>();
  args.labels = classes.data_ptr<int64_t>();
  args.pd_boxes = pd.data_ptr<float>();
  args.pd_scores = scores.data_ptr<float>();
  args.anchor_points = anchors.data_ptr<float>();
  args.params = {static_cast<float>(alpha), static_cast<float>(beta), static_cast<float>(inside_eps)};
  args.inside = call.out.mask.data_ptr<bool>();
  args.overlaps = call.out.overlaps.data_ptr<float>();
  args.align = call.out.align_metric.data_ptr<float>();
  return call;
}

AssignTargetsCall PrepareAssignTargets(const PairMetrics& pairs, const at::Tensor& topk_idxs, const at::Tensor& labels,
                                       const at::Tensor& gt_bboxes, int64_t num_classes, double eps) {
  const at::Device device = pairs.overlaps.device();
  const int64_t bs = pairs.overlaps.size(0), nmax = pairs.overlaps.size(1), na = pairs.overlaps.size(2);
  if (nmax == 0) throw std::invalid_argument("assign targets kernel: no box rows");
  const at::Tensor picks_of_rows = Dense(topk_idxs, device, at::kLong);
  const at::Tensor classes = Dense(labels, device, at::kLong).reshape({bs, nmax});
  const at::Tensor gt = Dense(gt_bboxes, device, at::kFloat);
  const at::Tensor inside = pairs.mask.contiguous(), overlaps = pairs.overlaps.contiguous(),
                   align = pairs.align_metric.contiguous();
  const auto fopt = overlaps.options();

  AssignTargetsCall call;
  call.inputs = {picks_of_rows, classes, gt, inside, overlaps, align};
  call.picks = at::zeros({bs, na}, fopt.dtype(at::kInt));
  call.picked_by = at::empty({bs, na}, fopt.dtype(at::kLong));
  call.best = at::zeros({2, bs, nmax}, fopt);
  Assignment& out = call.out;
  out.target_gt_idx = at::empty({bs, na}, fopt.dtype(at::kLong));
  out.fg_mask = at::empty({bs, na}, fopt.dtype(at::kBool));
  out.target_labels = at::empty({bs, na}, fopt.dtype(at::kLong));
  out.target_bboxes = at::empty({bs, na, 4}, fopt);
  out.target_scores = at::empty({bs, na, num_classes}, fopt);

  kernels::AssignTargetsArgs& args = call.args;
  args.batch = bs;
  args.boxes = nmax;
  args.anchors = na;
  args.classes = num_classes;
  args.topk = picks_of_rows.size(2);
  args.topk_idxs = picks_of_rows.data_ptr<int64_t>();
  args.inside = inside.data_ptr<bool>();
  args.overlaps = overlaps.data_ptr<float>();
  args.align = align.data_ptr<float>();
  args.labels = classes.data_ptr<int64_t>();
  args.gt_boxes = gt.data_ptr<float>();
  args.eps = static_cast<float>(eps);
  args.picks = call.picks.data_ptr<int32_t>();
  args.picked_by = call.picked_by.data_ptr<int64_t>();
  args.best_align = call.best[0].data_ptr<float>();
  args.best_overlap = call.best[1].data_ptr<float>();
  args.target_gt_idx = out.target_gt_idx.data_ptr<int64_t>();
  args.fg_mask = out.fg_mask.data_ptr<bool>();
  args.target_labels = out.target_labels.data_ptr<int64_t>();
  args.target_boxes = out.target_bboxes.data_ptr<float>();
  args.target_scores = out.target_scores.data_ptr<float>();
  return call;
}

#if YOLOCACHE_CUDA_KERNELS

namespace {

void ThrowIfFailed(const char* error, const char* kernel) {
  if (error != nullptr) throw std::runtime_error(std::string(kernel) + " kernel: " + error);
}

// Whether the build's kernel images run on `device`, asked once per device. A GPU older than
// YOLOCACHE_CUDA_ARCHITECTURES' oldest gets the ATen assigner and one warning, not a failed launch.
bool KernelsRunOn(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(device); it != known.end()) return it->second;
  c10::cuda::CUDAGuard on(device);
  const char* error = kernels::PairMetricsKernelImageError();
  if (error == nullptr) error = kernels::AssignTargetsKernelsImageError();
  if (error != nullptr) {
    std::fprintf(stderr, "warning: assigner kernels: none of this build's images runs on cuda:%d (%s); PyTorch's ops "
                 "from here on, as under --assigner-kernel aten\n", static_cast<int>(device), error);
  }
  return known.emplace(device, error == nullptr).first->second;
}

}  // namespace

bool AssignerKernelsApply(const at::Tensor& pd_scores) {
  return pd_scores.defined() && pd_scores.is_cuda() && pd_scores.scalar_type() == at::kFloat &&
         KernelsRunOn(pd_scores.device().index());
}

PairMetrics ComputePairMetricsKernel(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes,
                                     const at::Tensor& anc_points, const at::Tensor& valid_gt,
                                     const at::Tensor& pd_scores, const at::Tensor& labels, double alpha, double beta,
                                     double inside_eps) {
  c10::NoGradGuard no_grad;
  c10::cuda::CUDAGuard on(pd_scores.device());
  const PairMetricsCall call =
      PreparePairMetrics(gt_bboxes, pd_bboxes, anc_points, valid_gt, pd_scores, labels, alpha, beta, inside_eps);
  ThrowIfFailed(kernels::LaunchPairMetrics(call.args, c10::cuda::getCurrentCUDAStream().stream()), "pair metrics");
  return call.out;
}

Assignment AssignTargetsKernel(const PairMetrics& pairs, const at::Tensor& topk_idxs, const at::Tensor& labels,
                               const at::Tensor& gt_bboxes, int64_t num_classes, double eps) {
  c10::NoGradGuard no_grad;
  c10::cuda::CUDAGuard on(pairs.overlaps.device());
  const AssignTargetsCall call = PrepareAssignTargets(pairs, topk_idxs, labels, gt_bboxes, num_classes, eps);
  ThrowIfFailed(kernels::LaunchAssignTargets(call.args, c10::cuda::getCurrentCUDAStream().stream()),
                "assign targets");
  return call.out;
}

#else

bool AssignerKernelsApply(const at::Tensor&) { return false; }

PairMetrics ComputePairMetricsKernel(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                     const at::Tensor&, const at::Tensor&, double, double, double) {
  throw std::logic_error("pair metrics kernel: not compiled in this build (AssignerKernelsApply is false)");
}

Assignment AssignTargetsKernel(const PairMetrics&, const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                               double) {
  throw std::logic_error("assign targets kernel: not compiled in this build (AssignerKernelsApply is false)");
}

#endif

}  // namespace yc::trainer
