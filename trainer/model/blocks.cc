#include "trainer/model/blocks.h"

#include <numeric>

#include <c10/core/GradMode.h>

#include "trainer/model/depthwise_kernel.h"
#include "trainer/model/fuse.h"
#include "trainer/model/sync_batch_norm.h"

namespace yc::trainer {

namespace nn = torch::nn;

// ---- Conv ----

ConvImpl::ConvImpl(int64_t c1, int64_t c2, int64_t k, int64_t s, int64_t g, bool act)
    : c1_(c1), c2_(c2), k_(k), s_(s), g_(g), act_(act) {
  reset();
}

void ConvImpl::reset() {
  conv = register_module(
      "conv", nn::Conv2d(nn::Conv2dOptions(c1_, c2_, k_).stride(s_).padding(k_ / 2).groups(g_).bias(false)));
  bn = register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(c2_).eps(kBnEps).momentum(kBnMomentum)));
}

at::Tensor ConvImpl::forward(const at::Tensor& x) {
  // Conv2dForward: depthwise convs on CUDA take the kernel this thread's scope picks (depthwise_kernel.h).
  const at::Tensor c = Conv2dForward(*conv, x);
  if (fused_) return act_ ? at::silu(c) : c;
  auto y = sync_bn_ && is_training() ? SyncBatchNorm2d(c, *bn, *sync_bn_) : bn->forward(c);
  return act_ ? at::silu(y) : y;
}

void ConvImpl::Fuse() {
  if (fused_) return;
  c10::NoGradGuard no_grad;
  FoldedConv f = FoldBatchNorm(conv->weight, conv->bias, *bn);
  // A Conv2d built without bias cannot gain one (its "bias" slot is registered, empty), so the folded
  // conv is a new Conv2d with bias, registered in its place.
  const auto& o = conv->options;
  nn::Conv2d folded(nn::Conv2dOptions(o.in_channels(), o.out_channels(), o.kernel_size())
                        .stride(o.stride())
                        .padding(o.padding())
                        .dilation(o.dilation())
                        .groups(o.groups())
                        .bias(true));
  const bool grad = conv->weight.requires_grad();
  folded->weight.set_data(f.weight);
  folded->bias.set_data(f.bias);
  folded->weight.set_requires_grad(grad);
  folded->bias.set_requires_grad(grad);
  conv = replace_module("conv", folded);
  fused_ = true;
}

Conv DWConv(int64_t c1, int64_t c2, int64_t k, int64_t s, bool act) { return Conv(c1, c2, k, s, std::gcd(c1, c2), act); }

// ---- Bottleneck ----

BottleneckImpl::BottleneckImpl(int64_t c1, int64_t c2, bool shortcut, int64_t g, double e, int64_t k1, int64_t k2)
    : c1_(c1), c2_(c2), g_(g), k1_(k1), k2_(k2), e_(e), add_(shortcut && c1 == c2) {
  reset();
}

void BottleneckImpl::reset() {
  const auto c = static_cast<int64_t>(static_cast<double>(c2_) * e_);
  cv1 = register_module("cv1", Conv(c1_, c, k1_, 1));
  cv2 = register_module("cv2", Conv(c, c2_, k2_, 1, g_));
}

at::Tensor BottleneckImpl::forward(const at::Tensor& x) {
  auto y = cv2->forward(cv1->forward(x));
  return add_ ? x + y : y;
}

// ---- C2f ----

C2fImpl::C2fImpl(int64_t c1, int64_t c2, int64_t n, bool shortcut, int64_t g, double e)
    : c1_(c1), c2_(c2), n_(n), g_(g), c_(static_cast<int64_t>(static_cast<double>(c2) * e)), e_(e),
      shortcut_(shortcut) {
  reset();
}

void C2fImpl::reset() {
  cv1 = register_module("cv1", Conv(c1_, 2 * c_, 1, 1));
  cv2 = register_module("cv2", Conv((2 + n_) * c_, c2_, 1));
  m = register_module("m", nn::ModuleList());
  for (int64_t i = 0; i < n_; ++i) m->push_back(Bottleneck(c_, c_, shortcut_, g_, 1.0));
}

at::Tensor C2fImpl::forward(const at::Tensor& x) {
  auto halves = cv1->forward(x).chunk(2, 1);
  std::vector<at::Tensor> ys{halves[0], halves[1]};
  ys.reserve(2 + m->size());
  for (size_t i = 0; i < m->size(); ++i) ys.push_back(m->ptr(i)->as<BottleneckImpl>()->forward(ys.back()));
  return cv2->forward(at::cat(ys, 1));
}

// ---- SPPF ----

SPPFImpl::SPPFImpl(int64_t c1, int64_t c2, int64_t k) : c1_(c1), c2_(c2), k_(k) { reset(); }

void SPPFImpl::reset() {
  const int64_t c = c1_ / 2;
  cv1 = register_module("cv1", Conv(c1_, c, 1, 1));
  cv2 = register_module("cv2", Conv(c * 4, c2_, 1, 1));
  m = register_module("m", nn::MaxPool2d(nn::MaxPool2dOptions(k_).stride(1).padding(k_ / 2)));
}

at::Tensor SPPFImpl::forward(const at::Tensor& x) {
  auto y0 = cv1->forward(x);
  auto y1 = m->forward(y0);
  auto y2 = m->forward(y1);
  auto y3 = m->forward(y2);
  return cv2->forward(at::cat({y0, y1, y2, y3}, 1));
}

}  // namespace yc::trainer
