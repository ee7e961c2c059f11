#include "loader/render/reference_path.h"

#include "loader/ops/channel_order.h"
#include "loader/ops/cutmix.h"
#include "loader/ops/flip.h"
#include "loader/ops/hsv.h"
#include "loader/ops/mixup.h"
#include "loader/render/train_geometry.h"

namespace yc {

namespace {

Status RenderSub(const SubPlan& plan, const RecordSource& source, const LoaderOptions& o, cv::Size shape, int base,
                 RenderScratch* scratch, cv::Mat* out, std::vector<BoxXyxy>* boxes) {
  SubInputs in;
  YC_RETURN_IF_ERROR(ReadSubInputs(source, plan, o.imgsz, base, scratch, &in));
  SubGeometry g;
  ComputeSubGeometry(plan, in, o, shape, &g, boxes);
  const cv::Mat* canvas;
  if (g.mosaic) {
    BuildMosaicCanvas(o.imgsz, g.placements, in.images, &scratch->canvas);
    canvas = &scratch->canvas;
  } else {
    LetterboxImage(in.images[0], g.letterbox, &scratch->letterboxed);
    canvas = &scratch->letterboxed;
  }
  WarpImageReference(*canvas, g.affine, out);
  WarpBoxes(g.affine.M, g.affine.perspective, g.affine.scale, g.affine.out_w, g.affine.out_h, boxes,
            &scratch->boxes_scratch);
  return Status::OK();
}

}  // namespace

Status RenderTrainReference(const TrainPlan& plan, const RecordSource& source, const LoaderOptions& o, cv::Size shape,
                            RenderScratch* scratch, cv::Mat* out, std::vector<BoxXyxy>* boxes) {
  YC_RETURN_IF_ERROR(RenderSub(plan.main, source, o, shape, 0, scratch, out, boxes));
  if (plan.mixup) {
    YC_RETURN_IF_ERROR(RenderSub(plan.mix, source, o, shape, 4, scratch, &scratch->mix, &scratch->boxes_mix));
    for (int y = 0; y < out->rows; ++y)
      MixupBlend(out->ptr<uint8_t>(y), scratch->mix.ptr<uint8_t>(y), plan.mix_ratio, out->ptr<uint8_t>(y),
                 static_cast<size_t>(out->cols) * 3);
    boxes->insert(boxes->end(), scratch->boxes_mix.begin(), scratch->boxes_mix.end());
  }
  if (plan.cutmix) {
    auto render = [&](cv::Mat* partner, std::vector<BoxXyxy>* partner_boxes) {
      return RenderSub(plan.cut, source, o, shape, 4, scratch, partner, partner_boxes);
    };
    YC_RETURN_IF_ERROR(ApplyCutMix(plan.cut_draw, render, &scratch->mix, &scratch->boxes_mix, out, boxes));
  }
  if (plan.hsv.enabled) ApplyHsvReference(MakeHsvLut(plan.hsv), out);
  FlipImage(plan.flip, out);
  FlipBoxes(plan.flip, static_cast<float>(out->cols), static_cast<float>(out->rows), boxes);
  if (plan.bgr) SwapRedBlueReference(out);
  return Status::OK();
}

}  // namespace yc
