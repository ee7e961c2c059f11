// NonMaxSuppressionBatched: the whole batch's NMS with a handful of host syncs (see nms.h).
//
// 1. Candidates of every image at once: one nonzero over (B, A, nc) scores; sorted by image, then by
//    descending score (stable, so ties keep the per-image path's anchor-major order); at most max_nms
//    per image.
// 2. Greedy suppression in rounds. Each round takes every unfinished image's next `chunk` candidates
//    and computes on the device, for all those images together, the IoU > threshold relation of the
//    chunk with itself and of each chunk candidate with the boxes already kept. One host read of that
//    (bit-packed) result per round; the host scan keeps a candidate when no kept box and no earlier kept
//    candidate of its chunk overlaps it. Images leave once max_det boxes are kept or candidates run out,
//    so most batches need one or two rounds.
// The kept set is exactly the sequential greedy one: a candidate's fate depends only on the kept boxes
// ranked before it, which are either in earlier rounds (kept x chunk) or earlier in its chunk.
#include <algorithm>
#include <cstring>

#include "trainer/model/box_ops.h"
#include "trainer/eval/nms.h"

namespace yc::trainer {

namespace {

// (G, R, 4) x (G, C, 4) xyxy -> (G, R, C) bool, IoU > threshold, with the same expression (and so the
// same float rounding) as the per-image back-ends.
at::Tensor Overlaps(const at::Tensor& a, const at::Tensor& b, double iou_threshold) {
  auto ax1 = a.select(2, 0).unsqueeze(2), ay1 = a.select(2, 1).unsqueeze(2);
  auto ax2 = a.select(2, 2).unsqueeze(2), ay2 = a.select(2, 3).unsqueeze(2);
  auto bx1 = b.select(2, 0).unsqueeze(1), by1 = b.select(2, 1).unsqueeze(1);
  auto bx2 = b.select(2, 2).unsqueeze(1), by2 = b.select(2, 3).unsqueeze(1);
  auto w = (at::minimum(ax2, bx2) - at::maximum(ax1, bx1)).clamp_min(0);
  auto h = (at::minimum(ay2, by2) - at::maximum(ay1, by1)).clamp_min(0);
  auto inter = w * h;
  auto uni = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
  return (inter / uni).gt(iou_threshold).logical_and(uni.gt(0));
}

// (..., 8k) bool -> (..., k) uint8, bit j % 8 of byte j / 8 holding element j.
at::Tensor PackBits(const at::Tensor& mask) {
  auto sizes = mask.sizes().vec();
  const int64_t n = sizes.back();
  sizes.back() = n / 8;
  sizes.push_back(8);
  auto weights = at::ones({8}, mask.options().dtype(at::kByte)).bitwise_left_shift(at::arange(8, mask.options().dtype(at::kByte)));
  return (mask.view(sizes).to(at::kByte) * weights).sum({-1}, /*keepdim=*/false, at::kByte);
}

at::Tensor ToDevice(const std::vector<int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device, /*non_blocking=*/false);
}

}  // namespace

std::vector<at::Tensor> NonMaxSuppressionBatched(const at::Tensor& prediction, const NmsOptions& options,
                                                 int64_t chunk) {
  std::vector<at::Tensor> out;
  if (!prediction.defined() || prediction.dim() != 3 || prediction.size(1) < 5) return out;
  const int64_t bs = prediction.size(0), nc = prediction.size(1) - 4, anchors = prediction.size(2);
  const auto device = prediction.device();
  chunk = std::max<int64_t>((chunk + 7) / 8 * 8, 8);
  auto pred = prediction.to(at::kFloat).transpose(1, 2);  // (B, A, 4 + nc)
  auto cls = pred.narrow(2, 4, nc).contiguous();          // (B, A, nc)

  // 1. Candidates (image, anchor, class, score) of the whole batch: the one nonzero is the first sync.
  at::Tensor image, anchor, klass, score;
  if (options.multi_label) {
    auto idx = cls.gt(options.conf).nonzero();  // (n, 3), row-major: image, anchor, class
    image = idx.select(1, 0), anchor = idx.select(1, 1), klass = idx.select(1, 2);
    score = cls.view({-1}).index_select(0, (image * anchors + anchor) * nc + klass);
  } else {
    auto best = cls.max(2);  // (B, A) score and class
    auto idx = std::get<0>(best).gt(options.conf).nonzero();
    image = idx.select(1, 0), anchor = idx.select(1, 1);
    score = std::get<0>(best).view({-1}).index_select(0, image * anchors + anchor);
    klass = std::get<1>(best).view({-1}).index_select(0, image * anchors + anchor);
  }
  if (!options.classes.empty()) {  // the same candidates as the per-image path keeps (nms.h)
    const at::Tensor keep = ClassFilterMask(klass, options.classes).nonzero().view(-1);
    image = image.index_select(0, keep), anchor = anchor.index_select(0, keep);
    klass = klass.index_select(0, keep), score = score.index_select(0, keep);
  }
  const int64_t n = image.size(0);
  if (n == 0 || options.max_det == 0) {
    for (int64_t b = 0; b < bs; ++b) out.push_back(at::zeros({0, 6}, pred.options()));
    return out;
  }
  auto by_score = std::get<1>(score.sort(/*stable=*/true, 0, /*descending=*/true));
  auto order = by_score.index_select(0, std::get<1>(image.index_select(0, by_score).sort(/*stable=*/true, 0, false)));
  auto rows = (image * anchors + anchor).index_select(0, order);
  auto det = at::cat({XywhToXyxy(pred.narrow(2, 0, 4).reshape({-1, 4}).index_select(0, rows)),
                      score.index_select(0, order).unsqueeze(1), klass.index_select(0, order).to(at::kFloat).unsqueeze(1)},
                     1);  // (n, 6), grouped by image, descending score within
  auto boxes = det.narrow(1, 0, 4) + det.narrow(1, 5, 1) * (options.agnostic ? 0.0 : options.max_wh);
  auto counts = at::bincount(image, {}, bs).to(at::kCPU);  // second sync
  const int64_t* count = counts.data_ptr<int64_t>();

  std::vector<int64_t> start(static_cast<size_t>(bs)), length(static_cast<size_t>(bs)), done(static_cast<size_t>(bs), 0);
  int64_t most = 0;
  for (int64_t b = 0, s = 0; b < bs; s += count[b], ++b) {
    start[b] = s;
    length[b] = std::min(count[b], options.max_nms);
    most = std::max(most, length[b]);
  }
  const int64_t capacity = std::max<int64_t>(options.max_det < 0 ? most : std::min(options.max_det, most), 1);
  auto kept_boxes = at::zeros({bs, capacity, 4}, boxes.options());  // empty slots: zero area, overlap nothing
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(bs));
  auto lane = at::arange(chunk, boxes.options().dtype(at::kLong));
  const int64_t row_bytes = chunk / 8 + 1;  // packed chunk x chunk row + "overlaps a kept box" byte
  std::vector<uint8_t> removed(static_cast<size_t>(chunk / 8));

  // 2. Rounds over the unfinished images.
  for (;;) {
    std::vector<int64_t> active, base, limit;
    for (int64_t b = 0; b < bs; ++b) {
      if (done[b] < length[b] && static_cast<int64_t>(kept[b].size()) < capacity) {
        active.push_back(b);
        base.push_back(start[b] + done[b]);
        limit.push_back(std::min(chunk, length[b] - done[b]));
      }
    }
    if (active.empty()) break;
    const int64_t g = static_cast<int64_t>(active.size());
    auto valid = lane.unsqueeze(0) < ToDevice(limit, device).unsqueeze(1);                // (G, chunk)
    auto idx = at::where(valid, ToDevice(base, device).unsqueeze(1) + lane.unsqueeze(0), 0);
    auto cb = boxes.index_select(0, idx.view({-1})).view({g, chunk, 4}) * valid.unsqueeze(2);
    auto kb = kept_boxes.index_select(0, ToDevice(active, device));
    auto within = PackBits(Overlaps(cb, cb, options.iou));                                  // (G, chunk, chunk/8)
    auto by_kept = Overlaps(kb, cb, options.iou).any(1).to(at::kByte).unsqueeze(2);         // (G, chunk, 1)
    auto host = at::cat({within, by_kept}, 2).to(at::kCPU).contiguous();                   // the round's sync
    const uint8_t* bits = host.data_ptr<uint8_t>();

    std::vector<int64_t> new_image, new_slot, new_row;
    for (int64_t a = 0; a < g; ++a) {
      const int64_t b = active[a];
      std::fill(removed.begin(), removed.end(), uint8_t{0});
      for (int64_t i = 0; i < limit[a] && static_cast<int64_t>(kept[b].size()) < capacity; ++i) {
        const uint8_t* row = bits + (a * chunk + i) * row_bytes;
        if (row[chunk / 8] != 0 || (removed[i / 8] >> (i % 8) & 1u)) continue;
        const int64_t global = base[a] + i;
        new_image.push_back(b);
        new_slot.push_back(static_cast<int64_t>(kept[b].size()));
        new_row.push_back(global);
        kept[b].push_back(global);
        for (int64_t k = i / 8; k < chunk / 8; ++k) removed[k] |= row[k];
      }
      done[b] += limit[a];
    }
    if (!new_row.empty()) {
      kept_boxes.index_put_({ToDevice(new_image, device), ToDevice(new_slot, device)},
                            boxes.index_select(0, ToDevice(new_row, device)));
    }
  }

  std::vector<int64_t> all;
  for (const auto& k : kept) all.insert(all.end(), k.begin(), k.end());
  auto selected = det.index_select(0, ToDevice(all, device));
  out.reserve(static_cast<size_t>(bs));
  int64_t offset = 0;
  for (int64_t b = 0; b < bs; ++b) {
    const int64_t m = static_cast<int64_t>(kept[b].size());
    out.push_back(selected.narrow(0, offset, m));
    offset += m;
  }
  return out;
}

}  // namespace yc::trainer
