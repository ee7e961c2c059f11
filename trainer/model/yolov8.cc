// YOLOv8's layer graph (Ultralytics cfg/models/v8/yolov8.yaml): C2f backbone, SPPF, PAN neck of C2f
// without shortcuts, and the legacy Detect head.
#include "trainer/model/blocks.h"
#include "trainer/model/detect.h"
#include "trainer/model/layer_graphs.h"
#include "trainer/model/pan.h"

namespace yc::trainer::model_graph {

namespace nn = torch::nn;

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
  // Head: the PAN (trainer/model/pan.h) of C2f without shortcuts, then Detect.
  AppendPan(model, {c256, c512, c1024, c256, c512, c1024}, [d3](size_t, int64_t in, int64_t out) {
    return std::shared_ptr<nn::Module>(C2f(in, out, d3, false).ptr());
  });                                                      // 10-21
  model.push_back(Detect(options.nc, std::vector<int64_t>{c256, c512, c1024}, strides, options.reg_max,
                         ClassBranch::kLegacy));  // 22
}

std::vector<at::Tensor> YOLOv8Neck(nn::ModuleListImpl& model, const at::Tensor& images, const LayerObserver* observe) {
  const auto seen = [observe](size_t i, at::Tensor y) { return Observed(observe, i, std::move(y)); };
  auto conv = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<ConvImpl>()->forward(x)); };
  auto c2f = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<C2fImpl>()->forward(x)); };

  auto x = conv(1, conv(0, images));
  x = conv(3, c2f(2, x));
  auto p3 = c2f(4, x);
  auto p4 = c2f(6, conv(5, p3));
  auto p5 = seen(9, model.ptr(9)->as<SPPFImpl>()->forward(c2f(8, conv(7, p4))));
  const RunPanBlock block = [&](size_t i, const at::Tensor& in) { return model.ptr(i)->as<C2fImpl>()->forward(in); };
  return RunPan(model, 10, p3, p4, p5, block, observe);
}

}  // namespace yc::trainer::model_graph
