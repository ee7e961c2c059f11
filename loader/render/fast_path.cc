#include "loader/render/fast_path.h"

#include <opencv2/imgproc.hpp>

#include "loader/kernels/canvas_warp.h"
#include "loader/ops/cutmix.h"
#include "loader/ops/flip.h"
#include "loader/ops/mixup.h"
#include "loader/render/train_geometry.h"

namespace yc {

namespace {

Status RenderSub(const SubPlan& plan, const FlipDraw& flip, const RecordSource& source, const LoaderOptions& o,
                 int base, RenderScratch* scratch, cv::Mat* out, std::vector<BoxXyxy>* boxes) {
  SubInputs in;
  YC_RETURN_IF_ERROR(ReadSubInputs(source, plan, o.imgsz, base, scratch, &in));
  SubGeometry g;
  ComputeSubGeometry(plan, in, o, out->size(), &g, boxes);

  CanvasTile tiles[4];
  int count = 0;
  if (g.mosaic) {
    for (int i = 0; i < 4; ++i) tiles[count++] = {in.images[i], g.placements[i].tile, g.placements[i].canvas.tl()};
  } else {
    cv::Mat img = in.images[0];
    if (img.cols != g.letterbox.new_w || img.rows != g.letterbox.new_h) {
      cv::resize(img, scratch->letterboxed, cv::Size(g.letterbox.new_w, g.letterbox.new_h), 0, 0, cv::INTER_LINEAR);
      img = scratch->letterboxed;
    }
    tiles[count++] = {img, cv::Rect(0, 0, img.cols, img.rows), cv::Point(g.letterbox.left, g.letterbox.top)};
  }
  const AffineTransform& t = g.affine;
  // Pixels: column x -> w - 1 - x (np.flip); boxes: x -> w - x (continuous coordinates).
  const Mat3 pixel_map = FlipMatrix(flip, t.out_w - 1, t.out_h - 1) * t.M;
  const Mat3 box_map = FlipMatrix(flip, t.out_w, t.out_h) * t.M;
  RenderCanvasWarp(tiles, count, pixel_map, t.perspective, out, &scratch->warp);
  WarpBoxes(box_map, t.perspective, t.scale, t.out_w, t.out_h, boxes, &scratch->boxes_scratch);
  return Status::OK();
}

// MixUp: the partner rendered with the same flips, blended in, its boxes appended.
Status RenderMixup(const TrainPlan& plan, const RecordSource& source, const LoaderOptions& o, RenderScratch* scratch,
                   cv::Mat* out, std::vector<BoxXyxy>* boxes) {
  scratch->mix.create(out->size(), CV_8UC3);
  YC_RETURN_IF_ERROR(RenderSub(plan.mix, plan.flip, source, o, 4, scratch, &scratch->mix, &scratch->boxes_mix));
  for (int y = 0; y < out->rows; ++y)
    MixupBlend(out->ptr<uint8_t>(y), scratch->mix.ptr<uint8_t>(y), plan.mix_ratio, out->ptr<uint8_t>(y),
               static_cast<size_t>(out->cols) * 3);
  boxes->insert(boxes->end(), scratch->boxes_mix.begin(), scratch->boxes_mix.end());
  return Status::OK();
}

// CutMix on the output, which this path renders already flipped: with its areas flipped the same way
// it pastes the pixels and keeps the boxes that Ultralytics' CutMix, before its flips, does.
Status RenderCutMix(const TrainPlan& plan, const RecordSource& source, const LoaderOptions& o, RenderScratch* scratch,
                    cv::Mat* out, std::vector<BoxXyxy>* boxes) {
  const CutMixDraw draw = FlipCutMixDraw(plan.cut_draw, plan.flip, out->cols, out->rows);
  auto render = [&](cv::Mat* partner, std::vector<BoxXyxy>* partner_boxes) {
    partner->create(out->size(), CV_8UC3);
    return RenderSub(plan.cut, plan.flip, source, o, 4, scratch, partner, partner_boxes);
  };
  return ApplyCutMix(draw, render, &scratch->mix, &scratch->boxes_mix, out, boxes);
}

}  // namespace

Status RenderTrainFast(const TrainPlan& plan, const RecordSource& source, const LoaderOptions& o,
                       RenderScratch* scratch, cv::Mat* out, std::vector<BoxXyxy>* boxes) {
  YC_RETURN_IF_ERROR(RenderSub(plan.main, plan.flip, source, o, 0, scratch, out, boxes));
  if (plan.mixup) YC_RETURN_IF_ERROR(RenderMixup(plan, source, o, scratch, out, boxes));
  if (plan.cutmix) YC_RETURN_IF_ERROR(RenderCutMix(plan, source, o, scratch, out, boxes));
  return Status::OK();
}

}  // namespace yc
