// yolocache.build / yolocache.verify: the same work and the same report as `yolocache build --json`
// and `yolocache verify --json` (libcache/report_json.h), handed to Python as JSON text that
// yolocache/__init__.py turns into dicts. The GIL is released while the work runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "libcache/build/builder.h"
#include "libcache/build/source_diff.h"
#include "libcache/format/manifest.h"
#include "libcache/report_json.h"
#include "libcache/source/audit.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/verify/cache_verify.h"
#include "python/src/bindings.h"

namespace yc::py {
namespace {

std::string BuildJson(const std::string& source, const std::string& out, int imgsz, const std::string& backend,
                      const std::string& compress, int level, uint64_t shard_size,
                      const std::vector<std::string>& splits, bool update, int threads) {
  BuildOptions o;
  o.source = source;
  o.out = out;
  o.imgsz = imgsz;
  o.splits = splits;
  o.update = update;
  o.threads = threads;
  o.shard_size = shard_size;
  if (!ParseBackend(backend, &o.backend)) ThrowIfError(Status::InvalidArgument("backend must be shards or lmdb, got '" + backend + "'"));
  ThrowIfError(ParseCodecSpec(compress, &o.codec).WithContext("compress"));
  if (compress == "zstd") o.codec.level = level;  // "zstd:LEVEL" names its own
  if (shard_size == 0) ThrowIfError(Status::InvalidArgument("shard_size must be > 0"));
  Result<BuildReport> report = Status::OK();
  UseThreadPool("yolocache.build");
  {
    pb::gil_scoped_release release;
    report = BuildCache(o);
  }
  ThrowIfError(report.status());
  return JsonText(BuildReportJson(*report));
}

// A cache directory: every checksum (and with `source`, what changed since the build); otherwise the
// audit of a source dataset. Problems are in the report ("ok": false), not exceptions.
std::string VerifyJson(const std::string& path, const std::string& source, bool strict) {
  UseThreadPool("yolocache.verify");
  if (LooksLikeCacheDir(path)) {
    VerifyReport report;
    std::vector<SourceChange> changes;
    Status diff_status;
    {
      pb::gil_scoped_release release;
      report = VerifyCache(path);
      if (!source.empty()) {
        Result<Manifest> manifest = ReadManifest(path);
        if (manifest.ok()) {  // otherwise the report already says why the manifest cannot be used
          Result<std::vector<SourceChange>> diff = DiffSources(*manifest, source);
          if (diff.ok()) changes = std::move(diff.value());
          diff_status = diff.status();
        }
      }
    }
    ThrowIfError(diff_status);
    return JsonText(CacheVerifyJson(path, report, source.empty() ? nullptr : &changes, strict));
  }
  if (!source.empty()) ThrowIfError(Status::InvalidArgument(path + ": source= applies to a cache directory only"));
  Result<DatasetSpec> spec = LoadDatasetSpec(path);
  ThrowIfError(spec.status());
  Result<DatasetAudit> audit = Status::OK();
  {
    pb::gil_scoped_release release;
    audit = AuditDataset(*spec, ScanOptions{});
  }
  ThrowIfError(audit.status());
  return JsonText(SourceAuditJson(*spec, *audit, strict));
}

}  // namespace

void BindReports(pb::module_& m) {
  m.def("build_json", &BuildJson, pb::arg("source"), pb::arg("out"), pb::arg("imgsz") = 640,
        pb::arg("backend") = "shards", pb::arg("compress") = "none", pb::arg("level") = Codec().level,
        pb::arg("shard_size") = BuildOptions().shard_size, pb::arg("splits") = std::vector<std::string>(),
        pb::arg("update") = false, pb::arg("threads") = 0);
  m.def("verify_json", &VerifyJson, pb::arg("path"), pb::arg("source") = "", pb::arg("strict") = false);
}

}  // namespace yc::py
