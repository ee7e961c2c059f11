// The pictures Ultralytics' DetectionValidator leaves in its run directory, from one validation:
// BoxPR_curve.png, BoxF1_curve.png, BoxP_curve.png, BoxR_curve.png (8.3.166 names: ultralytics/utils/metrics.py
// DetMetrics.process, prefix "Box"), confusion_matrix.png and
// confusion_matrix_normalized.png (trainer/plots/charts.h draws them).
//
//   YC_RETURN_IF_ERROR(WriteValidationPlots(result.metrics, result.confusion, names, run_dir));
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/eval/metrics_summary.h"

namespace yc::trainer {

// confusion: (nc + 1)^2 counts (ValResult::confusion) with nc = names.size(). Unsupported when the build
// cannot draw (no PLplot or no PNG encoder); the first failure otherwise, naming the file.
Status WriteValidationPlots(const MetricsSummary& metrics, const std::vector<double>& confusion,
                            const std::vector<std::string>& names, const std::filesystem::path& dir);

// The file names WriteValidationPlots writes, in order.
const std::vector<std::string>& ValidationPlotFiles();

}  // namespace yc::trainer
