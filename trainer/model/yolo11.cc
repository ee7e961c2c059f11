// YOLO11's layer graph (Ultralytics cfg/models/11/yolo11.yaml): C3k2 backbone, SPPF, C2PSA attention on
// P5, PAN neck of C3k2, and the Detect head with the depthwise class branch.
#include <torch/nn/modules/upsampling.h>

#include "trainer/model/blocks.h"
#include "trainer/model/blocks_yolo11.h"
#include "trainer/model/detect.h"
#include "trainer/model/layer_graphs.h"

namespace yc::trainer::model_graph {

namespace nn = torch::nn;

namespace {
nn::Upsample Up2() {
  return nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest));
}
}  // namespace

void BuildYOLO11(nn::ModuleListImpl& model, const ModelOptions& options, const std::vector<double>& strides) {
  const ScaleSpec spec = SpecFor(ModelFamily::k11, options.scale);
  const int64_t c64 = Width(64, spec), c128 = Width(128, spec), c256 = Width(256, spec), c512 = Width(512, spec),
                c1024 = Width(1024, spec);
  const int64_t d2 = Depth(2, spec);
  // parse_model turns every C3k2's c3k flag on for m/l/x, whatever the yaml says.
  const bool big = options.scale == ModelScale::kM || options.scale == ModelScale::kL || options.scale == ModelScale::kX;
  // Backbone.
  model.push_back(Conv(options.in_channels, c64, 3, 2));  // 0  P1/2
  model.push_back(Conv(c64, c128, 3, 2));                  // 1  P2/4
  model.push_back(C3k2(c128, c256, d2, big, 0.25));        // 2
  model.push_back(Conv(c256, c256, 3, 2));                 // 3  P3/8
  model.push_back(C3k2(c256, c512, d2, big, 0.25));        // 4
  model.push_back(Conv(c512, c512, 3, 2));                 // 5  P4/16
  model.push_back(C3k2(c512, c512, d2, true));             // 6
  model.push_back(Conv(c512, c1024, 3, 2));                // 7  P5/32
  model.push_back(C3k2(c1024, c1024, d2, true));           // 8
  model.push_back(SPPF(c1024, c1024, 5));                  // 9
  model.push_back(C2PSA(c1024, c1024, d2));                // 10
  // Head (PAN).
  model.push_back(Up2());                                 // 11
  model.push_back(Concat(1));                             // 12 cat backbone P4
  model.push_back(C3k2(c1024 + c512, c512, d2, big));     // 13
  model.push_back(Up2());                                 // 14
  model.push_back(Concat(1));                             // 15 cat backbone P3
  model.push_back(C3k2(c512 + c512, c256, d2, big));      // 16 P3 out (layer 4 has c512 channels)
  model.push_back(Conv(c256, c256, 3, 2));                // 17
  model.push_back(Concat(1));                             // 18 cat head P4
  model.push_back(C3k2(c256 + c512, c512, d2, big));      // 19 P4 out
  model.push_back(Conv(c512, c512, 3, 2));                // 20
  model.push_back(Concat(1));                             // 21 cat head P5
  model.push_back(C3k2(c512 + c1024, c1024, d2, true));   // 22 P5 out
  model.push_back(Detect(options.nc, std::vector<int64_t>{c256, c512, c1024}, strides, options.reg_max,
                         ClassBranch::kDepthwise));  // 23
}

std::vector<at::Tensor> YOLO11Neck(nn::ModuleListImpl& model, const at::Tensor& images, const LayerObserver* observe) {
  const auto seen = [observe](size_t i, at::Tensor y) { return Observed(observe, i, std::move(y)); };
  auto conv = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<ConvImpl>()->forward(x)); };
  auto c3k2 = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<C3k2Impl>()->forward(x)); };
  auto up = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<nn::UpsampleImpl>()->forward(x)); };
  auto cat = [&](size_t i, const at::Tensor& a, const at::Tensor& b) { return seen(i, at::cat({a, b}, 1)); };

  auto x = conv(1, conv(0, images));
  x = conv(3, c3k2(2, x));
  auto p3 = c3k2(4, x);
  auto p4 = c3k2(6, conv(5, p3));
  auto p5 = seen(9, model.ptr(9)->as<SPPFImpl>()->forward(c3k2(8, conv(7, p4))));
  p5 = seen(10, model.ptr(10)->as<C2PSAImpl>()->forward(p5));

  auto h13 = c3k2(13, cat(12, up(11, p5), p4));
  auto h16 = c3k2(16, cat(15, up(14, h13), p3));
  auto h19 = c3k2(19, cat(18, conv(17, h16), h13));
  auto h22 = c3k2(22, cat(21, conv(20, h19), p5));
  return {h16, h19, h22};
}

}  // namespace yc::trainer::model_graph
