#include "trainer/plots/feature_grid.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace yc::trainer {

namespace {

constexpr int kColumns = 8;
// plt.subplots' default figure (6.4 x 4.8 in) at savefig's dpi=300, in pixels.
constexpr double kFigureWidth = 1920, kFigureHeight = 1440;
// tight_layout's pad (1.08 font sizes of 10 pt = 0.15 in), and bbox_inches="tight"'s pad_inches (0.1 in).
constexpr double kLayoutPad = 45, kCropPad = 30;

struct Size2 {
  double w = 0, h = 0;
};

// An axes of cell size showing an image of aspect h/w (imshow's aspect="equal"): the image fills the
// cell's width or its height, centred.
Size2 Fit(Size2 cell, double aspect) {
  if (aspect * cell.w <= cell.h) return {cell.w, aspect * cell.w};
  return {cell.h / aspect, cell.h};
}

// The cell and gap sizes the figure ends with. Ultralytics calls subplots_adjust(wspace=0.05,
// hspace=0.05) on a figure made with tight_layout=True; the tight layout then runs once at savefig from
// those parameters (matplotlib's default margins, left 0.125 right 0.9 bottom 0.11 top 0.88): it keeps
// tight_layout's pad at the figure's edges and between the drawn images as they sit in the first
// layout, which leaves the images smaller than their cells.
struct Layout {
  Size2 cell;
  double gap_x = 0, gap_y = 0;
};

Layout TightLayout(int rows, double aspect) {
  const Size2 first{(0.9 - 0.125) * kFigureWidth / (kColumns + (kColumns - 1) * 0.05),
                    (0.88 - 0.11) * kFigureHeight / (rows + (rows - 1) * 0.05)};
  const Size2 image = Fit(first, aspect);
  Layout out;
  // Between two cells: the pad less the white of both images' cells on that side.
  out.gap_x = kLayoutPad - (first.w - image.w);
  out.gap_y = rows > 1 ? kLayoutPad - (first.h - image.h) : 0;
  out.cell.w = (kFigureWidth - 2 * kLayoutPad - (kColumns - 1) * out.gap_x) / kColumns;
  out.cell.h = (kFigureHeight - 2 * kLayoutPad - (rows - 1) * out.gap_y) / rows;
  return out;
}

// imshow's default look of one map at w x h pixels: scaled from its minimum to its maximum (a constant
// map is all the lowest colour, as matplotlib's Normalize makes it), resampled as matplotlib's
// "antialiased" interpolation (nearest when magnified more than 3 times, else smoothed), then the
// colour of floor(256 * value), as a 256-entry colormap indexes.
cv::Mat DrawMap(const cv::Mat& map, int w, int h) {
  double lo = 0, hi = 0;
  cv::minMaxLoc(map, &lo, &hi);
  cv::Mat unit;
  if (hi > lo) {
    map.convertTo(unit, CV_32F, 1.0 / (hi - lo), -lo / (hi - lo));
  } else {
    unit = cv::Mat::zeros(map.size(), CV_32F);
  }
  const bool magnified = w > 3 * map.cols && h > 3 * map.rows;
  const bool shrunk = w < map.cols || h < map.rows;
  cv::Mat sized;
  cv::resize(unit, sized, cv::Size(w, h), 0, 0, magnified ? cv::INTER_NEAREST : shrunk ? cv::INTER_AREA : cv::INTER_LINEAR);
  cv::Mat index;
  sized.convertTo(index, CV_8U, 256.0, -0.5);  // floor(256 * v) for v in [0, 1), 255 at 1 (saturated)
  cv::Mat rgb(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) rgb.at<cv::Vec3b>(y, x) = Viridis(index.at<uint8_t>(y, x));
  }
  return rgb;
}

}  // namespace

cv::Vec3b Viridis(int index) {
  static const cv::Mat table = [] {
    cv::Mat ramp(1, 256, CV_8UC1), bgr;
    for (int i = 0; i < 256; ++i) ramp.at<uint8_t>(0, i) = static_cast<uint8_t>(i);
    cv::applyColorMap(ramp, bgr, cv::COLORMAP_VIRIDIS);
    cv::Mat rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    return rgb;
  }();
  return table.at<cv::Vec3b>(0, std::clamp(index, 0, 255));
}

cv::Mat FeatureMapGrid(const std::vector<cv::Mat>& maps) {
  if (maps.empty()) return {};
  const int n = static_cast<int>(std::min<size_t>(maps.size(), 32));
  const int rows = (n + kColumns - 1) / kColumns;
  const double aspect = static_cast<double>(maps[0].rows) / maps[0].cols;
  const Layout layout = TightLayout(rows, aspect);
  const Size2 image = Fit(layout.cell, aspect);
  // Image (i, j)'s top-left corner in the figure, then everything shifted so that the first image's
  // corner sits kCropPad from the picture's (the tight crop).
  const auto left = [&](int j) { return kLayoutPad + j * (layout.cell.w + layout.gap_x) + (layout.cell.w - image.w) / 2; };
  const auto top = [&](int i) { return kLayoutPad + i * (layout.cell.h + layout.gap_y) + (layout.cell.h - image.h) / 2; };
  const double x0 = left(0) - kCropPad, y0 = top(0) - kCropPad;
  const int width = static_cast<int>(std::lround(left(kColumns - 1) + image.w + kCropPad - x0));
  const int height = static_cast<int>(std::lround(top(rows - 1) + image.h + kCropPad - y0));
  cv::Mat picture(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  const int w = std::max(1, static_cast<int>(std::lround(image.w))), h = std::max(1, static_cast<int>(std::lround(image.h)));
  for (int k = 0; k < n; ++k) {
    const int x = static_cast<int>(std::lround(left(k % kColumns) - x0)), y = static_cast<int>(std::lround(top(k / kColumns) - y0));
    const cv::Rect where = cv::Rect(x, y, w, h) & cv::Rect(0, 0, width, height);
    DrawMap(maps[static_cast<size_t>(k)], w, h)(cv::Rect(0, 0, where.width, where.height)).copyTo(picture(where));
  }
  return picture;
}

}  // namespace yc::trainer
