#include "tools/common/data_arg.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <functional>

#include "libcache/base/path_text.h"
#include "libcache/build/prepare_cache.h"
#include "libcache/format/manifest.h"
#include "tools/common/interrupt.h"
#include "tools/common/progress_bar.h"

namespace yc::cli {
namespace {

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1000);
  return buf;
}

int Refuse(const DataArgs& args, const std::string& command, const Status& st) {
  std::cerr << args.program << " " << command << ": " << st.ToString() << "\n";
  return ExitCodeFor(st);
}

// A cache given as it is: has its source changed since the build?
int CheckGivenCache(const std::string& command, const DataArgs& args, const std::string& data, std::ostream& log) {
  Result<Manifest> m = ReadManifest(data);
  if (!m.ok()) return -1;  // opening the cache reports it, with its own exit code
  InterruptPolling polling;  // hashing a big source takes a while
  Result<SourceCheck> check = CheckCacheSource(*m, polling.flag());
  if (polling.interrupted()) return Refuse(args, command, Status::Cancelled("interrupted"));
  if (!check.ok()) {
    std::cerr << args.program << " " << command << ": note: the source of " << PrintableText(data)
              << " was not checked: " << check.status().ToString() << "\n";
    return args.strict_source ? kExitProblems : -1;
  }
  if (check->changes.empty()) {
    log << "data: " << PrintableText(data) << " (source unchanged since the build: " << check->files
              << " images and labels checked in " << Ms(check->seconds) << ")\n";
    return -1;
  }
  const SourceChange& first = check->changes.front();
  std::cerr << args.program << " " << command << ": " << (args.strict_source ? "error" : "warning")
            << ": the source changed since " << PrintableText(data) << " was built: " << DescribeChanges(check->changes)
            << " (first: " << SourceChangeKindName(first.kind) << " [" << first.split << "] " << PrintableText(first.path)
            << "); update it with `yolocache build " << PrintableText(m->dataset_yaml) << " -o " << PrintableText(data)
            << " --update`, or give --data the YAML\n";
  return args.strict_source ? kExitProblems : -1;
}

}  // namespace

int PrepareDataArg(const std::string& command, const DataArgs& args, std::string* data, int imgsz, std::ostream& log) {
  PrepareOptions o;
  o.data = *data;
  o.cache_root = args.cache_dir;
  o.imgsz = imgsz > 0 ? imgsz : 640;
  std::error_code ec;
  const bool is_cache = std::filesystem::exists(std::filesystem::path(*data) / kManifestFileName, ec);
  if (is_cache) return CheckGivenCache(command, args, *data, log);
  // Data-parallel ranks only use a cache that is up to date: N ranks must not build one at once. The
  // launcher of device=0,1 (train_ranks.h) builds it before it starts them.
  const char* world = std::getenv("WORLD_SIZE");
  o.reuse_only = world != nullptr && std::atoi(world) > 1;
  SplitProgress bar("cache");
  o.progress = std::ref(bar);
  InterruptPolling polling;  // a signal stops the build, which removes its staging dir: exit 130
  o.cancel = polling.flag();
  Result<PreparedCache> prepared = PrepareCache(o);
  bar.Finish();
  if (!prepared.ok()) return Refuse(args, command, prepared.status());
  if (!prepared->ready) {
    return Refuse(args, command, Status::InvalidArgument(
                               PrintableText(*data) + ": its cache " + PrintableText(prepared->dir.string()) +
                               " is not up to date (it would be " + PrepareActionName(prepared->action) +
                               "), and several ranks must not build it at once: run `yolocache build " +
                               PrintableText(*data) + " -o CACHE` first, or start the ranks with device=0,1, "
                               "which caches the data before"));
  }
  if (polling.interrupted()) return Refuse(args, command, Status::Cancelled("interrupted"));  // after the build's last check
  const PreparedCache& p = *prepared;
  const std::string dir = PrintableText(p.dir.string());
  switch (p.action) {
    case PrepareAction::kGiven: break;
    case PrepareAction::kFetched:
      if (p.pull.reused) {
        log << "data: reusing " << dir << " (the local copy of " << PrintableText(*data) << ", unchanged there)\n";
      } else {
        log << "data: fetched " << PrintableText(*data) << " into " << dir << " (" << p.pull.files_fetched << " files, "
            << HumanBytes(static_cast<double>(p.pull.bytes_fetched)) << " in " << Ms(p.pull.seconds) << "; "
            << p.pull.files_kept << " unchanged files kept)\n";
      }
      break;
    case PrepareAction::kReused:
      log << "data: reusing cache " << dir << " (source unchanged, checked in " << Ms(p.check_seconds) << ")\n";
      break;
    case PrepareAction::kUpdated:
      log << "data: updated cache " << dir << " (" << DescribeChanges(p.changes) << "; " << p.build.reused
                << " of " << p.build.records << " records reused)\n";
      break;
    case PrepareAction::kBuilt:
    case PrepareAction::kRebuilt:
      log << "data: built cache " << dir << " from " << PrintableText(*data) << " at imgsz " << o.imgsz << " ("
                << p.build.records << " records, dataset root " << PrintableText(p.build.root.string()) << " from "
                << PrintableText(p.build.root_from) << ")"
                << (p.action == PrepareAction::kRebuilt ? "; the old one was unusable: " + p.rebuilt_because : "") << "\n";
      break;
  }
  *data = p.dir.string();
  return -1;
}

}  // namespace yc::cli
