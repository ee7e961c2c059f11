// YOLOv8's layer graph (Ultralytics cfg/models/v8/yolov8.yaml): C2f backbone, SPPF, PAN neck of C2f
// without shortcuts, and the legacy Detect head.
#include <torch/nn/modules/upsampling.h>

#include "trainer/model/blocks.h"
#include "trainer/model/detect.h"
#include "trainer/model/layer_graphs.h"

namespace yc::trainer::model_graph {

namespace nn = torch::nn;

namespace {
nn::Upsample Up2() {
  return nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest));
}
}  // namespace

void BuildYOLOv8(nn::ModuleListImpl& model, const ModelOptions& options, const std::vector<double>& strides) {
  const ScaleSpec spec = SpecFor(ModelFamily::kV8, options.scale);
  const int64_t c64 = Width(64, spec), c128 = Width(128, spec), c256 = Width(256, spec), c512 = Width(512, spec),
                c1024 = Width(1024, spec);
  const int64_t d3 = Depth(3, spec), d6 = Depth(6, spec);
  // Backbone.
  model.push_back(Conv(options.in_channels, c64, 3, 2));  // 0  P1/2
  model.push_back(Conv(c64, c128, 3, 2));                  // 1  P2/4
  model.push_back(C2f(c128, c128, d3, true));              // 2
  model.push_back(Conv(c128, c256, 3, 2));                 // 3  P3/8
  model.push_back(C2f(c256, c256, d6, true));              // 4
  model.push_back(Conv(c256, c512, 3, 2));                 // 5  P4/16
  model.push_back(C2f(c512, c512, d6, true));              // 6
  model.push_back(Conv(c512, c1024, 3, 2));                // 7  P5/32
  model.push_back(C2f(c1024, c1024, d3, true));            // 8
  model.push_back(SPPF(c1024, c1024, 5));                  // 9
  // Head (PAN).
  model.push_back(Up2());                                 // 10
  model.push_back(Concat(1));                             // 11 cat P4
  model.push_back(C2f(c1024 + c512, c512, d3, false));    // 12
  model.push_back(Up2());                                 // 13
  model.push_back(Concat(1));                             // 14 cat P3
  model.push_back(C2f(c512 + c256, c256, d3, false));     // 15 P3 out
  model.push_back(Conv(c256, c256, 3, 2));                // 16
  model.push_back(Concat(1));                             // 17 cat head P4
  model.push_back(C2f(c256 + c512, c512, d3, false));     // 18 P4 out
  model.push_back(Conv(c512, c512, 3, 2));                // 19
  model.push_back(Concat(1));                             // 20 cat head P5
  model.push_back(C2f(c512 + c1024, c1024, d3, false));   // 21 P5 out
  model.push_back(Detect(options.nc, std::vector<int64_t>{c256, c512, c1024}, strides, options.reg_max,
                         ClassBranch::kLegacy));  // 22
}

std::vector<at::Tensor> YOLOv8Neck(nn::ModuleListImpl& model, const at::Tensor& images, const LayerObserver* observe) {
  const auto seen = [observe](size_t i, at::Tensor y) { return Observed(observe, i, std::move(y)); };
  auto conv = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<ConvImpl>()->forward(x)); };
  auto c2f = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<C2fImpl>()->forward(x)); };
  auto up = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<nn::UpsampleImpl>()->forward(x)); };
  auto cat = [&](size_t i, const at::Tensor& a, const at::Tensor& b) { return seen(i, at::cat({a, b}, 1)); };

  auto x = conv(1, conv(0, images));
  x = conv(3, c2f(2, x));
  auto p3 = c2f(4, x);
  auto p4 = c2f(6, conv(5, p3));
  auto p5 = seen(9, model.ptr(9)->as<SPPFImpl>()->forward(c2f(8, conv(7, p4))));

  auto h12 = c2f(12, cat(11, up(10, p5), p4));
  auto h15 = c2f(15, cat(14, up(13, h12), p3));
  auto h18 = c2f(18, cat(17, conv(16, h15), h12));
  auto h21 = c2f(21, cat(20, conv(19, h18), p5));
  return {h15, h18, h21};
}

}  // namespace yc::trainer::model_graph
