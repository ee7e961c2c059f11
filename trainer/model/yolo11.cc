// YOLO11's layer graph (Ultralytics cfg/models/11/yolo11.yaml): C3k2 backbone, SPPF, C2PSA attention on
// P5, PAN neck of C3k2, and the Detect head with the depthwise class branch.
#include "trainer/model/blocks.h"
#include "trainer/model/blocks_yolo11.h"
#include "trainer/model/detect.h"
#include "trainer/model/layer_graphs.h"
#include "trainer/model/pan.h"

namespace yc::trainer::model_graph {

namespace nn = torch::nn;

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
  // Head: the PAN (trainer/model/pan.h) of C3k2, its last with C3k blocks at every scale (the yaml's
  // `[1024, True]`), then Detect.
  AppendPan(model, {c512, c512, c1024, c256, c512, c1024}, [d2, big](size_t layer, int64_t in, int64_t out) {
    return std::shared_ptr<nn::Module>(C3k2(in, out, d2, big || layer == 22).ptr());
  });                                                      // 11-22
  model.push_back(Detect(options.nc, std::vector<int64_t>{c256, c512, c1024}, strides, options.reg_max,
                         ClassBranch::kDepthwise));  // 23
}

std::vector<at::Tensor> YOLO11Neck(nn::ModuleListImpl& model, const at::Tensor& images, const LayerObserver* observe) {
  const auto seen = [observe](size_t i, at::Tensor y) { return Observed(observe, i, std::move(y)); };
  auto conv = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<ConvImpl>()->forward(x)); };
  auto c3k2 = [&](size_t i, const at::Tensor& x) { return seen(i, model.ptr(i)->as<C3k2Impl>()->forward(x)); };

  auto x = conv(1, conv(0, images));
  x = conv(3, c3k2(2, x));
  auto p3 = c3k2(4, x);
  auto p4 = c3k2(6, conv(5, p3));
  auto p5 = seen(9, model.ptr(9)->as<SPPFImpl>()->forward(c3k2(8, conv(7, p4))));
  p5 = seen(10, model.ptr(10)->as<C2PSAImpl>()->forward(p5));
  const RunPanBlock block = [&](size_t i, const at::Tensor& in) { return model.ptr(i)->as<C3k2Impl>()->forward(in); };
  return RunPan(model, 11, p3, p4, p5, block, observe);
}

}  // namespace yc::trainer::model_graph
