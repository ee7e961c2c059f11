#include "trainer/yolov8.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <c10/core/GradMode.h>
#include <torch/nn/modules/upsampling.h>

namespace yc::trainer {

namespace nn = torch::nn;

ScaleSpec SpecFor(ModelScale scale) {
  switch (scale) {
    case ModelScale::kN: return {0.33, 0.25, 1024};
    case ModelScale::kS: return {0.33, 0.50, 1024};
    case ModelScale::kM: return {0.67, 0.75, 768};
    case ModelScale::kL: return {1.00, 1.00, 512};
    case ModelScale::kX: return {1.00, 1.25, 512};
  }
  return {0.33, 0.25, 1024};
}

Result<ModelScale> ParseModelScale(const std::string& name) {
  std::string s;
  for (char c : name) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s.rfind("yolov8", 0) == 0) s = s.substr(6);
  if (s == "n") return ModelScale::kN;
  if (s == "s") return ModelScale::kS;
  if (s == "m") return ModelScale::kM;
  if (s == "l") return ModelScale::kL;
  if (s == "x") return ModelScale::kX;
  return Status::InvalidArgument("model scale '" + name + "': expected one of n, s, m, l, x (or yolov8n..yolov8x)");
}

const char* ModelScaleName(ModelScale scale) {
  switch (scale) {
    case ModelScale::kN: return "n";
    case ModelScale::kS: return "s";
    case ModelScale::kM: return "m";
    case ModelScale::kL: return "l";
    case ModelScale::kX: return "x";
  }
  return "?";
}

namespace {

// parse_model's channel rule: make_divisible(min(c, max_channels) * width, 8).
int64_t Width(int64_t c, const ScaleSpec& spec) {
  const double x = static_cast<double>(std::min(c, spec.max_channels)) * spec.width;
  return static_cast<int64_t>(std::ceil(x / 8.0)) * 8;
}

// parse_model's depth rule: max(round(n * depth), 1) for n > 1. Python's round is half-to-even, as is
// nearbyint under the default rounding mode.
int64_t Depth(int64_t n, const ScaleSpec& spec) {
  if (n <= 1) return n;
  return std::max<int64_t>(static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * spec.depth)), 1);
}

}  // namespace

YOLOv8Impl::YOLOv8Impl(const YOLOv8Options& options) : options_(options) { reset(); }

void YOLOv8Impl::reset() {
  const ScaleSpec spec = SpecFor(options_.scale);
  const int64_t c64 = Width(64, spec), c128 = Width(128, spec), c256 = Width(256, spec), c512 = Width(512, spec),
                c1024 = Width(1024, spec);
  const int64_t d3 = Depth(3, spec), d6 = Depth(6, spec);
  model = register_module("model", nn::ModuleList());
  // Backbone.
  model->push_back(Conv(options_.in_channels, c64, 3, 2));  // 0  P1/2
  model->push_back(Conv(c64, c128, 3, 2));                   // 1  P2/4
  model->push_back(C2f(c128, c128, d3, true));               // 2
  model->push_back(Conv(c128, c256, 3, 2));                  // 3  P3/8
  model->push_back(C2f(c256, c256, d6, true));               // 4
  model->push_back(Conv(c256, c512, 3, 2));                  // 5  P4/16
  model->push_back(C2f(c512, c512, d6, true));               // 6
  model->push_back(Conv(c512, c1024, 3, 2));                 // 7  P5/32
  model->push_back(C2f(c1024, c1024, d3, true));             // 8
  model->push_back(SPPF(c1024, c1024, 5));                   // 9
  // Head (PAN).
  auto up = [] {
    return nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest));
  };
  model->push_back(up());                                // 10
  model->push_back(Concat(1));                           // 11 cat P4
  model->push_back(C2f(c1024 + c512, c512, d3, false));  // 12
  model->push_back(up());                                // 13
  model->push_back(Concat(1));                           // 14 cat P3
  model->push_back(C2f(c512 + c256, c256, d3, false));   // 15 P3 out
  model->push_back(Conv(c256, c256, 3, 2));              // 16
  model->push_back(Concat(1));                           // 17 cat head P4
  model->push_back(C2f(c256 + c512, c512, d3, false));   // 18 P4 out
  model->push_back(Conv(c512, c512, 3, 2));              // 19
  model->push_back(Concat(1));                           // 20 cat head P5
  model->push_back(C2f(c512 + c1024, c1024, d3, false));  // 21 P5 out
  auto head = Detect(options_.nc, std::vector<int64_t>{c256, c512, c1024}, strides_, options_.reg_max);
  head->BiasInit();
  model->push_back(head);  // 22
}

DetectImpl& YOLOv8Impl::detect() { return *model->ptr(22)->as<DetectImpl>(); }

DetectOutput YOLOv8Impl::forward(const at::Tensor& images) {
  // The PAN concatenations need every level to halve exactly; say so instead of a shape error deep inside.
  TORCH_CHECK(images.dim() == 4 && images.size(1) == options_.in_channels && images.size(2) % 32 == 0 &&
                  images.size(3) % 32 == 0 && images.size(2) > 0 && images.size(3) > 0,
              "YOLOv8: expected (B, ", options_.in_channels, ", H, W) with H and W multiples of 32, got ",
              images.sizes());
  auto conv = [&](size_t i, const at::Tensor& x) { return model->ptr(i)->as<ConvImpl>()->forward(x); };
  auto c2f = [&](size_t i, const at::Tensor& x) { return model->ptr(i)->as<C2fImpl>()->forward(x); };
  auto up = [&](size_t i, const at::Tensor& x) { return model->ptr(i)->as<nn::UpsampleImpl>()->forward(x); };

  auto x = conv(1, conv(0, images));
  x = conv(3, c2f(2, x));
  auto p3 = c2f(4, x);
  auto p4 = c2f(6, conv(5, p3));
  auto p5 = model->ptr(9)->as<SPPFImpl>()->forward(c2f(8, conv(7, p4)));

  auto h12 = c2f(12, at::cat({up(10, p5), p4}, 1));
  auto h15 = c2f(15, at::cat({up(13, h12), p3}, 1));
  auto h18 = c2f(18, at::cat({conv(16, h15), h12}, 1));
  auto h21 = c2f(21, at::cat({conv(19, h18), p5}, 1));

  DetectOutput out;
  out.feats = detect().forward({h15, h18, h21});
  if (!is_training()) out.pred = detect().Decode(out.feats);
  return out;
}

at::Tensor YOLOv8Impl::Decode(const std::vector<at::Tensor>& feats) { return detect().Decode(feats); }

int64_t CountParameters(const torch::nn::Module& module, bool trainable_only) {
  int64_t n = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    if (!trainable_only || p.requires_grad()) n += p.numel();
  }
  return n;
}

void ToChannelsLast(torch::nn::Module& module) {
  c10::NoGradGuard no_grad;
  for (auto& p : module.parameters(true)) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (auto& b : module.buffers(true)) {
    if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

}  // namespace yc::trainer
