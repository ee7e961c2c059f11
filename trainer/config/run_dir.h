// Where train, val and predict write, named as Ultralytics names its runs (cfg/__init__.py get_save_dir,
// utils/files.py increment_path): <project>/<name> (default runs/detect/train, .../val, .../predict);
// when that path exists the first free of <name>2, <name>3, ... is taken, unless exist_ok reuses it.
// An explicit --out is used as given (no increment); it wins over --project/--name.
//
//   Result<std::filesystem::path> dir = ResolveRunDir(/*out=*/"", "runs/detect", "train", /*exist_ok=*/false);
//   // creates and returns runs/detect/train, or runs/detect/train2 when train exists ...
#pragma once

#include <filesystem>
#include <string>

#include "base/status.h"

namespace yc::trainer {

// The directory for `out` (explicit: used as given, wins) or else <project>/<name> (incremented unless
// exist_ok), created with its parents when `create` (only the main rank of a distributed run creates it).
// Incrementing creates each candidate with mkdir, so two processes started at once never get the same
// directory. IOError naming the path when it cannot be created; InvalidArgument for an empty project or
// name.
Result<std::filesystem::path> ResolveRunDir(const std::string& out, const std::string& project, const std::string& name,
                                            bool exist_ok, bool create = true);

}  // namespace yc::trainer
