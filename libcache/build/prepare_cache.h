// A cache for `yolocache-train train|val|ceiling --data X`, where X may be a built cache, an
// Ultralytics data YAML or a dataset folder, as a user gives Ultralytics:
//
//   PrepareOptions o;  o.data = "coco128.yaml";  o.imgsz = 640;
//   Result<PreparedCache> c = PrepareCache(o);   // c->dir: the cache to train on; c->action: what was done
//
// A YAML or folder is built into <cache root>/<name>-<imgsz>-<8 hex digits> (the hex: XXH3 of the
// source's absolute path and resolved dataset root, so two datasets never share a cache), where the
// cache root is --cache-dir, else $YOLOCACHE_CACHE_DIR, else $XDG_CACHE_HOME/yolocache, else
// ~/.cache/yolocache: never inside the dataset (Ultralytics writes its labels/*.cache files beside the
// labels; a yolocache cache holds every decoded image, far too big to drop into a user's folders, and
// the builder refuses that anyway). An existing cache there is reused when its manifest reads and a
// quick source check (sizes and mtimes, then hashes of what differs: source_diff.h) finds nothing
// changed; updated with `build --update` semantics when something did; rebuilt when it cannot be read
// (older format, damaged). A built cache given directly is used as it is; CheckCacheSource then says
// whether its source changed since the build.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/build/builder.h"
#include "libcache/build/pull_cache.h"
#include "libcache/build/source_diff.h"
#include "libcache/format/manifest.h"

namespace yc {

struct PrepareOptions {
  std::filesystem::path data;        // a cache directory, a data YAML or a dataset folder
  std::filesystem::path cache_root;  // empty: DefaultCacheRoot()
  int imgsz = 640;                   // the long side of the cached images (build --imgsz)
  int threads = 0;
  std::function<void(const std::string& split, size_t done, size_t total)> progress;  // while building
  const std::atomic<bool>* cancel = nullptr;
  // Stop before building or updating (the result is not `ready`; `action` says what would be done): for
  // processes that must not build one at the same time (data-parallel ranks).
  bool reuse_only = false;
};

enum class PrepareAction {
  kGiven,    // `data` is a cache: used as it is
  kReused,   // the cache built earlier from this source is up to date
  kUpdated,  // the source changed: the cache was updated (build --update)
  kBuilt,    // no cache yet: built
  kRebuilt,  // a cache was there but could not be read (older format, damaged): built again
  kFetched,  // `data` is a cache in object storage (s3://, https://): fetched (pull_cache.h)
};
const char* PrepareActionName(PrepareAction action);  // "given" | "reused" | "updated" | "built" | "rebuilt"

struct PreparedCache {
  std::filesystem::path dir;
  PrepareAction action = PrepareAction::kGiven;
  std::vector<SourceChange> changes;  // kUpdated: what changed in the source
  std::string rebuilt_because;        // kRebuilt: why the old cache was not usable
  BuildReport build;                  // kUpdated / kBuilt / kRebuilt
  PullReport pull;                    // kFetched (pull.reused: the local copy was up to date)
  double check_seconds = 0;           // the quick source check (kReused / kUpdated)
  bool ready = true;                  // false: reuse_only stopped before building `dir`
};

Result<PreparedCache> PrepareCache(const PrepareOptions& options);

// --cache-dir's default (see above).
std::filesystem::path DefaultCacheRoot();

// Whether a built cache's source changed since the build: a quick DiffSources against the manifest's
// dataset YAML, resolved from the build's working directory. NotFound when the source is gone (a cache
// copied to another machine); the caller decides whether that matters.
struct SourceCheck {
  std::vector<SourceChange> changes;
  size_t files = 0;  // source images compared (their labels too)
  double seconds = 0;
};
Result<SourceCheck> CheckCacheSource(const Manifest& manifest, const std::atomic<bool>* cancel = nullptr);

// "2 changed (1 label), 1 added, 0 removed" for messages.
std::string DescribeChanges(const std::vector<SourceChange>& changes);

}  // namespace yc
