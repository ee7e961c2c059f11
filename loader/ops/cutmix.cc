#include "loader/ops/cutmix.h"

#include <algorithm>
#include <cmath>

namespace yc {

namespace {

// Ultralytics' bbox_ioa eps: intersection / (box area + 1e-7).
constexpr float kIoaEps = 1e-7f;
// Partner boxes need this much of their area inside the cut (0.01 with segments, which the cache has not).
constexpr float kMinPartnerIoa = 0.1f;

float Intersection(const CutArea& a, const BoxXyxy& b) {
  const float w = std::min(static_cast<float>(a.x2), b.x2) - std::max(static_cast<float>(a.x1), b.x1);
  const float h = std::min(static_cast<float>(a.y2), b.y2) - std::max(static_cast<float>(a.y1), b.y1);
  return std::max(w, 0.0f) * std::max(h, 0.0f);
}

// np.random.randint(size) then the corners centre -/+ cut // 2, clipped to [0, size].
void DrawSpan(Rng& rng, int size, int cut, int* lo, int* hi) {
  const int centre = static_cast<int>(rng.Below(static_cast<uint64_t>(size)));
  *lo = std::clamp(centre - cut / 2, 0, size);
  *hi = std::clamp(centre + cut / 2, 0, size);
}

}  // namespace

CutMixDraw DrawCutMix(Rng& rng, int width, int height) {
  CutMixDraw d;
  for (CutArea& a : d.areas) {
    const double lam = rng.Random();  // Beta(1, 1) is uniform on [0, 1)
    const double ratio = std::sqrt(1.0 - lam);
    const int cut_w = static_cast<int>(width * ratio), cut_h = static_cast<int>(height * ratio);
    DrawSpan(rng, width, cut_w, &a.x1, &a.x2);  // cx, then cy, as _rand_bbox draws them
    DrawSpan(rng, height, cut_h, &a.y1, &a.y2);
  }
  d.pick = rng.Random();
  return d;
}

CutMixDraw FlipCutMixDraw(const CutMixDraw& draw, const FlipDraw& flip, int width, int height) {
  CutMixDraw d = draw;
  for (CutArea& a : d.areas) {
    if (flip.lr) a = {width - a.x2, a.y1, width - a.x1, a.y2};
    if (flip.ud) a = {a.x1, height - a.y2, a.x2, height - a.y1};
  }
  return d;
}

const CutArea* PickCutArea(const CutMixDraw& draw, const std::vector<BoxXyxy>& boxes) {
  std::array<const CutArea*, 3> free{};
  size_t n = 0;
  for (const CutArea& a : draw.areas) {
    // Ultralytics keeps an area whose IoA with every box sums to <= 0: one that intersects none.
    const bool overlaps =
        std::any_of(boxes.begin(), boxes.end(), [&](const BoxXyxy& b) { return Intersection(a, b) > 0; });
    if (!overlaps) free[n++] = &a;
  }
  if (n == 0) return nullptr;
  return free[std::min(n - 1, static_cast<size_t>(draw.pick * static_cast<double>(n)))];
}

bool AppendCutBoxes(const CutArea& area, const std::vector<BoxXyxy>& partner, std::vector<BoxXyxy>* boxes) {
  const size_t before = boxes->size();
  const float x1 = static_cast<float>(area.x1), y1 = static_cast<float>(area.y1);
  const float x2 = static_cast<float>(area.x2), y2 = static_cast<float>(area.y2);
  for (const BoxXyxy& b : partner) {
    const float own = b.Width() * b.Height();
    if (Intersection(area, b) / (own + kIoaEps) < kMinPartnerIoa) continue;
    // Ultralytics: shift by -(x1, y1), clip to the area's size, shift back.
    boxes->push_back({std::clamp(b.x1, x1, x2), std::clamp(b.y1, y1, y2), std::clamp(b.x2, x1, x2),
                      std::clamp(b.y2, y1, y2), b.cls});
  }
  return boxes->size() > before;
}

void PasteCutArea(const cv::Mat& partner, const CutArea& area, cv::Mat* image) {
  const cv::Rect r(area.x1, area.y1, area.x2 - area.x1, area.y2 - area.y1);
  if (r.area() > 0) partner(r).copyTo((*image)(r));
}

}  // namespace yc
