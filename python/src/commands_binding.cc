// yolocache.YOLO's engine: the registered `yolocache-train` command line (tools/common/program.h) run
// in this process, so Python gets the CLI's grammar, checks and speed with no subprocess:
//
//   rc, signal, stderr_lines = _yolocache.run_command(["yolocache-train", "train", "data=...", ...])
//
// The GIL is released for the whole run (the C++ prints its own progress); Ctrl-C stops the run at its
// next check as in the CLI (tools/common/interrupt.h), and Python's handlers are back on return.
#include <cstdio>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "python/src/stderr_tail.h"
#include "tools/common/interrupt.h"
#include "tools/common/program.h"

namespace yc::py {
namespace {

std::mutex g_running;  // the interrupt flag, the signal handlers and std::cerr are per process

pb::tuple RunCommand(const std::vector<std::string>& args) {
  if (args.size() < 2) throw pb::value_error("run_command: expected [program, subcommand, args...]");
  UseThreadPool("yolocache.YOLO");
  std::unique_lock<std::mutex> lock(g_running, std::try_to_lock);
  if (!lock.owns_lock())
    throw std::runtime_error("another yolocache.YOLO command is running in this process (one at a time)");
  int rc = 0, signal = 0;
  std::vector<std::string> lines;
  {
    pb::gil_scoped_release release;
    StderrTail tail;
    cli::InProcessInterrupts interrupts(args[0].c_str());
    rc = cli::RunRegisteredProgram(args);
    std::fflush(stdout);  // the C++ console output before Python's next line
    std::cout.flush();
    signal = interrupts.signal();
    lines = tail.lines();
  }
  return pb::make_tuple(rc, signal, lines);
}

}  // namespace

void BindCommands(pb::module_& m) {
  m.def("run_command", &RunCommand, pb::arg("args"),
        "Runs a yolocache-train command line in-process; returns (exit code, signal that stopped it or 0, the "
        "last stderr lines)");
}

}  // namespace yc::py
