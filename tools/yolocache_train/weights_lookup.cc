#include "tools/yolocache_train/weights_lookup.h"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "libcache/base/path_text.h"

namespace yc::cli {
namespace fs = std::filesystem;
namespace {

// Ultralytics' settings folder: $YOLO_CONFIG_DIR, else ~/.config/Ultralytics (utils/__init__.py).
fs::path UltralyticsConfigDir() {
  if (const char* dir = std::getenv("YOLO_CONFIG_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') return fs::path(xdg) / "Ultralytics";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : ".") / ".config" / "Ultralytics";
}

// settings.json's weights_dir; Ultralytics' default (./weights) when the file or the key is missing.
fs::path UltralyticsWeightsDir() {
  std::ifstream in(UltralyticsConfigDir() / "settings.json");
  if (in) {
    const nlohmann::json settings = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (settings.is_object() && settings.contains("weights_dir") && settings["weights_dir"].is_string()) {
      return settings["weights_dir"].get<std::string>();
    }
  }
  return "weights";
}

}  // namespace

std::vector<fs::path> WeightsCandidates(const std::string& name) {
  std::vector<fs::path> out = {name};
  const fs::path p(name);
  if (!p.has_parent_path()) out.push_back(UltralyticsWeightsDir() / p);
  return out;
}

Result<fs::path> FindWeights(const std::string& name) {
  std::string looked;
  for (const fs::path& candidate : WeightsCandidates(name)) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
    looked += (looked.empty() ? "" : ", ") + PrintableText(candidate.string());
  }
  return Status::InvalidArgument("model=" + PrintableText(name) + ": no such weights file here (looked at " + looked +
                                 "); yolocache-train downloads nothing: put the file there, or give model=" +
                                 PrintableText(fs::path(name).stem().string()) + ".yaml to train from scratch");
}

Result<fs::path> LatestLastPt(const fs::path& dir) {
  fs::path best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.rfind("last", 0) != 0 || it->path().extension() != ".pt" || !it->is_regular_file(ec)) continue;
    const fs::file_time_type t = fs::last_write_time(it->path(), ec);
    if (!ec && (best.empty() || t > best_time)) {
      best = it->path();
      best_time = t;
    }
  }
  if (best.empty()) return Status::NotFound("no last*.pt below " + PrintableText(dir.string()));
  return best;
}

}  // namespace yc::cli
