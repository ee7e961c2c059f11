#include "loader/kernels/canvas_warp.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <opencv2/imgproc.hpp>

namespace yc {

namespace {

constexpr int kBandPixels = 1 << 16;      // OpenCV parallelises a call only above ~1.5 x 64 Ki pixels
constexpr double kBandMargin = 1.0 / 16;  // > OpenCV's 1/32-pixel quantisation

// The output -> canvas map in OpenCV's arithmetic (warpAffine: invertAffineTransform and 10-bit
// fixed-point row/column deltas; warpPerspective: per-pixel division), giving 1/32-pixel coordinates.
class InverseMap {
 public:
  InverseMap(const Mat3& M, bool perspective) : perspective_(perspective) {
    if (!perspective) {
      // cv::invertAffineTransform
      double D = M(0, 0) * M(1, 1) - M(0, 1) * M(1, 0);
      D = D != 0 ? 1. / D : 0;
      const double A11 = M(1, 1) * D, A22 = M(0, 0) * D, A12 = -M(0, 1) * D, A21 = -M(1, 0) * D;
      const double b1 = -A11 * M(0, 2) - A12 * M(1, 2);
      const double b2 = -A21 * M(0, 2) - A22 * M(1, 2);
      inv_ = Mat3{{A11, A12, b1, A21, A22, b2, 0, 0, 1}};
    } else if (!M.Inverse(&inv_)) {
      inv_ = Mat3{{0, 0, -1e9, 0, 0, -1e9, 0, 0, 1}};  // singular: everything maps far outside
    }
  }
  const Mat3& inverse() const { return inv_; }
  // x depends on the output column only and y on the row only (no rotation, shear or perspective).
  bool AxisAligned() const { return !perspective_ && inv_(0, 1) == 0.0 && inv_(1, 0) == 0.0; }

  // For an axis-aligned map: the run of output columns (rows) whose two bilinear taps both fall in
  // canvas [origin, origin + size), as source indices (offset by `first_source`) and 1/32 weights.
  // Uses the same fixed-point terms as Fixed(), so it is bit-exact with cv::warpAffine.
  void Taps(bool columns, int origin, int first_source, int size, int out_size, ResampleTaps* taps) const {
    const double* m = inv_.m.data();
    const double scale = columns ? m[0] : m[4], offset = columns ? m[2] : m[5];
    constexpr double kAB = 1024;
    // warpAffine: X = round(M0 x 1024) + round((M1 y + M2) 1024), Y = round(M3 x 1024) + round((M4 y + M5) 1024)
    const long base = std::lrint(offset * kAB) + 16;
    taps->source.clear();
    taps->frac.clear();
    taps->first_out = 0;
    for (int o = 0; o < out_size; ++o) {
      const long fixed = columns ? std::lrint(scale * o * kAB) + base : std::lrint((scale * o + offset) * kAB) + 16;
      const int X = static_cast<int>(fixed >> 5);
      const int local = (X >> 5) - origin;
      if (local < 0 || local > size - 2) {
        if (!taps->source.empty()) break;  // the map is monotonic: the run is over
        continue;
      }
      if (taps->source.empty()) taps->first_out = o;
      taps->source.push_back(first_source + local);
      taps->frac.push_back(X & 31);
    }
  }

  // Canvas coordinates of output pixel (x, y) in 1/32 pixel.
  void Fixed(int x, int y, int* X, int* Y) const {
    const double* m = inv_.m.data();
    if (!perspective_) {
      constexpr double kAB = 1024;
      const long xa = std::lrint(m[0] * x * kAB), xb = std::lrint(m[3] * x * kAB);
      const long ya = std::lrint((m[1] * y + m[2]) * kAB), yb = std::lrint((m[4] * y + m[5]) * kAB);
      *X = static_cast<int>((xa + ya + 16) >> 5);
      *Y = static_cast<int>((xb + yb + 16) >> 5);
      return;
    }
    double W = m[6] * x + m[7] * y + m[8];
    W = W != 0 ? 32.0 / W : 0;
    const double fx = std::clamp((m[0] * x + m[1] * y + m[2]) * W, double(INT_MIN), double(INT_MAX));
    const double fy = std::clamp((m[3] * x + m[4] * y + m[5]) * W, double(INT_MIN), double(INT_MAX));
    *X = static_cast<int>(std::lrint(fx));
    *Y = static_cast<int>(std::lrint(fy));
  }

 private:
  bool perspective_;
  Mat3 inv_;
};

inline const uint8_t* TilePixel(const CanvasTile* tiles, int count, int x, int y) {
  for (int i = 0; i < count; ++i) {
    const CanvasTile& t = tiles[i];
    const int lx = x - t.origin.x, ly = y - t.origin.y;
    if (static_cast<unsigned>(lx) < static_cast<unsigned>(t.visible.width) &&
        static_cast<unsigned>(ly) < static_cast<unsigned>(t.visible.height))
      return t.image.ptr<uint8_t>(t.visible.y + ly) + (t.visible.x + lx) * 3;
  }
  return nullptr;
}

const uint8_t kFill[3] = {114, 114, 114};

// Bilinear sample of the virtual canvas at (X, Y) / 32, OpenCV's weights and rounding.
inline void SampleCanvas(const CanvasTile* tiles, int count, int X, int Y, uint8_t* dst) {
  const int sx = X >> 5, sy = Y >> 5, fx = X & 31, fy = Y & 31;
  const uint8_t* p00 = TilePixel(tiles, count, sx, sy);
  const uint8_t* p01 = TilePixel(tiles, count, sx + 1, sy);
  const uint8_t* p10 = TilePixel(tiles, count, sx, sy + 1);
  const uint8_t* p11 = TilePixel(tiles, count, sx + 1, sy + 1);
  p00 = p00 ? p00 : kFill, p01 = p01 ? p01 : kFill, p10 = p10 ? p10 : kFill, p11 = p11 ? p11 : kFill;
  const int w00 = (32 - fx) * (32 - fy), w01 = fx * (32 - fy), w10 = (32 - fx) * fy, w11 = fx * fy;
  for (int c = 0; c < 3; ++c) {
    const int v = (p00[c] * w00 + p01[c] * w01 + p10[c] * w10 + p11[c] * w11 + 512) >> 10;
    dst[c] = static_cast<uint8_t>(std::min(v, 255));
  }
}

// Output bounding box of canvas rectangle r (grown by a pixel), clipped to the output.
cv::Rect OutputBounds(const cv::Rect& r, const Mat3& M, bool perspective, cv::Size out) {
  const double xs[2] = {r.x - 1.0, r.x + r.width + 0.0}, ys[2] = {r.y - 1.0, r.y + r.height + 0.0};
  double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY;
  for (double x : xs)
    for (double y : ys) {
      if (perspective && M(2, 0) * x + M(2, 1) * y + M(2, 2) <= 1e-9) return cv::Rect(0, 0, out.width, out.height);
      double u, v;
      M.Apply(x, y, perspective, &u, &v);
      minx = std::min(minx, u), maxx = std::max(maxx, u), miny = std::min(miny, v), maxy = std::max(maxy, v);
    }
  const double x0 = std::max(0.0, std::floor(minx) - 1), y0 = std::max(0.0, std::floor(miny) - 1);
  const double x1 = std::min<double>(out.width, std::ceil(maxx) + 2),
               y1 = std::min<double>(out.height, std::ceil(maxy) + 2);
  if (!(x1 > x0 && y1 > y0)) return cv::Rect();
  return cv::Rect(static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x1 - x0), static_cast<int>(y1 - y0));
}

void WarpTile(const CanvasTile& t, const InverseMap& map, bool perspective, const cv::Rect& bounds, cv::Mat* out) {
  const cv::Mat src = t.image(t.visible);
  const int rows_per_band = std::max(1, kBandPixels / std::max(1, bounds.width));
  for (int y0 = bounds.y; y0 < bounds.y + bounds.height; y0 += rows_per_band) {
    const int rows = std::min(rows_per_band, bounds.y + bounds.height - y0);
    cv::Mat band = (*out)(cv::Rect(bounds.x, y0, bounds.width, rows));
    // band-local output pixel -> canvas -> tile-ROI-local
    const Mat3 A = Mat3::Translation(-t.origin.x, -t.origin.y) * map.inverse() * Mat3::Translation(bounds.x, y0);
    if (perspective) {
      const cv::Mat m(3, 3, CV_64F, const_cast<double*>(A.m.data()));
      cv::warpPerspective(src, band, m, band.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP, cv::BORDER_TRANSPARENT);
    } else {
      const cv::Mat m(2, 3, CV_64F, const_cast<double*>(A.m.data()));
      cv::warpAffine(src, band, m, band.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP, cv::BORDER_TRANSPARENT);
    }
  }
}

struct Edge {
  bool vertical;  // the canvas line u = at (else v = at)
  double at;      // boundary between canvas pixels at - 1 and at
  double lo, hi;  // extent along the line that matters
};

// Output columns x of row y where coordinate `r` (0: canvas u, 1: canvas v) of the preimage lies in
// [t1, t2]: coordinate(x) = (p x + q) / (g x + k) is monotonic along a row, so solve the two ends.
// Returns false when no column qualifies.
bool SolveRow(const Mat3& m, bool perspective, int r, int y, double t1, double t2, int width, int* xa, int* xb) {
  const double p = m(r, 0), q = m(r, 1) * y + m(r, 2);
  const double g = perspective ? m(2, 0) : 0.0, k = perspective ? m(2, 1) * y + m(2, 2) : 1.0;
  const double d1 = p - t1 * g, d2 = p - t2 * g;
  if (std::fabs(d1) < 1e-12 || std::fabs(d2) < 1e-12) {  // constant along the row
    const double c = q / k;
    if (!(c >= t1 && c <= t2)) return false;
    *xa = 0, *xb = width - 1;
    return true;
  }
  const double x1 = (t1 * k - q) / d1, x2 = (t2 * k - q) / d2;
  const double lo = std::floor(std::min(x1, x2)) - 1, hi = std::ceil(std::max(x1, x2)) + 1;
  if (!(hi >= 0 && lo <= width - 1)) return false;
  *xa = static_cast<int>(std::max(0.0, lo)), *xb = static_cast<int>(std::min(width - 1.0, hi));
  return true;
}

// Recomputes the output pixels whose canvas preimage lies within a pixel of a tile edge, by
// sampling the virtual canvas. Each edge is a thin canvas band; only the output rows its bounding
// box covers are visited, and on each row only the columns where both band conditions can hold.
void FixSeams(const CanvasTile* tiles, int count, const Mat3& M, const InverseMap& map, bool perspective,
              cv::Mat* out) {
  Edge edges[16];
  int n = 0;
  for (int i = 0; i < count; ++i) {
    const cv::Point o = tiles[i].origin;
    const int w = tiles[i].visible.width, h = tiles[i].visible.height;
    if (w <= 0 || h <= 0) continue;
    edges[n++] = {true, double(o.x), o.y - 1.0, o.y + h + 0.0};
    edges[n++] = {true, double(o.x + w), o.y - 1.0, o.y + h + 0.0};
    edges[n++] = {false, double(o.y), o.x - 1.0, o.x + w + 0.0};
    edges[n++] = {false, double(o.y + h), o.x - 1.0, o.x + w + 0.0};
  }
  const Mat3& m = map.inverse();
  const int W = out->cols;
  for (int e = 0; e < n; ++e) {
    const Edge& edge = edges[e];
    const double t1 = edge.at - 1 - kBandMargin, t2 = edge.at + kBandMargin;
    const double a1 = edge.lo - kBandMargin, a2 = edge.hi + kBandMargin;
    // The band in canvas pixels, for its output bounding box (OutputBounds grows it by a pixel).
    const int bx = static_cast<int>(std::floor(edge.vertical ? t1 : a1)) - 1;
    const int by = static_cast<int>(std::floor(edge.vertical ? a1 : t1)) - 1;
    const int bw = static_cast<int>(std::ceil(edge.vertical ? t2 : a2)) - bx + 1;
    const int bh = static_cast<int>(std::ceil(edge.vertical ? a2 : t2)) - by + 1;
    const cv::Rect rows = OutputBounds(cv::Rect(bx, by, bw, bh), M, perspective, out->size());
    const int across = edge.vertical ? 0 : 1;
    for (int y = rows.y; y < rows.y + rows.height; ++y) {
      int xa, xb, ya, yb;
      if (!SolveRow(m, perspective, across, y, t1, t2, W, &xa, &xb)) continue;
      // Along the edge the extent can be long; under perspective its two ends may lie on different
      // branches of the hyperbola, so the interval trick is only used for affine maps.
      if (!perspective) {
        if (!SolveRow(m, perspective, 1 - across, y, a1, a2, W, &ya, &yb)) continue;
        xa = std::max(xa, ya), xb = std::min(xb, yb);
      }
      uint8_t* row = out->ptr<uint8_t>(y);
      for (int x = xa; x <= xb; ++x) {
        int X, Y;
        map.Fixed(x, y, &X, &Y);
        const double u = X / 32.0, v = Y / 32.0;
        const double c_across = edge.vertical ? u : v, c_along = edge.vertical ? v : u;
        if (c_across < t1 || c_across > t2 || c_along < a1 || c_along > a2) continue;
        SampleCanvas(tiles, count, X, Y, row + x * 3);
      }
    }
  }
}

// The same for an axis-aligned map rendered by the separable resampler, whose taps use exactly
// Fixed()'s coordinates: canvas X depends on the output column only and Y on the row only, so a pixel
// can straddle a tile edge only if its column's taps (X >> 5, + 1) or its row's lie on the two sides
// of some tile's left/right (top/bottom) edge. Those whole columns and rows are resampled from the
// canvas; the pixels of them that straddle nothing get the value they already had.
void FixSeamsAxisAligned(const CanvasTile* tiles, int count, const InverseMap& map, cv::Mat* out,
                         CanvasWarpScratch* scratch) {
  const int W = out->cols, H = out->rows;
  std::vector<int>& X = scratch->seam_x;
  std::vector<int>& Y = scratch->seam_y;
  X.resize(W), Y.resize(H);
  int unused;
  for (int x = 0; x < W; ++x) map.Fixed(x, 0, &X[x], &unused);
  for (int y = 0; y < H; ++y) map.Fixed(0, y, &unused, &Y[y]);
  // A tap pair (s, s + 1) straddles edge e (the first pixel past a boundary) when s + 1 == e.
  auto straddles = [&](int fixed, bool columns) {
    const int next = (fixed >> 5) + 1;
    for (int i = 0; i < count; ++i) {
      const CanvasTile& t = tiles[i];
      if (t.visible.width <= 0 || t.visible.height <= 0) continue;
      const int begin = columns ? t.origin.x : t.origin.y;
      const int end = begin + (columns ? t.visible.width : t.visible.height);
      if (next == begin || next == end) return true;
    }
    return false;
  };
  for (int x = 0; x < W; ++x) {
    if (!straddles(X[x], true)) continue;
    for (int y = 0; y < H; ++y) SampleCanvas(tiles, count, X[x], Y[y], out->ptr<uint8_t>(y) + x * 3);
  }
  for (int y = 0; y < H; ++y) {
    if (!straddles(Y[y], false)) continue;
    uint8_t* row = out->ptr<uint8_t>(y);
    for (int x = 0; x < W; ++x) SampleCanvas(tiles, count, X[x], Y[y], row + x * 3);
  }
}

// 114 wherever none of `rects` will be written (the mosaic's border; an eighth of a sample on coco128),
// instead of filling the whole output first and overwriting most of it.
void FillOutside(const std::vector<cv::Rect>& rects, cv::Mat* out) {
  std::pair<int, int> spans[8];
  for (int y = 0; y < out->rows; ++y) {
    int n = 0;
    for (const cv::Rect& r : rects) {
      if (y < r.y || y >= r.y + r.height || n == 8) continue;
      int i = n++;  // insertion by start: at most 8 spans
      for (; i > 0 && spans[i - 1].first > r.x; --i) spans[i] = spans[i - 1];
      spans[i] = {r.x, r.x + r.width};
    }
    uint8_t* row = out->ptr<uint8_t>(y);
    int x = 0;
    for (int i = 0; i < n; ++i) {
      if (spans[i].first > x) std::memset(row + 3 * x, 114, 3 * static_cast<size_t>(spans[i].first - x));
      x = std::max(x, spans[i].second);
    }
    if (x < out->cols) std::memset(row + 3 * x, 114, 3 * static_cast<size_t>(out->cols - x));
  }
}

// Axis-aligned maps: every tile through the separable resampler, then the seams.
void RenderSeparable(const CanvasTile* tiles, int count, const InverseMap& map, cv::Mat* out,
                     CanvasWarpScratch* scratch) {
  if (scratch->taps.size() < 2 * static_cast<size_t>(count)) scratch->taps.resize(2 * static_cast<size_t>(count));
  scratch->written.clear();
  for (int i = 0; i < count; ++i) {
    const CanvasTile& t = tiles[i];
    ResampleTaps& cols = scratch->taps[2 * i];
    ResampleTaps& rows = scratch->taps[2 * i + 1];
    cols.source.clear(), rows.source.clear();
    if (t.visible.width <= 0 || t.visible.height <= 0) continue;
    // Exactly the pixels BORDER_TRANSPARENT would write: both taps inside the visible part.
    map.Taps(true, t.origin.x, t.visible.x, t.visible.width, out->cols, &cols);
    map.Taps(false, t.origin.y, t.visible.y, t.visible.height, out->rows, &rows);
    if (!cols.source.empty() && !rows.source.empty())
      scratch->written.emplace_back(cols.first_out, rows.first_out, static_cast<int>(cols.source.size()),
                                    static_cast<int>(rows.source.size()));
  }
  FillOutside(scratch->written, out);
  for (int i = 0; i < count; ++i)
    ResampleSeparable(tiles[i].image, scratch->taps[2 * i], scratch->taps[2 * i + 1], out, &scratch->resample);
  FixSeamsAxisAligned(tiles, count, map, out, scratch);
}

}  // namespace

void CanvasPixel(const CanvasTile* tiles, int count, int x, int y, uint8_t rgb[3]) {
  const uint8_t* p = TilePixel(tiles, count, x, y);
  p = p ? p : kFill;
  rgb[0] = p[0], rgb[1] = p[1], rgb[2] = p[2];
}

void RenderCanvasWarp(const CanvasTile* tiles, int count, const Mat3& M, bool perspective, cv::Mat* out,
                      CanvasWarpScratch* scratch, WarpMethod method) {
  const InverseMap map(M, perspective);
  if (method == WarpMethod::kAuto && map.AxisAligned()) {
    RenderSeparable(tiles, count, map, out, scratch);
    return;
  }
  out->setTo(cv::Scalar::all(114));
  for (int i = 0; i < count; ++i) {
    const CanvasTile& t = tiles[i];
    if (t.visible.width <= 0 || t.visible.height <= 0) continue;
    const cv::Rect canvas_rect(t.origin.x, t.origin.y, t.visible.width, t.visible.height);
    const cv::Rect bounds = OutputBounds(canvas_rect, M, perspective, out->size());
    if (bounds.area() <= 0) continue;
    WarpTile(t, map, perspective, bounds, out);
  }
  FixSeams(tiles, count, M, map, perspective, out);
}

}  // namespace yc
