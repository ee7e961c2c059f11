// Subcommand registry for the `yolocache` CLI. Each subcommand lives in its own
// `<name>_command.cc`, parses its arguments with CLI11 and calls the libraries; it registers itself:
//
//   static yc::cli::Registration reg("build", "Decode a dataset once into a cache",
//       [](CLI::App& app) -> yc::cli::Action { auto opts = std::make_shared<Opts>(); app.add_option(...);
//                                            return [opts] { return RunBuild(*opts); }; });
//
// An Action returns the process exit code (yc::ExitCode).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace yc::cli {

using Action = std::function<int()>;
using Setup = std::function<Action(CLI::App&)>;

struct CommandInfo {
  std::string name;
  std::string description;
  Setup setup;
};

std::vector<CommandInfo>& Registry();

struct Registration {
  Registration(std::string name, std::string description, Setup setup) {
    Registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace yc::cli
