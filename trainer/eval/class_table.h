// The validation table Ultralytics prints (ultralytics/models/yolo/detect/val.py get_desc and
// print_results): a header, the "all" row (images, instances, mean P, R, mAP50, mAP50-95) and, for a
// data set of more than one class, one row per class that has labels, in class order, with the images
// holding it and its instances. Columns as Ultralytics formats them ("%22s" then "%11i" x 2 and
// "%11.3g" x 4), so a log reads the same.
//
//   for (const std::string& line : ClassTableLines(result.metrics, names)) std::cout << line << "\n";
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/metrics_summary.h"

namespace yc::trainer {

// names: the class names (nc = names.size()); per_class false: the header and the "all" row only (what
// Ultralytics prints for validations during training).
std::vector<std::string> ClassTableLines(const MetricsSummary& metrics, const std::vector<std::string>& names,
                                         bool per_class = true);

}  // namespace yc::trainer
