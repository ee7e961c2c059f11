#include "loader/ops/flip.h"

namespace yc {

FlipDraw DrawFlips(Rng& rng, double flipud, double fliplr) {
  FlipDraw f;
  f.ud = rng.Random() < flipud;
  f.lr = rng.Random() < fliplr;
  return f;
}

void FlipBoxes(const FlipDraw& flip, float w, float h, std::vector<BoxXyxy>* boxes) {
  for (BoxXyxy& b : *boxes) {
    if (flip.ud) {
      const float y1 = h - b.y2, y2 = h - b.y1;
      b.y1 = y1, b.y2 = y2;
    }
    if (flip.lr) {
      const float x1 = w - b.x2, x2 = w - b.x1;
      b.x1 = x1, b.x2 = x2;
    }
  }
}

Mat3 FlipMatrix(const FlipDraw& flip, double w, double h) {
  Mat3 F;
  if (flip.lr) F(0, 0) = -1, F(0, 2) = w;
  if (flip.ud) F(1, 1) = -1, F(1, 2) = h;
  return F;
}

void FlipImage(const FlipDraw& flip, cv::Mat* image) {
  if (flip.ud && flip.lr)
    cv::flip(*image, *image, -1);
  else if (flip.ud)
    cv::flip(*image, *image, 0);
  else if (flip.lr)
    cv::flip(*image, *image, 1);
}

}  // namespace yc
