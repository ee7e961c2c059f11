#include "trainer/model/detect.h"

#include <algorithm>
#include <cmath>

#include <c10/core/GradMode.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/nn/modules/container/sequential.h>

#include "trainer/model/box_ops.h"

namespace yc::trainer {

namespace nn = torch::nn;

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

DWConvStageImpl::DWConvStageImpl(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) { reset(); }

void DWConvStageImpl::reset() {
  dw = register_module("0", DWConv(c1_, c1_, 3));
  pw = register_module("1", Conv(c1_, c2_, 1));
}

at::Tensor DWConvStageImpl::forward(const at::Tensor& x) { return pw->forward(dw->forward(x)); }

DetectImpl::DetectImpl(int64_t nc, std::vector<int64_t> ch, std::vector<double> strides, int64_t reg_max,
                       ClassBranch class_branch)
    : nc_(nc), reg_max_(reg_max), class_branch_(class_branch), ch_(std::move(ch)), strides_(std::move(strides)) {
  reset();
}

void DetectImpl::reset() {
  const int64_t c2 = std::max<int64_t>({16, ch_.front() / 4, reg_max_ * 4});
  const int64_t c3 = std::max<int64_t>(ch_.front(), std::min<int64_t>(nc_, 100));
  cv2 = register_module("cv2", nn::ModuleList());
  cv3 = register_module("cv3", nn::ModuleList());
  for (int64_t x : ch_) {
    cv2->push_back(nn::Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn::Conv2d(nn::Conv2dOptions(c2, 4 * reg_max_, 1))));
    if (class_branch_ == ClassBranch::kLegacy) {
      cv3->push_back(nn::Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn::Conv2d(nn::Conv2dOptions(c3, nc_, 1))));
    } else {
      cv3->push_back(nn::Sequential(DWConvStage(x, c3), DWConvStage(c3, c3), nn::Conv2d(nn::Conv2dOptions(c3, nc_, 1))));
    }
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
  at::Tensor anchors = anchors_, anchor_strides = anchor_strides_;
  if (torch::jit::tracer::isTracing()) {
    // Traced (TorchScript export): from the inputs, never the cache, so that the graph holds neither
    // cached tensors nor a device (Ultralytics' make_anchors calls arange(device=...), which a trace
    // records as a constant device).
    Anchors a = MakeAnchorsFromInputs(feats, strides_, 0.5);
    anchors = a.points.transpose(0, 1);
    anchor_strides = a.strides.transpose(0, 1);
  } else if (key != anchor_key_ || !anchors_.defined()) {
    Anchors a = MakeAnchors(feats, strides_, 0.5);
    anchors = anchors_ = a.points.transpose(0, 1).contiguous();
    anchor_strides = anchor_strides_ = a.strides.transpose(0, 1).contiguous();
    anchor_key_ = std::move(key);
  }
  auto x = at::cat(flat, 2);
  auto box = x.narrow(1, 0, 4 * reg_max_);
  auto cls = x.narrow(1, 4 * reg_max_, nc_);
  auto dbox = Dist2Bbox(dfl->forward(box), anchors.unsqueeze(0), /*xywh=*/!xyxy_, /*dim=*/1) * anchor_strides;
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
