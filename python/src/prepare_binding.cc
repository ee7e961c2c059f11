// Where the CLIs keep the caches they build from a data YAML or folder, and that build, for Python:
// yolocache.ultralytics and yolocache.YOLO use the same rule and the same folder names as
// `yolocache-train --data X.yaml` (libcache/build/prepare_cache.h), so a dataset is cached once.
#include <pybind11/stl.h>

#include <functional>

#include "libcache/build/prepare_cache.h"
#include "libcache/source/dataset_spec.h"
#include "python/src/bindings.h"
#include "tools/common/interrupt.h"
#include "tools/common/progress_bar.h"

namespace yc::py {
namespace {

// {source, root, root_from, names, splits: {name: [inputs]}} of a data YAML or dataset folder.
pb::dict DatasetSpecDict(const std::string& path) {
  Result<DatasetSpec> spec = LoadDatasetSpec(path);
  ThrowIfError(spec.status());
  pb::dict splits;
  for (const SplitSpec& s : spec->splits) {
    std::vector<std::string> inputs;
    for (const auto& input : s.inputs) inputs.push_back(input.string());
    splits[pb::str(s.name)] = inputs;
  }
  pb::dict d;
  d["source"] = spec->source.string();
  d["root"] = spec->root.string();
  d["root_from"] = spec->root_from;
  d["names"] = spec->names;
  d["splits"] = splits;
  return d;
}

// PrepareCache with the CLI's progress bars; Ctrl-C stops the build (which removes its staging dir)
// and raises KeyboardInterrupt. Returns {dir, action}.
pb::dict Prepare(const std::string& data, int imgsz, const std::string& cache_root, int threads) {
  UseThreadPool("yolocache cache build");
  PrepareOptions o;
  o.data = data;
  o.imgsz = imgsz;
  o.cache_root = cache_root;
  o.threads = threads;
  Result<PreparedCache> prepared = Status::OK();
  {
    pb::gil_scoped_release release;
    cli::InProcessInterrupts interrupts("yolocache");
    cli::SplitProgress bar("cache");
    o.progress = std::ref(bar);
    o.cancel = cli::InterruptFlag();
    prepared = PrepareCache(o);
    bar.Finish();
    if (prepared.ok() && cli::InterruptFlag()->load()) prepared = Status::Cancelled("interrupted");
  }
  ThrowIfError(prepared.status());
  pb::dict d;
  d["dir"] = prepared->dir.string();
  d["action"] = PrepareActionName(prepared->action);
  return d;
}

}  // namespace

void BindPrepare(pb::module_& m) {
  m.def("default_cache_root", [] { return DefaultCacheRoot().string(); },
        "The CLIs' cache folder: $YOLOCACHE_CACHE_DIR, else $XDG_CACHE_HOME/yolocache, else ~/.cache/yolocache");
  m.def("dataset_spec", &DatasetSpecDict, pb::arg("path"), "How a data YAML or dataset folder resolves (root, splits)");
  m.def("prepare_cache", &Prepare, pb::arg("data"), pb::arg("imgsz") = 640, pb::arg("cache_root") = "",
        pb::arg("threads") = 0, "The cache `yolocache-train --data DATA` uses: built, updated or reused");
}

}  // namespace yc::py
