// The PAN neck both families share (trainer/model/pan.h).
#include "trainer/model/pan.h"

#include <torch/nn/modules/upsampling.h>

#include "trainer/model/blocks.h"
#include "trainer/model/layer_graphs.h"

namespace yc::trainer::model_graph {

namespace nn = torch::nn;

namespace {
nn::Upsample Up2() {
  return nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest));
}
}  // namespace

void AppendPan(nn::ModuleListImpl& model, const PanWidths& w, const MakePanBlock& block) {
  const size_t first = model.size();
  model.push_back(Up2());                                             // +0
  model.push_back(Concat(1));                                         // +1  cat backbone P4
  model.push_back(block(first + 2, w.in_p5 + w.in_p4, w.out_p4));     // +2
  model.push_back(Up2());                                             // +3
  model.push_back(Concat(1));                                         // +4  cat backbone P3
  model.push_back(block(first + 5, w.out_p4 + w.in_p3, w.out_p3));    // +5  P3 out
  model.push_back(Conv(w.out_p3, w.out_p3, 3, 2));                    // +6
  model.push_back(Concat(1));                                         // +7  cat head P4
  model.push_back(block(first + 8, w.out_p3 + w.out_p4, w.out_p4));   // +8  P4 out
  model.push_back(Conv(w.out_p4, w.out_p4, 3, 2));                    // +9
  model.push_back(Concat(1));                                         // +10 cat head P5
  model.push_back(block(first + 11, w.out_p4 + w.in_p5, w.out_p5));   // +11 P5 out
}

std::vector<at::Tensor> RunPan(nn::ModuleListImpl& model, size_t first, const at::Tensor& p3, const at::Tensor& p4,
                               const at::Tensor& p5, const RunPanBlock& block, const LayerObserver* observe) {
  const auto seen = [observe](size_t i, at::Tensor y) { return Observed(observe, i, std::move(y)); };
  auto merge = [&](size_t i, const at::Tensor& x) { return seen(i, block(i, x)); };
  auto conv = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<ConvImpl>()->forward(x)); };
  auto up = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<nn::UpsampleImpl>()->forward(x)); };
  auto cat = [&](size_t i, const at::Tensor& a, const at::Tensor& b) { return seen(i, at::cat({a, b}, 1)); };

  const size_t f = first;
  auto top_p4 = merge(f + 2, cat(f + 1, up(f, p5), p4));
  auto out_p3 = merge(f + 5, cat(f + 4, up(f + 3, top_p4), p3));
  auto out_p4 = merge(f + 8, cat(f + 7, conv(f + 6, out_p3), top_p4));
  auto out_p5 = merge(f + 11, cat(f + 10, conv(f + 9, out_p4), p5));
  return {out_p3, out_p4, out_p5};
}

}  // namespace yc::trainer::model_graph
