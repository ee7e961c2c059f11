#include "trainer/eval/nms.h"

#include <algorithm>
#include <limits>

#include "trainer/model/box_ops.h"

namespace yc::trainer {

namespace {

constexpr int64_t kBits = 64;

int64_t Limit(int64_t max_keep, int64_t n) { return max_keep < 0 ? n : std::min(max_keep, n); }

}  // namespace

at::Tensor NmsSortedLoop(const at::Tensor& sorted_boxes, double iou_threshold, int64_t max_keep) {
  auto boxes = sorted_boxes.to(at::kCPU).to(at::kFloat).contiguous();
  const int64_t n = boxes.size(0);
  const int64_t limit = Limit(max_keep, n);
  std::vector<int64_t> keep;
  keep.reserve(static_cast<size_t>(limit));
  std::vector<uint8_t> removed(static_cast<size_t>(n), 0);
  const float* b = boxes.data_ptr<float>();
  for (int64_t i = 0; i < n && static_cast<int64_t>(keep.size()) < limit; ++i) {
    if (removed[i]) continue;
    keep.push_back(i);
    const float ix1 = b[4 * i], iy1 = b[4 * i + 1], ix2 = b[4 * i + 2], iy2 = b[4 * i + 3];
    const float iarea = (ix2 - ix1) * (iy2 - iy1);
    for (int64_t j = i + 1; j < n; ++j) {
      if (removed[j]) continue;
      const float* q = b + 4 * j;
      const float w = std::max(0.0f, std::min(ix2, q[2]) - std::max(ix1, q[0]));
      const float h = std::max(0.0f, std::min(iy2, q[3]) - std::max(iy1, q[1]));
      const float inter = w * h;
      const float uni = iarea + (q[2] - q[0]) * (q[3] - q[1]) - inter;
      // Same expression as torchvision's kernel: suppress when inter / union > threshold.
      if (uni > 0 && inter / uni > static_cast<float>(iou_threshold)) removed[j] = 1;
    }
  }
  auto out = at::empty({static_cast<int64_t>(keep.size())}, at::kLong);
  std::copy(keep.begin(), keep.end(), out.data_ptr<int64_t>());
  return out.to(sorted_boxes.device());
}

at::Tensor NmsSortedBitmask(const at::Tensor& sorted_boxes, double iou_threshold, int64_t max_keep,
                            int64_t block_rows) {
  const auto device = sorted_boxes.device();
  auto boxes = sorted_boxes.to(at::kFloat).contiguous();
  const int64_t n = boxes.size(0);
  const int64_t limit = Limit(max_keep, n);
  const int64_t words = (n + kBits - 1) / kBits;
  block_rows = std::max<int64_t>(block_rows, 1);
  // Bit weights 2^0 .. 2^63 (the last is INT64_MIN); sums of distinct weights never overflow.
  auto shifts = at::arange(kBits, boxes.options().dtype(at::kLong));
  auto weights = at::ones_like(shifts).bitwise_left_shift(shifts);  // made on the device, no copy
  auto x1 = boxes.select(1, 0), y1 = boxes.select(1, 1), x2 = boxes.select(1, 2), y2 = boxes.select(1, 3);
  auto area = (x2 - x1) * (y2 - y1);

  std::vector<uint64_t> removed(static_cast<size_t>(words), 0);
  std::vector<int64_t> keep;
  keep.reserve(static_cast<size_t>(limit));
  for (int64_t r0 = 0; r0 < n && static_cast<int64_t>(keep.size()) < limit; r0 += block_rows) {
    const int64_t rows = std::min(block_rows, n - r0);
    auto rb = boxes.narrow(0, r0, rows);
    auto w = (at::minimum(rb.select(1, 2).unsqueeze(1), x2.unsqueeze(0)) -
              at::maximum(rb.select(1, 0).unsqueeze(1), x1.unsqueeze(0)))
                 .clamp_min(0);
    auto h = (at::minimum(rb.select(1, 3).unsqueeze(1), y2.unsqueeze(0)) -
              at::maximum(rb.select(1, 1).unsqueeze(1), y1.unsqueeze(0)))
                 .clamp_min(0);
    auto inter = w * h;
    auto uni = area.narrow(0, r0, rows).unsqueeze(1) + area.unsqueeze(0) - inter;
    auto over = (inter / uni).gt(iou_threshold).logical_and(uni.gt(0));  // (rows, n)
    auto bitsv = over.to(at::kLong);
    if (words * kBits != n) bitsv = at::constant_pad_nd(bitsv, {0, words * kBits - n}, 0);
    auto packed = (bitsv.view({rows, words, kBits}) * weights).sum(-1);  // (rows, words)
    auto host = packed.to(at::kCPU).contiguous();
    const auto* bits = reinterpret_cast<const uint64_t*>(host.data_ptr<int64_t>());
    for (int64_t i = 0; i < rows && static_cast<int64_t>(keep.size()) < limit; ++i) {
      const int64_t g = r0 + i;
      if (removed[g / kBits] >> (g % kBits) & 1u) continue;
      keep.push_back(g);
      const uint64_t* row = bits + i * words;
      for (int64_t k = g / kBits; k < words; ++k) removed[k] |= row[k];
    }
  }
  auto out = at::empty({static_cast<int64_t>(keep.size())}, at::kLong);
  std::copy(keep.begin(), keep.end(), out.data_ptr<int64_t>());
  return out.to(device);
}

at::Tensor ClassFilterMask(const at::Tensor& klass, const std::vector<int64_t>& classes) {
  const at::Tensor ids = klass.reshape({-1}).to(at::kLong);
  if (classes.empty()) return at::ones_like(ids, ids.options().dtype(at::kBool));
  const at::Tensor wanted = at::tensor(classes, at::TensorOptions().dtype(at::kLong)).to(ids.device());
  return at::isin(ids, wanted);
}

at::Tensor Nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold, int64_t max_keep) {
  if (boxes.size(0) == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  auto order = std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  auto sorted = boxes.index_select(0, order);
  auto kept = boxes.is_cpu() ? NmsSortedLoop(sorted, iou_threshold, max_keep)
                             : NmsSortedBitmask(sorted, iou_threshold, max_keep);
  return order.index_select(0, kept);
}

namespace {

// Ultralytics' non_max_suppression for an end-to-end model: pred[pred[:, 4] > conf][:max_det], then the
// class filter. The rows are already sorted by descending score (zero padding last).
std::vector<at::Tensor> EndToEndDetections(const at::Tensor& prediction, const NmsOptions& options) {
  std::vector<at::Tensor> out;
  const at::Tensor pred = prediction.to(at::kFloat);
  for (int64_t b = 0; b < pred.size(0); ++b) {
    at::Tensor det = pred[b];
    det = det.index_select(0, det.select(1, 4).gt(options.conf).nonzero().view(-1));
    det = det.narrow(0, 0, std::min<int64_t>(det.size(0), options.max_det));
    if (!options.classes.empty()) det = det.index_select(0, ClassFilterMask(det.select(1, 5), options.classes).nonzero().view(-1));
    out.push_back(det);
  }
  return out;
}

}  // namespace

std::vector<at::Tensor> NonMaxSuppression(const at::Tensor& prediction, const NmsOptions& options) {
  std::vector<at::Tensor> out;
  if (options.end2end) {
    if (!prediction.defined() || prediction.dim() != 3 || prediction.size(2) != 6) return out;
    return EndToEndDetections(prediction, options);
  }
  if (!prediction.defined() || prediction.dim() != 3 || prediction.size(1) < 5) return out;
  if (!prediction.is_cpu()) return NonMaxSuppressionBatched(prediction, options);
  const int64_t bs = prediction.size(0);
  const int64_t nc = prediction.size(1) - 4;
  out.reserve(static_cast<size_t>(bs));
  auto pred = prediction.to(at::kFloat).transpose(1, 2);  // (B, A, 4 + nc)
  for (int64_t b = 0; b < bs; ++b) {
    auto x = pred[b];
    auto box = XywhToXyxy(x.narrow(1, 0, 4));
    auto cls = x.narrow(1, 4, nc);
    at::Tensor det;  // (n, 6)
    if (options.multi_label) {
      auto ij = cls.gt(options.conf).nonzero();  // (n, 2) [anchor, class], row-major like torch.where
      auto i = ij.select(1, 0), j = ij.select(1, 1);
      auto conf = cls.reshape({-1}).index_select(0, i * nc + j).unsqueeze(1);
      det = at::cat({box.index_select(0, i), conf, j.unsqueeze(1).to(at::kFloat)}, 1);
    } else {
      auto best = cls.max(1, /*keepdim=*/true);
      auto conf = std::get<0>(best);
      det = at::cat({box, conf, std::get<1>(best).to(at::kFloat)}, 1);
      det = det.index_select(0, conf.view(-1).gt(options.conf).nonzero().view(-1));
    }
    if (!options.classes.empty()) det = det.index_select(0, ClassFilterMask(det.select(1, 5), options.classes).nonzero().view(-1));
    if (det.size(0) == 0) {
      out.push_back(at::zeros({0, 6}, pred.options()));
      continue;
    }
    if (det.size(0) > options.max_nms) {
      auto top = std::get<1>(det.select(1, 4).sort(/*stable=*/true, 0, /*descending=*/true)).narrow(0, 0, options.max_nms);
      det = det.index_select(0, top);
    }
    auto offset = det.narrow(1, 5, 1) * (options.agnostic ? 0.0 : options.max_wh);
    auto keep = Nms(det.narrow(1, 0, 4) + offset, det.select(1, 4), options.iou, options.max_det);
    out.push_back(det.index_select(0, keep));
  }
  return out;
}

}  // namespace yc::trainer
