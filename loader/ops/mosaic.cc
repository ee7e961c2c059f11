#include "loader/ops/mosaic.h"

#include <algorithm>
#include <cmath>

namespace yc {

namespace {
// Python's floor division for a negative numerator: -s // 2.
int NegHalfFloor(int s) { return -((s + 1) / 2); }
}  // namespace

MosaicCentre DrawMosaicCentre(Rng& rng, int s) {
  const int b = NegHalfFloor(s);  // mosaic_border, e.g. -320 for 640
  MosaicCentre c;
  // int() truncates; the range is positive so this is floor.
  c.yc = static_cast<int>(rng.Uniform(-b, 2.0 * s + b));
  c.xc = static_cast<int>(rng.Uniform(-b, 2.0 * s + b));
  return c;
}

std::array<TilePlacement, 4> MosaicPlacements(int s, int xc, int yc, const std::array<cv::Size, 4>& sizes) {
  std::array<TilePlacement, 4> out;
  const int s2 = 2 * s;
  for (int i = 0; i < 4; ++i) {
    const int w = sizes[i].width, h = sizes[i].height;
    int x1a, y1a, x2a, y2a, x1b, y1b, x2b, y2b;
    if (i == 0) {  // top left
      x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
      x1b = w - (x2a - x1a), y1b = h - (y2a - y1a), x2b = w, y2b = h;
    } else if (i == 1) {  // top right
      x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, s2), y2a = yc;
      x1b = 0, y1b = h - (y2a - y1a), x2b = std::min(w, x2a - x1a), y2b = h;
    } else if (i == 2) {  // bottom left
      x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(s2, yc + h);
      x1b = w - (x2a - x1a), y1b = 0, x2b = w, y2b = std::min(y2a - y1a, h);
    } else {  // bottom right
      x1a = xc, y1a = yc, x2a = std::min(xc + w, s2), y2a = std::min(s2, yc + h);
      x1b = 0, y1b = 0, x2b = std::min(w, x2a - x1a), y2b = std::min(y2a - y1a, h);
    }
    out[i].canvas = cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a);
    out[i].tile = cv::Rect(x1b, y1b, x2b - x1b, y2b - y1b);
    out[i].padw = x1a - x1b;
    out[i].padh = y1a - y1b;
  }
  return out;
}

void AppendTileBoxes(const Box* boxes, size_t count, cv::Size loaded, double padw, double padh,
                     std::vector<BoxXyxy>* out) {
  const float w = static_cast<float>(loaded.width), h = static_cast<float>(loaded.height);
  for (size_t i = 0; i < count; ++i) {
    const Box& b = boxes[i];
    // Malformed rows (non-finite, negative size) never pass a cache build; skip rather than trust.
    if (!std::isfinite(b.cx) || !std::isfinite(b.cy) || !std::isfinite(b.w) || !std::isfinite(b.h) || b.w < 0 ||
        b.h < 0)
      continue;
    BoxXyxy o;
    o.cls = b.cls;
    o.x1 = static_cast<float>((b.cx - b.w / 2) * w + padw);
    o.y1 = static_cast<float>((b.cy - b.h / 2) * h + padh);
    o.x2 = static_cast<float>((b.cx + b.w / 2) * w + padw);
    o.y2 = static_cast<float>((b.cy + b.h / 2) * h + padh);
    out->push_back(o);
  }
}

void ClipBoxes(float w, float h, std::vector<BoxXyxy>* boxes) {
  for (BoxXyxy& b : *boxes) {
    b.x1 = std::clamp(b.x1, 0.0f, w);
    b.x2 = std::clamp(b.x2, 0.0f, w);
    b.y1 = std::clamp(b.y1, 0.0f, h);
    b.y2 = std::clamp(b.y2, 0.0f, h);
  }
}

void RemoveZeroAreaBoxes(std::vector<BoxXyxy>* boxes) {
  boxes->erase(
      std::remove_if(boxes->begin(), boxes->end(), [](const BoxXyxy& b) { return !(b.Width() * b.Height() > 0.0f); }),
      boxes->end());
}

void BuildMosaicCanvas(int s, const std::array<TilePlacement, 4>& placements, const std::array<cv::Mat, 4>& tiles,
                       cv::Mat* canvas) {
  canvas->create(2 * s, 2 * s, CV_8UC3);
  canvas->setTo(cv::Scalar::all(114));
  for (int i = 0; i < 4; ++i) {
    const TilePlacement& p = placements[i];
    if (p.canvas.area() <= 0) continue;
    tiles[i](p.tile).copyTo((*canvas)(p.canvas));
  }
}

}  // namespace yc
