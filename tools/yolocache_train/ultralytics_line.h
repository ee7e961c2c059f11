// Ultralytics' command line read as yolocache-train's own, before CLI11 parses it (tools/common/command.h's
// CommandLine::rewrite), so that `yolo`'s lines run here unchanged:
//
//   yolocache-train [detect] train|val|predict|export key=value ...      (and our --flag forms)
//   yolocache-train task=detect mode=train data=coco128.yaml model=yolov8n.yaml epochs=3
//   yolocache-train train cfg=my.yaml imgsz=320           (the file's keys, then the line's, as Ultralytics)
//
// What it does, key by key (tools/yolocache_train/ultralytics_keys.h has every default.yaml key):
//  * task words and task=/mode=: detect is the only task; mode= names the subcommand.
//  * model=NAME.yaml: that architecture from scratch (--model NAME); model=NAME.pt or model=NAME: weights,
//    looked up where Ultralytics looks (the path as given, then its settings' weights_dir), never
//    downloaded: a clear "not found" (exit 2) instead of a silent scratch run.
//  * resume=True: model=X.pt when one is given, else the newest last*.pt under the runs folder, as
//    Ultralytics' get_latest_run finds it; resume=PATH: that checkpoint.
//  * keys of other tasks and backends: dropped with one line saying why when not at their default; keys
//    of another mode (lr0= for val): dropped, as Ultralytics' modes ignore each other's keys.
//  * device=0,1 / [0, 1]: --device 0,1 for train (one rank per device, train_ranks.h); the first device,
//    with a note, for val, predict and export (as Ultralytics' select_device gives them cuda:0).
//  * bare boolean keys (`yolo train rect`) mean key=True; None/null values mean the default.
// Keys it does not know (our own: cache_dir=, order=, or typos) pass through to the key=value rewriting
// of tools/common/cli_args.h, which maps ours and rejects the rest by name with a hint.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace yc::cli {

// `args` without the program name; `app` has the subcommands added (their options decide where a key
// goes). Notes (ignored keys, rounding) go to `notes`, one line each. InvalidArgument (exit 2) for a line
// that cannot run: another task, a model that is not here, a setting not implemented yet.
Result<std::vector<std::string>> ReadUltralyticsLine(CLI::App& app, const std::vector<std::string>& args,
                                                     std::ostream& notes);

}  // namespace yc::cli
