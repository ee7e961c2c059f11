#include "trainer/loss/pair_metrics.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>

#include <c10/core/GradMode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/jit.h>

namespace yc::trainer {
namespace {

// Box sides: g* (B, M, 1), p* (B, 1, A); anchor centres ax, ay (1, 1, A). Each expression is the one of
// box_ops.cc's BboxIoU (box1 = the ground truth, box2 = the prediction), in the same order, so the CPU
// result is its result to the bit; the in-box test is `least edge distance > in_eps` as four comparisons.
constexpr const char* kSource = R"JIT(
def pair_metrics(gx1, gy1, gx2, gy2, px1, py1, px2, py2, ax, ay, valid, scores,
                 alpha: float, beta: float, in_eps: float, eps: float, v_gain: float):
    mask = ((ax - gx1) > in_eps) & ((ay - gy1) > in_eps) & ((gx2 - ax) > in_eps) & ((gy2 - ay) > in_eps) & valid
    w1 = gx2 - gx1
    h1 = gy2 - gy1 + eps
    w2 = px2 - px1
    h2 = py2 - py1 + eps
    inter = (torch.min(gx2, px2) - torch.max(gx1, px1)).clamp(min=0.0) * \
            (torch.min(gy2, py2) - torch.max(gy1, py1)).clamp(min=0.0)
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union
    cw = torch.max(gx2, px2) - torch.min(gx1, px1)
    ch = torch.max(gy2, py2) - torch.min(gy1, py1)
    c2 = cw.pow(2) + ch.pow(2) + eps
    rho2 = ((px1 + px2 - gx1 - gx2).pow(2) + (py1 + py2 - gy1 - gy2).pow(2)) / 4
    v = v_gain * (torch.atan(w2 / h2) - torch.atan(w1 / h1)).pow(2)
    ciou = (iou - (rho2 / c2 + v * (v / (v - iou + (1.0 + eps))))).clamp(min=0.0)
    overlaps = torch.where(mask, ciou, 0.0)
    align = torch.where(mask, scores, 0.0).pow(alpha) * overlaps.pow(beta)
    return mask, overlaps, align
)JIT";

constexpr double kIoUEps = 1e-7;  // BboxIoU's default, as Ultralytics' bbox_iou

// The fuser's default strategy compiles a kernel for each new set of input shapes (two static ones, then up
// to ten dynamic ones); every box bucket and the smaller last batch is a new shape, and each compile costs a
// second or more of NVRTC at the start of a run. Dynamic fusion compiles one shape-generic kernel that serves
// them all (the depth allows a few more for changes of rank or broadcast pattern). The strategy is read when
// the function's executor is built, at its first call, so it is set before; it is process-wide.
// YOLOCACHE_JIT_FUSION=static keeps PyTorch's default, should a LibTorch fuse dynamic shapes badly.
void ChooseFusionStrategy() {
  const char* choice = std::getenv("YOLOCACHE_JIT_FUSION");
  if (choice != nullptr && std::string_view(choice) == "static") return;
  torch::jit::FusionStrategy dynamic{{torch::jit::FusionBehavior::DYNAMIC, 4}};
  torch::jit::setFusionStrategy(dynamic);
}

torch::jit::Function& PairMetricsFunction() {
  static const std::shared_ptr<torch::jit::CompilationUnit> unit = [] {
    ChooseFusionStrategy();
    return torch::jit::compile(kSource);
  }();
  return unit->get_function("pair_metrics");
}

// Side k of (..., 4) boxes as a contiguous tensor of `shape`.
at::Tensor Side(const at::Tensor& boxes, int64_t k, at::IntArrayRef shape) {
  return boxes.select(-1, k).contiguous().view(shape);
}

}  // namespace

PairMetrics ComputePairMetrics(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                               const at::Tensor& valid_gt, const at::Tensor& box_scores, double alpha, double beta,
                               double inside_eps) {
  c10::NoGradGuard no_grad;
  const int64_t bs = gt_bboxes.size(0), nmax = gt_bboxes.size(1), na = pd_bboxes.size(1);
  const std::array<int64_t, 3> g{bs, nmax, 1}, p{bs, 1, na}, a{1, 1, na};  // no heap work per step
  std::vector<c10::IValue> args{Side(gt_bboxes, 0, g), Side(gt_bboxes, 1, g), Side(gt_bboxes, 2, g),
                                Side(gt_bboxes, 3, g), Side(pd_bboxes, 0, p), Side(pd_bboxes, 1, p),
                                Side(pd_bboxes, 2, p), Side(pd_bboxes, 3, p), Side(anc_points, 0, a),
                                Side(anc_points, 1, a), valid_gt.to(at::kBool).contiguous(), box_scores.contiguous(),
                                alpha, beta, inside_eps, kIoUEps, 4.0 / (M_PI * M_PI)};
  const auto out = PairMetricsFunction()(std::move(args)).toTuple();
  return {out->elements()[0].toTensor(), out->elements()[1].toTensor(), out->elements()[2].toTensor()};
}

double WarmPairMetrics(const at::Device& device, int64_t batch, int64_t anchors) {
  if (!device.is_cuda()) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t rows = 8;  // any width > 1: the dynamic kernel serves every bucket after it
  const auto f = at::TensorOptions().dtype(at::kFloat).device(device);
  const at::Tensor gt = at::zeros({batch, rows, 4}, f), pd = at::zeros({batch, anchors, 4}, f);
  const at::Tensor points = at::zeros({anchors, 2}, f), scores = at::zeros({batch, rows, anchors}, f);
  const at::Tensor valid = at::ones({batch, rows, 1}, f.dtype(at::kBool));
  for (int call = 0; call < 2; ++call) {
    const PairMetrics m = ComputePairMetrics(gt, pd, points, valid, scores, 0.5, 6.0, 1e-9);
    (void)m.align_metric.sum().item<float>();  // waits for the kernel: the compile is done when this returns
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace yc::trainer
