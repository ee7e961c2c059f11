#include "tools/yolocache_train/result_file.h"

#include <fstream>
#include <iostream>

#include "libcache/base/path_json.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/eval/validator.h"

namespace yc::cli {

void AddResultFileOption(CLI::App& app, std::string* path) {
  app.add_option("--result-json", *path, "Also write the result as JSON to this file")->group("");
}

void WriteResultFile(const std::string& path, const nlohmann::json& j, const char* command) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << JsonText(j) << "\n";
  out.close();
  if (!out) std::cerr << "yolocache-train " << command << ": cannot write --result-json " << path << "\n";
}

nlohmann::json TrainSummaryJson(const trainer::TrainSummary& s) {
  nlohmann::json j;
  if (s.has_metrics) j["metrics"] = trainer::MetricsToJson(s.final_metrics, s.names);
  j["names"] = s.names;
  SetPathField(j, "save_dir", s.out_dir.string());
  SetPathField(j, "best", s.best.string());
  SetPathField(j, "last", s.last.string());
  j["best_epoch"] = s.best_epoch;
  j["best_fitness"] = s.best_fitness;
  j["epochs_run"] = s.epochs_run;
  j["epochs_completed"] = s.epochs_completed;
  j["interrupted"] = s.interrupted;
  j["early_stopped"] = s.early_stopped;
  j["wall_seconds"] = s.wall_seconds;
  j["train_seconds"] = s.train_seconds;
  j["images_per_second"] = s.images_per_second;
  return j;
}

}  // namespace yc::cli
