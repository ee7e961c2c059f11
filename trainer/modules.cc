#include "trainer/modules.h"

#include <cmath>

#include <c10/core/GradMode.h>

#include "trainer/box_ops.h"
#include "trainer/sync_batch_norm.h"

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
  auto y = sync_bn_ && is_training() ? SyncBatchNorm2d(conv->forward(x), *bn, *sync_bn_) : bn->forward(conv->forward(x));
  return act_ ? at::silu(y) : y;
}

// ---- Bottleneck ----

BottleneckImpl::BottleneckImpl(int64_t c1, int64_t c2, bool shortcut, int64_t g, double e)
    : c1_(c1), c2_(c2), g_(g), e_(e), add_(shortcut && c1 == c2) {
  reset();
}

void BottleneckImpl::reset() {
  const auto c = static_cast<int64_t>(static_cast<double>(c2_) * e_);
  cv1 = register_module("cv1", Conv(c1_, c, 3, 1));
  cv2 = register_module("cv2", Conv(c, c2_, 3, 1, g_));
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

// ---- DFL ----

DFLImpl::DFLImpl(int64_t c1) : c1_(c1) { reset(); }

void DFLImpl::reset() {
  conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(c1_, 1, 1).bias(false)));
  c10::NoGradGuard no_grad;
  conv->weight.copy_(at::arange(c1_, conv->weight.options()).view({1, c1_, 1, 1}));
  conv->weight.set_requires_grad(false);  // frozen, like Ultralytics' always-frozen ".dfl"
}

at::Tensor DFLImpl::forward(const at::Tensor& x) {
  const int64_t b = x.size(0), a = x.size(2);
  auto probs = x.reshape({b, 4, c1_, a}).transpose(2, 1).softmax(1);  // (b, c1, 4, a)
  return conv->forward(probs).reshape({b, 4, a});
}

// ---- Detect ----

DetectImpl::DetectImpl(int64_t nc, std::vector<int64_t> ch, std::vector<double> strides, int64_t reg_max)
    : nc_(nc), reg_max_(reg_max), ch_(std::move(ch)), strides_(std::move(strides)) {
  reset();
}

void DetectImpl::reset() {
  const int64_t c2 = std::max<int64_t>({16, ch_.front() / 4, reg_max_ * 4});
  const int64_t c3 = std::max<int64_t>(ch_.front(), std::min<int64_t>(nc_, 100));
  cv2 = register_module("cv2", nn::ModuleList());
  cv3 = register_module("cv3", nn::ModuleList());
  for (int64_t x : ch_) {
    cv2->push_back(nn::Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn::Conv2d(nn::Conv2dOptions(c2, 4 * reg_max_, 1))));
    cv3->push_back(nn::Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn::Conv2d(nn::Conv2dOptions(c3, nc_, 1))));
  }
  dfl = register_module("dfl", DFL(reg_max_));
  anchor_key_.clear();
  anchors_ = at::Tensor();
  anchor_strides_ = at::Tensor();
}

std::vector<at::Tensor> DetectImpl::forward(const std::vector<at::Tensor>& xs) {
  std::vector<at::Tensor> out;
  out.reserve(xs.size());
  for (size_t i = 0; i < xs.size() && i < cv2->size(); ++i) {
    auto box = cv2->ptr(i)->as<nn::SequentialImpl>()->forward(xs[i]);
    auto cls = cv3->ptr(i)->as<nn::SequentialImpl>()->forward(xs[i]);
    out.push_back(at::cat({box, cls}, 1));
  }
  return out;
}

at::Tensor DetectImpl::Decode(const std::vector<at::Tensor>& feats) {
  const int64_t b = feats.front().size(0);
  std::vector<at::Tensor> flat;
  flat.reserve(feats.size());
  std::vector<int64_t> key;
  for (const auto& f : feats) {
    flat.push_back(f.reshape({b, no(), -1}));
    key.push_back(f.size(2));
    key.push_back(f.size(3));
  }
  key.push_back(static_cast<int64_t>(feats.front().scalar_type()));
  key.push_back(static_cast<int64_t>(feats.front().device().type()));
  key.push_back(feats.front().device().index());
  if (key != anchor_key_ || !anchors_.defined()) {
    auto anchors = MakeAnchors(feats, strides_, 0.5);
    anchors_ = anchors.points.transpose(0, 1).contiguous();
    anchor_strides_ = anchors.strides.transpose(0, 1).contiguous();
    anchor_key_ = std::move(key);
  }
  auto x = at::cat(flat, 2);
  auto box = x.narrow(1, 0, 4 * reg_max_);
  auto cls = x.narrow(1, 4 * reg_max_, nc_);
  auto dbox = Dist2Bbox(dfl->forward(box), anchors_.unsqueeze(0), /*xywh=*/true, /*dim=*/1) * anchor_strides_;
  return at::cat({dbox, cls.sigmoid()}, 1);
}

void DetectImpl::BiasInit() {
  c10::NoGradGuard no_grad;
  for (size_t i = 0; i < cv2->size() && i < strides_.size(); ++i) {
    auto* box = cv2->ptr(i)->as<nn::SequentialImpl>();
    auto* cls = cv3->ptr(i)->as<nn::SequentialImpl>();
    box->ptr(2)->as<nn::Conv2dImpl>()->bias.fill_(1.0);
    const double s = strides_[i];
    cls->ptr(2)->as<nn::Conv2dImpl>()->bias.fill_(std::log(5.0 / static_cast<double>(nc_) / std::pow(640.0 / s, 2)));
  }
}

}  // namespace yc::trainer
