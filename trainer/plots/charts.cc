#include "trainer/plots/charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "base/format.h"
#include "trainer/plots/image_file.h"
#include "trainer/plots/plot_canvas.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kGrey{128, 128, 128};
constexpr Rgb kBlue{0, 0, 255};

// Matplotlib's "Blues" colour map at t in [0, 1] (piecewise linear through five of its stops).
Rgb Blues(double t) {
  static const double kStops[5][3] = {{247, 251, 255}, {198, 219, 239}, {107, 174, 214}, {33, 113, 181}, {8, 48, 107}};
  t = std::clamp(t, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  Rgb c;
  for (int k = 0; k < 3; ++k) c[k] = static_cast<int>(std::lround(kStops[i][k] * (1 - f) + kStops[i + 1][k] * f));
  return c;
}

// Axis range covering `values` with a 5% margin; never below 0 when no value is (an all-zero metric
// must not be drawn on a negative scale), and a unit range when all values are equal at 0.
std::array<double, 2> Range(const std::vector<double>& a, const std::vector<double>& b = {}) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* v : {&a, &b}) {
    for (double x : *v) {
      if (!std::isfinite(x)) continue;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (!std::isfinite(lo)) return {0, 1};
  if (hi - lo < 1e-12) {
    const double pad = std::max(std::abs(hi) * 0.1, lo == 0 ? 1.0 : 1e-3);
    return {lo >= 0 ? std::max(0.0, lo - pad) : lo - pad, hi + pad};
  }
  // At least 0.2% of the magnitude: PLplot's tick labels (4-5 digits) must still tell the ticks apart.
  const double pad = std::max(0.05 * (hi - lo), 0.001 * std::max(std::abs(lo), std::abs(hi)));
  return {lo >= 0 ? std::max(0.0, lo - pad) : lo - pad, hi + pad};
}

Status Save(PlotCanvas& canvas, const fs::path& path) {
  cv::Mat rgb = canvas.Finish();
  if (rgb.empty()) return Status::IOError(Status::At(path.string(), "the figure could not be drawn"));
  return WriteImageFile(path, rgb);
}

std::string ClassLabel(const std::vector<std::string>& names, size_t c) {
  return c < names.size() ? names[c] : std::to_string(c);
}

}  // namespace

std::vector<double> GaussianSmooth(const std::vector<double>& y, double sigma) {
  const int64_t n = static_cast<int64_t>(y.size());
  if (n == 0 || sigma <= 0) return y;
  const int64_t radius = static_cast<int64_t>(4.0 * sigma + 0.5);
  std::vector<double> w(static_cast<size_t>(2 * radius + 1));
  double sum = 0;
  for (int64_t k = -radius; k <= radius; ++k) sum += w[static_cast<size_t>(k + radius)] = std::exp(-0.5 * k * k / (sigma * sigma));
  for (double& v : w) v /= sum;
  // 'reflect' (d c b a | a b c d | d c b a): the index folds back including the edge sample.
  auto at = [&](int64_t i) {
    const int64_t period = 2 * n;
    i %= period;
    if (i < 0) i += period;
    return y[static_cast<size_t>(i < n ? i : period - 1 - i)];
  };
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t k = -radius; k <= radius; ++k) s += w[static_cast<size_t>(k + radius)] * at(i + k);
    out[static_cast<size_t>(i)] = s;
  }
  return out;
}

Status PlotResults(const std::vector<MetricSeries>& panels, const fs::path& png) {
  PlotCanvas c;
  YC_RETURN_IF_ERROR(c.Begin(2000, 800, 5, 2));
  for (size_t i = 0; i < panels.size() && i < 10; ++i) {
    const MetricSeries& p = panels[i];
    const std::vector<double> smooth = GaussianSmooth(p.y, 3.0);
    std::array<double, 2> xr = p.x.empty() ? std::array<double, 2>{0, 1} : std::array<double, 2>{p.x.front(), p.x.back()};
    if (xr[1] - xr[0] < 1) xr = {xr[0] - 0.5, xr[1] + 0.5};
    c.Panel(static_cast<int>(i) + 1, xr, Range(p.y, smooth), "epoch", "", p.title);
    c.Line(p.x, p.y, Tab10(0), 2.0);
    c.Points(p.x, p.y, Tab10(0));
    c.Line(p.x, smooth, Tab10(1), 2.0, /*dotted=*/true);
    if (i == 0) {
      c.LegendEntry(0, "results", Tab10(0), 2.0);
      c.LegendEntry(1, "smooth", Tab10(1), 2.0);
    }
  }
  return Save(c, png);
}

namespace {

// The curve figures: 9 x 6 as Ultralytics' (figsize=(9, 6)), the axes on the left and the legend beside
// them on the right (legend(bbox_to_anchor=(1.04, 1), loc="upper left")).
constexpr int kCurveWidth = 1350, kCurveHeight = 900;
constexpr std::array<double, 4> kCurveAxes{0.08, 0.60, 0.09, 0.93};
constexpr std::array<double, 4> kCurveLegend{0.62, 0.995, 0.09, 0.93};
constexpr size_t kMaxLegendClasses = 20;  // Ultralytics labels each class below 21 classes

// The per-class curves (tab10 with their legend rows, in class order; grey without a legend) and the
// bold mean curve last, as plot_pr_curve / plot_mc_curve draw them.
Status DrawCurves(const std::vector<double>& px, const std::vector<std::vector<double>>& curves,
                  const std::vector<std::string>& class_labels, const std::vector<double>& mean,
                  const std::string& mean_label, const std::string& xlabel, const std::string& ylabel,
                  const std::string& title, const fs::path& png) {
  PlotCanvas c;
  YC_RETURN_IF_ERROR(c.Begin(kCurveWidth, kCurveHeight));
  c.PanelIn(kCurveAxes, {0, 1}, {0, 1}, xlabel, ylabel, title);
  const bool legend = curves.size() <= kMaxLegendClasses;
  std::vector<PlotCanvas::LegendItem> items;
  for (size_t k = 0; k < curves.size(); ++k) {
    const Rgb color = legend ? Tab10(static_cast<int>(k)) : kGrey;
    c.Line(px, curves[k], color, 1.0);
    if (legend) items.push_back({class_labels[k], color, 1.5});
  }
  c.Line(px, mean, kBlue, 3.0);
  items.push_back({mean_label, kBlue, 3.0});
  c.LegendBeside(kCurveLegend, items);
  return Save(c, png);
}

std::vector<double> MeanCurve(size_t n, const std::vector<std::vector<double>>& curves) {
  std::vector<double> mean(n, 0.0);
  for (const auto& curve : curves) {
    for (size_t i = 0; i < n && i < curve.size(); ++i) mean[i] += curve[i] / static_cast<double>(curves.size());
  }
  return mean;
}

}  // namespace

Status PlotPrCurve(const std::vector<double>& px, const std::vector<std::vector<double>>& curves,
                   const std::vector<double>& ap50, const std::vector<std::string>& labels, const fs::path& png) {
  std::vector<std::string> class_labels;
  for (size_t k = 0; k < curves.size(); ++k) class_labels.push_back(ClassLabel(labels, k) + " " + FormatNumber("%.3f", k < ap50.size() ? ap50[k] : 0.0));
  const double map50 = ap50.empty() ? 0.0 : std::accumulate(ap50.begin(), ap50.end(), 0.0) / ap50.size();
  return DrawCurves(px, curves, class_labels, MeanCurve(px.size(), curves), "all classes " + FormatNumber("%.3f", map50) + " mAP@0.5",
                    "Recall", "Precision", "Precision-Recall Curve", png);
}

Status PlotMetricCurve(const std::vector<double>& px, const std::vector<std::vector<double>>& curves,
                       const std::vector<std::string>& labels, const std::string& ylabel, const fs::path& png,
                       const std::vector<double>* mean_curve) {
  std::vector<std::string> class_labels;
  for (size_t k = 0; k < curves.size(); ++k) class_labels.push_back(ClassLabel(labels, k));
  const std::vector<double> mean = mean_curve != nullptr ? *mean_curve : MeanCurve(px.size(), curves);
  // The legend names the mean curve's maximum and the confidence where it is reached.
  size_t best = 0;
  for (size_t i = 1; i < mean.size(); ++i) {
    if (mean[i] > mean[best]) best = i;
  }
  const std::string label = mean.empty() || best >= px.size()
                                ? "all classes"
                                : "all classes " + FormatNumber("%.2f", mean[best]) + " at " + FormatNumber("%.3f", px[best]);
  return DrawCurves(px, curves, class_labels, mean, label, "Confidence", ylabel, ylabel + "-Confidence Curve", png);
}

Status PlotConfusionMatrix(const std::vector<double>& counts, int64_t nc, const std::vector<std::string>& names,
                           bool normalize, const fs::path& png) {
  const int64_t k = nc + 1;
  if (nc < 1 || counts.size() != static_cast<size_t>(k * k)) {
    return Status::InvalidArgument(Status::At(png.string(), "confusion matrix of the wrong size"));
  }
  std::vector<double> v = counts;
  if (normalize) {
    for (int64_t t = 0; t < k; ++t) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += counts[static_cast<size_t>(p * k + t)];
      for (int64_t p = 0; p < k; ++p) v[static_cast<size_t>(p * k + t)] = counts[static_cast<size_t>(p * k + t)] / (sum + 1e-9);
    }
  }
  const double vmax = std::max(1e-9, *std::max_element(v.begin(), v.end()));
  PlotCanvas c;
  YC_RETURN_IF_ERROR(c.Begin(1200, 900));  // Ultralytics' figsize=(12, 9)
  // World: x = true class 0..k left to right, y = predicted class 0..k top to bottom, with room for the
  // names on the left and below and for the colour bar on the right.
  const double m = 0.22 * k;  // label margin in cell units
  c.BlankPanel(1, {-m, k + 0.30 * k}, {k + m, -0.1 * k});
  const bool annotate = nc < 30;
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t t = 0; t < k; ++t) {
      const double val = v[static_cast<size_t>(p * k + t)];
      c.Rect(t, p, t + 1, p + 1, Blues(val / vmax));
      if (annotate && val >= 0.005) {
        const std::string s = normalize ? FormatNumber("%.2f", val) : FormatNumber("%.0f", val);
        c.Text(t + 0.5, p + 0.55, s, val / vmax > 0.45 ? Rgb{255, 255, 255} : kBlack, std::min(1.2, 8.0 / k + 0.4));
      }
    }
  }
  c.RectOutline(0, 0, k, k, kBlack);
  const bool ticks = k < 100;
  for (int64_t i = 0; ticks && i < k; ++i) {
    const std::string name = i < nc ? ClassLabel(names, static_cast<size_t>(i)) : "background";
    c.Text(-0.05 * k * 0.2, i + 0.6, name, kBlack, 0.9, 1.0);                   // predicted, left
    c.Text(i + 0.5, k + 0.04 * k, name, kBlack, 0.9, 1.0, 90);                   // true, below, rotated
  }
  c.Text(k / 2.0, k + m * 0.8, "True", kBlack, 1.2);
  c.Text(-m * 0.9, k / 2.0, "Predicted", kBlack, 1.2, 0.5, 90);
  c.Text(k / 2.0, -0.05 * k, normalize ? "Confusion Matrix Normalized" : "Confusion Matrix", kBlack, 1.4);
  // The colour bar (fig.colorbar): the map from 0 at the bottom to the largest value at the top, with
  // five ticks.
  const double bx0 = k + 0.06 * k, bx1 = k + 0.11 * k;
  constexpr int kSteps = 64;
  for (int i = 0; i < kSteps; ++i) {
    const double t0 = static_cast<double>(i) / kSteps, t1 = static_cast<double>(i + 1) / kSteps;
    c.Rect(bx0, k * (1 - t1), bx1, k * (1 - t0), Blues((t0 + t1) / 2));
  }
  c.RectOutline(bx0, 0, bx1, k, kBlack);
  for (int i = 0; i <= 4; ++i) {
    const double t = i / 4.0, y = k * (1 - t);
    c.Line({bx1, bx1 + 0.012 * k}, {y, y}, kBlack, 1.0);
    c.Text(bx1 + 0.02 * k, y + 0.012 * k, FormatNumber("%.3g", t * vmax), kBlack, 0.9, 0.0);
  }
  return Save(c, png);
}

Status PlotLabels(const std::vector<Box>& boxes, const std::vector<std::string>& names, const fs::path& jpg) {
  const int64_t nc = std::max<int64_t>(static_cast<int64_t>(names.size()), 1);
  PlotCanvas c;
  YC_RETURN_IF_ERROR(c.Begin(1200, 1200, 2, 2));
  // Instances per class.
  std::vector<double> per_class(static_cast<size_t>(nc), 0.0);
  for (const Box& b : boxes) {
    if (b.cls >= 0 && b.cls < nc) per_class[static_cast<size_t>(b.cls)] += 1;
  }
  const double top = std::max(1.0, *std::max_element(per_class.begin(), per_class.end()));
  const bool named = nc <= 30;  // beyond that the names would overlap: numbers instead
  c.Panel(1, {-0.5, nc - 0.5}, {0, top * 1.08}, "", "instances", std::to_string(boxes.size()) + " labels", true, false,
          /*x_numbers=*/!named);
  for (int64_t i = 0; i < nc; ++i) {
    c.Rect(i - 0.4, 0, i + 0.4, per_class[static_cast<size_t>(i)], Tab10(static_cast<int>(i)));
    if (named) c.XTickLabel(static_cast<double>(i), ClassLabel(names, static_cast<size_t>(i)));
  }
  // Box outlines, all centred, at their relative sizes (the first 1000, as Ultralytics draws them).
  c.Panel(2, {0, 1}, {0, 1}, "", "", "boxes (centred, relative size)", false, true);
  for (size_t i = 0; i < boxes.size() && i < 1000; ++i) {
    const Box& b = boxes[i];
    c.RectOutline(0.5 - b.w / 2, 0.5 - b.h / 2, 0.5 + b.w / 2, 0.5 + b.h / 2, Tab10(b.cls), 0.6);
  }
  // 2-D densities (50 x 50 bins), darker = more boxes.
  auto density = [&](int k, const char* xl, const char* yl, auto fx, auto fy) {
    constexpr int kBins = 50;
    std::vector<double> h(kBins * kBins, 0.0);
    for (const Box& b : boxes) {
      const int ix = std::clamp(static_cast<int>(fx(b) * kBins), 0, kBins - 1);
      const int iy = std::clamp(static_cast<int>(fy(b) * kBins), 0, kBins - 1);
      h[static_cast<size_t>(iy * kBins + ix)] += 1;
    }
    const double hmax = std::max(1.0, *std::max_element(h.begin(), h.end()));
    c.Panel(k, {0, 1}, {0, 1}, xl, yl, "", false, true);
    for (int iy = 0; iy < kBins; ++iy) {
      for (int ix = 0; ix < kBins; ++ix) {
        const double v = h[static_cast<size_t>(iy * kBins + ix)];
        if (v > 0) c.Rect(ix / 50.0, iy / 50.0, (ix + 1) / 50.0, (iy + 1) / 50.0, Blues(0.25 + 0.75 * v / hmax));
      }
    }
    c.Frame();  // the box and ticks over the cells
  };
  density(3, "x", "y", [](const Box& b) { return b.cx; }, [](const Box& b) { return b.cy; });
  density(4, "width", "height", [](const Box& b) { return b.w; }, [](const Box& b) { return b.h; });
  return Save(c, jpg);
}

}  // namespace yc::trainer
