// `yolocache-train`'s entry point: the program and its subcommands are the yolocache_train_commands
// library (program.cc, <name>_command.cc), which the Python module runs in-process too.
#include "tools/common/interrupt.h"
#include "tools/common/program.h"

int main(int argc, char** argv) {
  yc::cli::InstallInterruptHandling("yolocache-train");  // first: a signal from here on exits 130 (interrupt.h)
  // /proc/self/exe: train's data-parallel ranks (device=0,1) are this binary again, wherever it was found.
  return yc::cli::RunRegisteredProgram({argv, argv + argc}, "/proc/self/exe");
}
