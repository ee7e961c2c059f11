#include "trainer/eval/val_plots.h"

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
  YC_RETURN_IF_ERROR(PlotMetricCurve(px, pc.f1_curve, labels, "F1", dir / "BoxF1_curve.png"));
  YC_RETURN_IF_ERROR(PlotMetricCurve(px, pc.p_curve, labels, "Precision", dir / "BoxP_curve.png"));
  YC_RETURN_IF_ERROR(PlotMetricCurve(px, pc.r_curve, labels, "Recall", dir / "BoxR_curve.png"));
  const int64_t nc = static_cast<int64_t>(names.size());
  YC_RETURN_IF_ERROR(PlotConfusionMatrix(confusion, nc, names, false, dir / "confusion_matrix.png"));
  return PlotConfusionMatrix(confusion, nc, names, true, dir / "confusion_matrix_normalized.png");
}

}  // namespace yc::trainer
