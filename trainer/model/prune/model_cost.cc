#include "trainer/model/prune/model_cost.h"

#include <c10/core/GradMode.h>

#include "trainer/model/prune/channel_widths.h"

namespace yc::trainer {

namespace {

// Each convolution's weight elements x its output positions x 2, summed; `per_conv` sees every one.
template <typename PerConv>
double SumConvGflops(DetectionModelImpl& model, int imgsz, PerConv per_conv) {
  double gflops = 0;
  const auto params = model.named_parameters(/*recurse=*/true);
  for (const ConvNode& n : GraphOf(model).convs) {
    const at::Tensor* w = params.find(n.has_bn ? n.path + ".conv.weight" : n.path + ".weight");
    if (w == nullptr) continue;
    const double side = static_cast<double>(imgsz) / n.stride;
    gflops += 2.0 * static_cast<double>(w->numel()) * side * side / 1e9;
    per_conv(n);
  }
  return gflops;
}

}  // namespace

double ModelGflops(DetectionModelImpl& model, int imgsz) {
  return SumConvGflops(model, imgsz, [](const ConvNode&) {});
}

ModelCost MeasureModelSize(DetectionModelImpl& model, int imgsz) {
  ModelCost cost;
  cost.parameters = CountParameters(model);
  cost.gflops = ModelGflops(model, imgsz);
  return cost;
}

ModelCost MeasureModel(DetectionModelImpl& model, int imgsz) {
  ModelCost cost;
  cost.parameters = CountParameters(model);
  cost.layers.resize(model.model->size());
  for (size_t i = 0; i < cost.layers.size(); ++i) cost.layers[i].type = model.LayerType(i);
  cost.gflops = SumConvGflops(model, imgsz, [&](const ConvNode& n) {
    cost.layers.at(static_cast<size_t>(n.layer)).conv_channels += n.out;
  });
  // Output widths from one tiny forward (eval, no grad) on a copy's device: the layers' outputs say it.
  c10::NoGradGuard no_grad;
  const bool training = model.is_training();
  model.eval();
  const at::Tensor probe = at::zeros({1, model.options().in_channels, 64, 64},
                                     model.parameters().front().options().dtype(at::kFloat));
  model.ForwardObserved(probe, [&](size_t i, const at::Tensor& y) { cost.layers.at(i).out = y.size(1); });
  model.train(training);
  return cost;
}

}  // namespace yc::trainer
