#include "loader/render/val_path.h"

#include <opencv2/imgproc.hpp>

#include "loader/ops/load_image.h"
#include "loader/ops/mosaic.h"

namespace yc {

Status RenderVal(const RecordSource& source, uint64_t index, int imgsz, RenderScratch* scratch, cv::Mat* out,
                 std::vector<BoxXyxy>* boxes, ValSample* info) {
  SubPlan plan;
  plan.record = index;
  SubInputs in;
  YC_RETURN_IF_ERROR(ReadSubInputs(source, plan, imgsz, 0, scratch, &in));
  const cv::Mat& img = in.images[0];
  info->loaded = img.size();
  info->letterbox = ComputeLetterbox(img.rows, img.cols, out->rows, out->cols, /*scaleup=*/false);
  const LetterboxGeometry& g = info->letterbox;
  boxes->clear();
  AppendTileBoxes(in.boxes[0], in.box_counts[0], img.size(), 0, 0, boxes);
  LetterboxBoxes(g, boxes);

  // Straight into `out`: fill, then the (resized) image at (left, top). The letterbox rounding can
  // leave the padded size a pixel off the batch shape; Ultralytics would then fail to stack the
  // batch, we clip to the shape instead.
  out->setTo(cv::Scalar::all(114));
  cv::Mat src = img;
  if (img.cols != g.new_w || img.rows != g.new_h) {
    cv::resize(img, scratch->letterboxed, cv::Size(g.new_w, g.new_h), 0, 0, cv::INTER_LINEAR);
    src = scratch->letterboxed;
  }
  const cv::Rect dst_rect = cv::Rect(g.left, g.top, src.cols, src.rows) & cv::Rect(0, 0, out->cols, out->rows);
  if (dst_rect.area() > 0) src(cv::Rect(0, 0, dst_rect.width, dst_rect.height)).copyTo((*out)(dst_rect));
  return Status::OK();
}

}  // namespace yc
