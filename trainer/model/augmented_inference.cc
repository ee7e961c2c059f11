#include "trainer/model/augmented_inference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace yc::trainer {

namespace {

// One pass of _predict_augment: scales s = [1, 0.83, 0.67], flips f = [None, 3 (lr), None].
struct AugmentPass {
  double scale;
  bool flip_lr;
};
constexpr std::array<AugmentPass, 3> kPasses = {{{1.0, false}, {0.83, true}, {0.67, false}}};

// _descale_pred, in place on a pass's own (B, 4 + nc, A) prediction: xywh / scale, then x -> width - x for
// the flipped pass (-x + width is width - x exactly, without a temporary).
void DescalePrediction(at::Tensor& pred, const AugmentPass& pass, int64_t width) {
  if (pass.scale != 1.0) pred.narrow(1, 0, 4).div_(pass.scale);
  if (pass.flip_lr) pred.select(1, 0).neg_().add_(width);
}

// Anchors per grid cell of the coarsest level, summed over the levels: 1 + 4 + 16 for three levels
// (_clip_augmented's g; each level has 4x the cells of the next coarser one).
int64_t CellsPerCoarseCell(size_t levels) {
  int64_t g = 0;
  for (size_t i = 0; i < levels; ++i) g += int64_t{1} << (2 * i);
  return g;
}

}  // namespace

at::Tensor ScaleImage(const at::Tensor& images, double ratio, int64_t grid) {
  if (ratio == 1.0) return images;
  const int64_t h = images.size(2), w = images.size(3);
  // Python's int() of the float products: truncation, as the cast does.
  const int64_t sh = static_cast<int64_t>(static_cast<double>(h) * ratio);
  const int64_t sw = static_cast<int64_t>(static_cast<double>(w) * ratio);
  const auto padded = [&](int64_t x) {
    return static_cast<int64_t>(std::ceil(static_cast<double>(x) * ratio / static_cast<double>(grid))) * grid;
  };
  // F.interpolate(size=...) passes no scale factors: the sizes alone define the sampling grid.
  const at::Tensor resized = at::upsample_bilinear2d(images, {sh, sw}, /*align_corners=*/false);
  return at::constant_pad_nd(resized, {0, padded(w) - sw, 0, padded(h) - sh}, 0.447);  // 0.447: ImageNet's mean
}

DetectOutput AugmentedForward(DetectionModelImpl& model, const at::Tensor& images) {
  const int64_t width = images.size(3);
  const std::vector<double>& strides = model.strides();
  const int64_t grid = static_cast<int64_t>(*std::max_element(strides.begin(), strides.end()));
  DetectOutput out;
  std::array<at::Tensor, kPasses.size()> preds;
  for (size_t i = 0; i < kPasses.size(); ++i) {
    const AugmentPass& pass = kPasses[i];
    DetectOutput y = model.forward(ScaleImage(pass.flip_lr ? images.flip({3}) : images, pass.scale, grid));
    DescalePrediction(y.pred, pass, width);
    preds[i] = std::move(y.pred);
    if (i == 0) out.feats = std::move(y.feats);
  }
  // _clip_augmented: the first (largest) pass without its coarsest level, the last (smallest) without its
  // finest; views, copied once by the concatenation.
  const int64_t g = CellsPerCoarseCell(strides.size());
  at::Tensor& large = preds.front();
  at::Tensor& small = preds.back();
  const int64_t coarsest = large.size(2) / g;
  const int64_t finest = small.size(2) / g * (int64_t{1} << (2 * (strides.size() - 1)));
  large = large.narrow(2, 0, large.size(2) - coarsest);
  small = small.narrow(2, finest, small.size(2) - finest);
  out.pred = at::cat({preds[0], preds[1], preds[2]}, 2);
  return out;
}

}  // namespace yc::trainer
