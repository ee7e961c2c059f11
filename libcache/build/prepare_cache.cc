#include "libcache/build/prepare_cache.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <xxhash.h>

#include "libcache/remote/object_location.h"
#include "libcache/remote/object_store.h"
#include "libcache/source/dataset_spec.h"

namespace yc {
namespace fs = std::filesystem;
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool IsCache(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::exists(dir / kManifestFileName, ec);
}

// <root>/<name>-<imgsz>-<hash>: the name says what it is, the hash keeps datasets apart.
fs::path CachePathFor(const fs::path& root, const DatasetSpec& spec, int imgsz) {
  std::string name = spec.source.stem().string();
  if (name.empty() || name == ".") name = "dataset";
  const std::string key = spec.source.string() + '\n' + spec.root.string();
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(XXH3_64bits(key.data(), key.size()) & 0xffffffffu));
  return root / (name + "-" + std::to_string(imgsz) + "-" + hex);
}

size_t CountSources(const Manifest& m) {
  size_t n = 0;
  for (const SplitManifest& s : m.splits) n += s.sources.size();
  return n;
}

// A cache in object storage: its local copy, fetched when it is not up to date.
Result<PreparedCache> Fetch(const PrepareOptions& options) {
  YC_ASSIGN_OR_RETURN(ObjectLocation at, ParseObjectLocation(options.data.string()));
  YC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store, ObjectStore::Open(at));
  PullOptions pull;
  pull.cache_root = options.cache_root.empty() ? DefaultCacheRoot() : options.cache_root;
  pull.cancel = options.cancel;
  pull.reuse_only = options.reuse_only;
  if (options.progress) {
    pull.progress = [&options](uint64_t done, uint64_t total) {
      options.progress("fetch MiB", static_cast<size_t>(done >> 20), static_cast<size_t>(total >> 20));
    };
  }
  PreparedCache out;
  out.action = PrepareAction::kFetched;
  YC_ASSIGN_OR_RETURN(out.pull, PullCache(*store, pull));
  out.dir = out.pull.dir;
  out.ready = out.pull.ready;
  return out;
}

}  // namespace

const char* PrepareActionName(PrepareAction action) {
  switch (action) {
    case PrepareAction::kGiven: return "given";
    case PrepareAction::kReused: return "reused";
    case PrepareAction::kUpdated: return "updated";
    case PrepareAction::kBuilt: return "built";
    case PrepareAction::kRebuilt: return "rebuilt";
    case PrepareAction::kFetched: return "fetched";
  }
  return "?";
}

fs::path DefaultCacheRoot() {
  const char* own = std::getenv("YOLOCACHE_CACHE_DIR");
  if (own != nullptr && *own != '\0') return fs::path(own);
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return fs::path(xdg) / "yolocache";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return fs::path(home) / ".cache" / "yolocache";
  return fs::temp_directory_path() / "yolocache";
}

Result<SourceCheck> CheckCacheSource(const Manifest& manifest, const std::atomic<bool>* cancel) {
  const auto start = std::chrono::steady_clock::now();
  SourceCheck check;
  std::error_code ec;
  if (!fs::exists(manifest.dataset_yaml, ec))
    return Status::NotFound(Status::At(manifest.dataset_yaml, "the cache's source is not here"));
  DiffOptions o;
  o.quick = true;
  o.working_dir = manifest.working_dir;
  o.cancel = cancel;
  YC_ASSIGN_OR_RETURN(check.changes, DiffSources(manifest, manifest.dataset_yaml, o));
  check.files = CountSources(manifest);
  check.seconds = SecondsSince(start);
  return check;
}

std::string DescribeChanges(const std::vector<SourceChange>& changes) {
  size_t added = 0, removed = 0, changed = 0, labels = 0;
  for (const SourceChange& c : changes) {
    if (c.kind == SourceChange::Kind::kAdded) ++added;
    if (c.kind == SourceChange::Kind::kRemoved) ++removed;
    if (c.kind == SourceChange::Kind::kChanged) ++changed;
    labels += c.label ? 1 : 0;
  }
  return std::to_string(changed) + " changed (" + std::to_string(labels) + " of them labels), " + std::to_string(added) +
         " added, " + std::to_string(removed) + " removed";
}

Result<PreparedCache> PrepareCache(const PrepareOptions& options) {
  PreparedCache out;
  if (IsObjectUrl(options.data.string())) return Fetch(options);
  if (IsCache(options.data)) {
    out.dir = options.data;
    return out;
  }
  YC_ASSIGN_OR_RETURN(const DatasetSpec spec, LoadDatasetSpec(options.data));
  const fs::path root = options.cache_root.empty() ? DefaultCacheRoot() : options.cache_root;
  out.dir = CachePathFor(root, spec, options.imgsz);

  BuildOptions build;
  build.source = options.data;
  build.out = out.dir;
  build.imgsz = options.imgsz;
  build.threads = options.threads;
  build.progress = options.progress;
  build.cancel = options.cancel;
  out.action = PrepareAction::kBuilt;
  std::error_code ec;
  if (fs::exists(out.dir / kManifestFileName, ec)) {
    Result<Manifest> m = ReadManifest(out.dir);
    if (!m.ok()) {
      out.action = PrepareAction::kRebuilt;
      out.rebuilt_because = m.status().ToString();
    } else if (m->imgsz != options.imgsz || fs::path(m->dataset_yaml) != spec.source) {
      out.action = PrepareAction::kRebuilt;  // the hash collided with another dataset's name: never reuse it
      out.rebuilt_because = "it was built from " + m->dataset_yaml + " at imgsz " + std::to_string(m->imgsz);
    } else {
      const auto start = std::chrono::steady_clock::now();
      DiffOptions d;
      d.quick = true;
      d.cancel = options.cancel;
      YC_ASSIGN_OR_RETURN(std::vector<SourceChange> diff, DiffSources(*m, options.data, d));
      out.check_seconds = SecondsSince(start);
      if (diff.empty()) {
        out.action = PrepareAction::kReused;
        return out;
      }
      out.changes = std::move(diff);
      out.action = PrepareAction::kUpdated;
      build.update = true;
    }
  }
  if (options.reuse_only) {
    out.ready = false;
    return out;
  }
  fs::create_directories(root, ec);
  if (ec) return Status::IOError(Status::At(root.string(), "cannot create the cache folder: " + ec.message()));
  YC_ASSIGN_OR_RETURN(out.build, BuildCache(build));
  return out;
}

}  // namespace yc
