#include "loader/render/train_geometry.h"

namespace yc {

void ComputeSubGeometry(const SubPlan& plan, const SubInputs& in, const LoaderOptions& o, cv::Size shape,
                        SubGeometry* g, std::vector<BoxXyxy>* boxes) {
  const int s = o.imgsz;
  const bool perspective = o.hyp.perspective != 0;
  boxes->clear();
  g->mosaic = plan.mosaic;
  if (plan.mosaic) {
    std::array<cv::Size, 4> sizes;
    for (int i = 0; i < 4; ++i) sizes[i] = in.images[i].size();
    g->placements = MosaicPlacements(s, plan.centre.xc, plan.centre.yc, sizes);
    for (int i = 0; i < 4; ++i)
      AppendTileBoxes(in.boxes[i], in.box_counts[i], sizes[i], g->placements[i].padw, g->placements[i].padh, boxes);
    ClipBoxes(2.0f * s, 2.0f * s, boxes);
    RemoveZeroAreaBoxes(boxes);
    const int border = -((s + 1) / 2);  // Python -s // 2
    g->canvas_w = g->canvas_h = 2 * s;
    g->affine = BuildAffine(plan.affine, perspective, 2 * s, 2 * s, border, border);
    return;
  }
  const cv::Mat& img = in.images[0];
  g->letterbox = ComputeLetterbox(img.rows, img.cols, shape.height, shape.width, /*scaleup=*/true);
  AppendTileBoxes(in.boxes[0], in.box_counts[0], img.size(), 0, 0, boxes);
  LetterboxBoxes(g->letterbox, boxes);
  g->canvas_w = g->letterbox.out_w();
  g->canvas_h = g->letterbox.out_h();
  g->affine = BuildAffine(plan.affine, perspective, g->canvas_w, g->canvas_h, 0, 0);
}

}  // namespace yc
