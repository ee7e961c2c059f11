// `train --teacher`'s checks before any work (no cache is built for a run that will be refused): the
// file is read (missing or damaged: exit 3, naming it) and its class count compared with the run's as
// far as --data tells it without a build (a cache's manifest, a data YAML's names; single_cls and classes
// applied): another count is exit 2 naming both and the file. A bare folder or a URL has no class list
// before its cache exists; Train checks those after opening the cache (trainer/engine/teacher.h).
#pragma once

#include "trainer/config/train_options.h"

namespace yc::cli {

// -1 to go on, else the exit code (the reason printed on stderr as `command`'s).
int CheckTeacherBeforeData(const char* command, const trainer::TrainOptions& options);

}  // namespace yc::cli
