// The loader's options as --flags, from its vocabulary (loader/option_table.h): the spelling, help and
// allowed values the table gives, bound to a command's own variable (whose value --help shows as the
// default). Ranges stay the command's (->check on the option returned) or ValidateOptions'.
//
//   AddLoaderFlag(app, "window_io", &a.window_io);   // --window-io TEXT:{auto,direct,page-cache}
//   AddHypFlags(app, &o.hyp);                         // --mosaic ... --close-mosaic
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "loader/options.h"

namespace yc::cli {

CLI::Option* AddLoaderFlag(CLI::App& app, std::string_view name, std::string* target);
CLI::Option* AddLoaderFlag(CLI::App& app, std::string_view name, int* target);
CLI::Option* AddLoaderFlag(CLI::App& app, std::string_view name, double* target);

// The augmentation hyperparameters (Ultralytics' default.yaml names), in the table's order.
void AddHypFlags(CLI::App& app, AugmentHyp* hyp);

}  // namespace yc::cli
