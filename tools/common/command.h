// Subcommand registry of the `yolocache` and `yolocache-train` CLIs. Each subcommand lives in its own
// `<name>_command.cc`, parses its arguments with CLI11 and calls the libraries; it registers itself:
//
//   static yc::cli::Registration reg("build", "Decode a dataset once into a cache",
//       [](CLI::App& app) -> yc::cli::Action { auto opts = std::make_shared<Opts>(); app.add_option(...);
//                                            return [opts] { return RunBuild(*opts); }; });
//
// An Action returns the process exit code (yc::ExitCode). A binary's main() is RunRegisteredCommand.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/common/cli_args.h"

namespace yc::cli {

using Action = std::function<int()>;
using Setup = std::function<Action(CLI::App&)>;

struct CommandInfo {
  std::string name;
  std::string description;
  Setup setup;
  bool hidden = false;  // left out of --help (tooling: `yolocache-train options --markdown`)
};

// The commands registered in this binary.
std::vector<CommandInfo>& Registry();

struct Registration {
  Registration(std::string name, std::string description, Setup setup, bool hidden = false) {
    Registry().push_back({std::move(name), std::move(description), std::move(setup), hidden});
  }
};

// How a binary runs its commands.
struct CommandLine {
  std::vector<std::string> order;   // the subcommands in --help, in this order (the rest after, by name)
  std::vector<KeyAlias> aliases;    // Ultralytics' key=value names that differ from ours (cli_args.h)
  LineRewrite rewrite;              // a binary's own reading of the line before that (cli_args.h), or none
  // What an exception escaping a command prints and returns (the command's name, the exception).
  std::function<int(const std::string&, const std::exception&)> on_exception;
};

// Adds the registered commands to `app`, parses the command line (cli_args.h) and runs the chosen one:
// its exit code, or ParseCommandLine's.
int RunRegisteredCommand(CLI::App& app, int argc, char** argv, const CommandLine& line);

// The binary's own settings, registered by its command library beside its commands (one per binary),
// so that its main() and an in-process caller (the Python module) read one command line; run it with
// RunRegisteredProgram (tools/common/program.h, which needs no CLI11).
struct Program {
  std::string description;  // the first line of --help
  std::string version;      // what --version prints
  CommandLine line;
};

struct ProgramRegistration {
  explicit ProgramRegistration(Program program);
};

// The registered program, or nullptr.
const Program* RegisteredProgram();

}  // namespace yc::cli
