// Where Ultralytics finds a weights file and the run to resume, without its downloads:
//  * FindWeights("yolov8n.pt"): the path as given, else the file in Ultralytics' weights_dir (the
//    settings.json under $YOLO_CONFIG_DIR or ~/.config/Ultralytics, default ./weights), as
//    ultralytics/utils/downloads.py attempt_download_asset looks before it downloads.
//  * LatestLastPt("runs"): the newest last*.pt below a folder (ultralytics/utils/files.py get_latest_run).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc::cli {

// The places FindWeights looks for `name`, in order.
std::vector<std::filesystem::path> WeightsCandidates(const std::string& name);
// The first candidate that is a file; InvalidArgument naming where it looked when none is.
Result<std::filesystem::path> FindWeights(const std::string& name);
// The most recently changed last*.pt file below `dir`; NotFound when there is none.
Result<std::filesystem::path> LatestLastPt(const std::filesystem::path& dir);

}  // namespace yc::cli
