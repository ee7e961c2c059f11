// The pictures Ultralytics draws for a detection run, drawn with PLplot (plot_canvas.h) from plain
// numbers (no torch), each written atomically (image_file.h):
//   results.png                 2 x 5 panels over epochs (train box/cls/dfl loss, P, R; val losses, mAP50,
//                               mAP50-95): raw values with markers and a Gaussian-smoothed (sigma 3) dotted line
//   BoxPR_curve.png             precision over recall at IoU 0.5 per class and their mean ("all classes"),
//                               1350 x 900 (Ultralytics' 9 x 6), the legend beside the axes, classes in order
//   BoxF1_curve.png (BoxP_, BoxR_) F1 (precision, recall) over confidence per class and the mean, its best marked
//   confusion_matrix[_normalized].png   (nc + 1)^2 cells (predicted x true, background last), Blues, with
//                               a colour bar; 1200 x 900 (Ultralytics' 12 x 9)
//   labels.jpg                  instances per class, box outlines, box centre x/y and width/height densities
// Without PLplot in the build every function returns Unsupported (the caller says so once and goes on).
//
//   YC_RETURN_IF_ERROR(PlotResults(series, dir / "results.png"));
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/base/box.h"

namespace yc::trainer {

// One panel of results.png: values y at epochs x (epochs without a value are left out by the caller).
struct MetricSeries {
  std::string title;
  std::vector<double> x, y;
};
Status PlotResults(const std::vector<MetricSeries>& panels, const std::filesystem::path& png);

// scipy.ndimage.gaussian_filter1d(y, sigma) with mode 'reflect' and truncate 4, as Ultralytics smooths
// the results curves.
std::vector<double> GaussianSmooth(const std::vector<double>& y, double sigma);

// px: the x axis (1000 points, 0..1); curves[c] over px for class c = classes[c]; ap50[c] its AP at 0.5.
Status PlotPrCurve(const std::vector<double>& px, const std::vector<std::vector<double>>& curves,
                   const std::vector<double>& ap50, const std::vector<std::string>& labels,
                   const std::filesystem::path& png);
// F1 / precision / recall over confidence; the legend names the mean curve's maximum. `mean_curve`: the
// bold curve (Ultralytics draws the mean smoothed, eval/metrics.h Smooth), else the plain mean.
Status PlotMetricCurve(const std::vector<double>& px, const std::vector<std::vector<double>>& curves,
                       const std::vector<std::string>& labels, const std::string& ylabel,
                       const std::filesystem::path& png, const std::vector<double>* mean_curve = nullptr);

// counts: (nc + 1) x (nc + 1) row-major [predicted][true]; names: nc class names ("background" is added).
Status PlotConfusionMatrix(const std::vector<double>& counts, int64_t nc, const std::vector<std::string>& names,
                           bool normalize, const std::filesystem::path& png);

// Every label box of the train split (normalised xywh) with the class names.
Status PlotLabels(const std::vector<Box>& boxes, const std::vector<std::string>& names,
                  const std::filesystem::path& jpg);

}  // namespace yc::trainer
