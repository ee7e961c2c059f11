// ComputePairMetricsKernel (pair_metrics.h): LibTorch's tensors handed to the CUDA kernel as pointers.
// Compiled with YOLOCACHE_CUDA_KERNELS only where CMake built kernels/pair_metrics_kernel.cu.
#include "trainer/loss/pair_metrics.h"

#include <stdexcept>
#include <string>

#ifndef YOLOCACHE_CUDA_KERNELS
#define YOLOCACHE_CUDA_KERNELS 0
#endif
#if YOLOCACHE_CUDA_KERNELS
#include <c10/core/GradMode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "trainer/loss/kernels/pair_metrics_kernel.h"
#endif

namespace yc::trainer {

#if YOLOCACHE_CUDA_KERNELS

bool PairMetricsKernelApplies(const at::Tensor& pd_scores) {
  return pd_scores.defined() && pd_scores.is_cuda() && pd_scores.scalar_type() == at::kFloat;
}

PairMetrics ComputePairMetricsKernel(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes,
                                     const at::Tensor& anc_points, const at::Tensor& valid_gt,
                                     const at::Tensor& pd_scores, const at::Tensor& labels, double alpha, double beta,
                                     double inside_eps) {
  c10::NoGradGuard no_grad;
  c10::cuda::CUDAGuard on(pd_scores.device());
  const auto device = pd_scores.device();
  // Contiguous float32 / int64 / bool copies where the inputs are views (the boxes are a narrow of the
  // targets); each is small or already contiguous.
  const at::Tensor gt = gt_bboxes.to(device, at::kFloat).contiguous();
  const at::Tensor pd = pd_bboxes.to(device, at::kFloat).contiguous();
  const at::Tensor anchors = anc_points.to(device, at::kFloat).contiguous();
  const at::Tensor real = valid_gt.to(device, at::kBool).reshape({gt.size(0), gt.size(1)}).contiguous();
  const at::Tensor scores = pd_scores.contiguous();
  const at::Tensor classes = labels.to(device, at::kLong).reshape({gt.size(0), gt.size(1)}).contiguous();

  const bool shapes_agree = gt.dim() == 3 && gt.size(2) == 4 && pd.dim() == 3 && pd.size(2) == 4 &&
                            scores.dim() == 3 && pd.size(0) == gt.size(0) && scores.size(0) == gt.size(0) &&
                            scores.size(1) == pd.size(1) && anchors.dim() == 2 && anchors.size(0) == pd.size(1) &&
                            anchors.size(1) == 2;
  if (!shapes_agree) throw std::invalid_argument("pair metrics kernel: boxes, scores and anchors disagree in shape");
  kernels::PairMetricsArgs args;
  args.batch = gt.size(0);
  args.boxes = gt.size(1);
  args.anchors = pd.size(1);
  args.classes = scores.size(2);
  PairMetrics m;
  const auto fopt = scores.options();
  m.mask = at::empty({args.batch, args.boxes, args.anchors}, fopt.dtype(at::kBool));
  m.overlaps = at::empty({args.batch, args.boxes, args.anchors}, fopt);
  m.align_metric = at::empty({args.batch, args.boxes, args.anchors}, fopt);
  args.gt_boxes = gt.data_ptr<float>();
  args.real_box = real.data_ptr<bool>();
  args.labels = classes.data_ptr<int64_t>();
  args.pd_boxes = pd.data_ptr<float>();
  args.pd_scores = scores.data_ptr<float>();
  args.anchor_points = anchors.data_ptr<float>();
  args.params = {static_cast<float>(alpha), static_cast<float>(beta), static_cast<float>(inside_eps)};
  args.inside = m.mask.data_ptr<bool>();
  args.overlaps = m.overlaps.data_ptr<float>();
  args.align = m.align_metric.data_ptr<float>();
  if (const char* error = kernels::LaunchPairMetrics(args, c10::cuda::getCurrentCUDAStream().stream())) {
    throw std::runtime_error(std::string("pair metrics kernel: ") + error);
  }
  return m;
}

#else

bool PairMetricsKernelApplies(const at::Tensor&) { return false; }

PairMetrics ComputePairMetricsKernel(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                     const at::Tensor&, const at::Tensor&, double, double, double) {
  throw std::logic_error("pair metrics kernel: not compiled in this build (PairMetricsKernelApplies is false)");
}

#endif

}  // namespace yc::trainer
