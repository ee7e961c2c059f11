// What the `yolocache-train` subcommands share: the train options (train and ceiling), the run-folder
// and device options (train, val, predict, export), --data's cache options, and how a command fails and
// prints. One <name>_command.cc per subcommand registers itself (tools/common/command.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/format.h"
#include "tools/common/data_arg.h"
#include "trainer/config/train_options.h"

namespace yc::cli {

// printf-style formatting of one number, F("%.3f", map): the commands' short name for base/format.h's.
inline std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }

// Prints "yolocache-train <command>: <status>" to stderr and returns the exit code for it.
int Fail(const char* command, const Status& status);

// A --json document. Paths in it went through SetPathField; anything else that is not UTF-8 (a class
// name from a weights file) shows as U+FFFD rather than failing once the work is done.
std::string JsonText(const nlohmann::json& j);

struct TrainArgs {
  trainer::TrainOptions o;
  std::string resume;
  bool resume_other_data = false;
  bool amp = false, no_amp = false;
  std::string amp_dtype = "auto";
  std::string rank_weights;  // hidden --save-rank-weights DIR (DDP tests)
  bool dry_run = false;      // --dry-run: validate, print args.yaml, do nothing
  int cpu_ranks = 0;         // --cpu-ranks N: start N data-parallel CPU ranks (train_ranks.h)
  DataArgs data_args;        // --cache-dir, --strict-source
  std::string result_file;   // hidden --result-json FILE (train: result_file.h)
};

// --cache-dir and --strict-source, for a --data that is a data YAML or folder (tools/common/data_arg.h).
void AddDataOptions(CLI::App& app, DataArgs& d);
// --device, with what the command picks when it is not given.
void AddDeviceOption(CLI::App& app, std::string& device, const std::string& default_text);
// --project, --name, --out and --exist-ok: where the command writes (trainer/config/run_dir.h). `writes`
// says what goes there ("the run", "plots", "results"); `exist_ok_help` the --exist-ok line.
void AddRunFolderOptions(CLI::App& app, std::string& project, std::string& name, std::string& out, bool& exist_ok,
                         const std::string& writes, const std::string& exist_ok_help);
// --classes (Ultralytics' classes=0 | [0,2] | 0,2, read by trainer/config/class_list.h) into *classes: a
// list that is not one is a usage error naming it. `help` says what the listed classes keep.
CLI::Option* AddClassesOption(CLI::App& app, std::vector<int32_t>* classes, const std::string& help);
// The model, data, resources, recipe and augmentation: train's and ceiling's options.
void AddTrainOptions(CLI::App& app, TrainArgs& a);
// --amp / --no-amp / --amp-dtype into the options.
Status ApplyAmpFlags(const TrainArgs& a, trainer::TrainOptions* o);

}  // namespace yc::cli
