// Runs the command line of the program whose command library is linked into this binary (its commands
// and its ProgramRegistration, tools/common/command.h): the binary's main() and an in-process caller
// (the Python module's yolocache.YOLO) go through the same parsing and the same commands.
//
//   int main(int argc, char** argv) { return RunRegisteredProgram({argv, argv + argc}); }
//
// Declared apart from command.h so that a caller does not compile CLI11.
#pragma once

#include <string>
#include <vector>

namespace yc::cli {

// `args` as argv (args[0] names the program in messages). Returns the command's exit code
// (yc::ExitCode); 3 when no program is registered. `self_executable`: the file that runs this program
// again, for a command that starts copies of itself (train's data-parallel ranks): main() passes
// /proc/self/exe; empty when the program runs inside another one (the Python module), where such a
// command refuses.
int RunRegisteredProgram(const std::vector<std::string>& args, const std::string& self_executable = "");

// While RunRegisteredProgram runs: its `args` and `self_executable`.
struct RunningProgram {
  std::vector<std::string> args;
  std::string self_executable;
};
const RunningProgram& CurrentProgram();

}  // namespace yc::cli
