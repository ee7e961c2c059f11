// The hidden --result-json FILE of train, val, predict and export: the command's result as one JSON
// document in FILE, while the console shows what it always shows. It is how an in-process caller
// (yolocache.YOLO in Python) gets the numbers without reading stdout; val and export write the
// document their --json prints, predict {"names": [...], "results": its --json array}, train its
// closing summary (TrainSummaryJson).
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "trainer/engine/trainer.h"

namespace yc::cli {

// Binds --result-json to *path, hidden from --help (tooling, not a user option).
void AddResultFileOption(CLI::App& app, std::string* path);

// Writes `j` to `path` when it is not empty; a failure is one line on stderr (the work itself is done,
// so the exit code stays the work's).
void WriteResultFile(const std::string& path, const nlohmann::json& j, const char* command);

// A training run's closing numbers: the final validation (MetricsToJson's fields, per class), where
// the run went (save_dir, best, last), the best epoch, and how the run ended.
nlohmann::json TrainSummaryJson(const trainer::TrainSummary& s);

}  // namespace yc::cli
