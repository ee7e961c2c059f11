// `--data` of `yolocache-train train|val|ceiling` (and the URL of `yolocache bench`): a built cache, or a data YAML / dataset folder that
// is built into one (libcache/build/prepare_cache.h), with what was done said on stdout:
//
//   DataArgs d;  // --cache-dir, --strict-source, bound by the command
//   if (int rc = PrepareDataArg("train", d, &o.data, o.imgsz); rc >= 0) return rc;
//
// For a cache given directly the source is checked (sizes and mtimes, hashes of what differs): a
// change is a warning on stderr, or with --strict-source exit 1. Under several ranks (WORLD_SIZE > 1) a
// YAML or folder is used only when its cache is up to date, else refused (exit 2): N ranks would build
// one cache at once. device=0,1's launcher builds it before starting them.
#pragma once

#include <iosfwd>
#include <string>

namespace yc::cli {

struct DataArgs {
  std::string program = "yolocache-train";  // names the program in messages (`yolocache bench` too)
  std::string cache_dir;       // --cache-dir: where caches built from a YAML/folder go
  bool strict_source = false;  // --strict-source: a source changed since the build refuses to run
};

// Replaces *data by the cache directory to use; what was done goes to `log` (stderr under --json, so
// stdout stays one JSON document). Returns -1 to go on, else the exit code.
int PrepareDataArg(const std::string& command, const DataArgs& args, std::string* data, int imgsz, std::ostream& log);

}  // namespace yc::cli
