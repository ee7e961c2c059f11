// How `yolocache-train` reads its command line: the subcommands in --help order, Ultralytics' grammar
// (ultralytics_line.h) before the key=value rewriting, one-line errors. main() and any in-process caller
// (the Python package) run the registered commands with it, so both read a line the same way.
#pragma once

#include "tools/common/command.h"

namespace yc::cli {

CommandLine YolocacheTrainCommandLine();

}  // namespace yc::cli
