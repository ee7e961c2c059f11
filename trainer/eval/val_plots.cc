#include "trainer/eval/val_plots.h"

#include <tuple>

#include "trainer/eval/metrics.h"
#include "trainer/plots/charts.h"

namespace yc::trainer {

const std::vector<std::string>& ValidationPlotFiles() {
  static const std::vector<std::string> kFiles = {"BoxPR_curve.png", "BoxF1_curve.png", "BoxP_curve.png", "BoxR_curve.png",
                                                  "confusion_matrix.png", "confusion_matrix_normalized.png"};
  return kFiles;
}

Status WriteValidationPlots(const MetricsSummary& m, const std::vector<double>& confusion,
                            const std::vector<std::string>& names, const std::filesystem::path& dir) {
  const ApPerClassResult& pc = m.per_class;
  std::vector<std::string> labels;
  std::vector<double> ap50;
  for (size_t i = 0; i < pc.classes.size(); ++i) {
    const int64_t c = pc.classes[i];
    labels.push_back(c >= 0 && static_cast<size_t>(c) < names.size() ? names[static_cast<size_t>(c)] : std::to_string(c));
    ap50.push_back(pc.ap[i].empty() ? 0.0 : pc.ap[i][0]);
  }
  // With no true positive at all Ultralytics has no curves either: the plots show empty axes.
  const std::vector<double>& px = CurveX();
  YC_RETURN_IF_ERROR(PlotPrCurve(px, pc.pr_curve, ap50, labels, dir / "BoxPR_curve.png"));
  // The bold mean curve smoothed as plot_mc_curve draws it (smooth(py.mean(0), 0.1)).
  auto smoothed_mean = [&](const std::vector<std::vector<double>>& curves) {
    std::vector<double> mean(px.size(), 0.0);
    for (const auto& c : curves) {
      for (size_t i = 0; i < px.size() && i < c.size(); ++i) mean[i] += c[i] / static_cast<double>(curves.size());
    }
    return Smooth(mean, 0.1);
  };
  for (const auto& [curves, ylabel, file] :
       {std::tuple{&pc.f1_curve, "F1", "BoxF1_curve.png"}, std::tuple{&pc.p_curve, "Precision", "BoxP_curve.png"},
        std::tuple{&pc.r_curve, "Recall", "BoxR_curve.png"}}) {
    const std::vector<double> mean = smoothed_mean(*curves);
    YC_RETURN_IF_ERROR(PlotMetricCurve(px, *curves, labels, ylabel, dir / file, &mean));
  }
  const int64_t nc = static_cast<int64_t>(names.size());
  YC_RETURN_IF_ERROR(PlotConfusionMatrix(confusion, nc, names, false, dir / "confusion_matrix.png"));
  return PlotConfusionMatrix(confusion, nc, names, true, dir / "confusion_matrix_normalized.png");
}

}  // namespace yc::trainer
