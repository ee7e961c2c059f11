// The pieces of the `yolocache._yolocache` extension module, one binding file each:
//
//   PYBIND11_MODULE(_yolocache, m) { BindErrors(m); ...; BindOptions(m); BindLoader(m); }
//
// Only loader_binding.cc sees LibTorch (ATen); the others need pybind11 alone, so they compile fast.
#pragma once

#include <pybind11/pybind11.h>

#include "base/status.h"
#include "libcache/cache.h"
#include "loader/options.h"

namespace yc::py {

namespace pb = pybind11;

// yolocache.Error (a RuntimeError) and the mapping of a Status onto Python exceptions.
void BindErrors(pb::module_& m);
// Raises the Python exception for a failed Status, with its message: InvalidArgument -> ValueError,
// NotFound -> FileNotFoundError, Cancelled -> KeyboardInterrupt, ResourceExhausted -> MemoryError,
// anything else (corruption, I/O, data errors) -> yolocache.Error. Never returns on failure.
void ThrowIfError(const Status& status);

// Call before work on yolocache's worker threads (TBB): raises yolocache.Error naming `what` in a process
// forked from one that already ran them (their threads do not survive fork; the work would wait forever).
void UseThreadPool(const char* what);

void BindReports(pb::module_& m);  // build_json, verify_json
void BindCache(pb::module_& m);    // _Cache
// The root of the dataset a cache was built from (im_file paths are joined to it); "" when its data
// YAML cannot be read any more.
std::string DatasetRoot(const Cache& cache);
void BindOptions(pb::module_& m);  // loader_options, loader_options_markdown
// A Loader's keywords (loader/option_table.h names) as LoaderOptions; ValueError on an unknown name, a
// wrong type or value.
LoaderOptions LoaderOptionsFromDict(const pb::dict& options);
void BindLoader(pb::module_& m);   // _Loader
void BindPrepare(pb::module_& m);  // default_cache_root, dataset_spec, prepare_cache
void BindCommands(pb::module_& m); // run_command: yolocache-train in-process (yolocache.YOLO)

}  // namespace yc::py
