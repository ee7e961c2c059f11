// The `--json` documents of `yolocache build` and `yolocache verify`, built in one place so the CLI and
// the Python module (`yolocache.build`, `yolocache.verify`) hand out the same report:
//
//   Result<BuildReport> r = BuildCache(options);
//   std::cout << JsonText(BuildReportJson(*r)) << "\n";
//
//   VerifyReport v = VerifyCache(dir);
//   std::cout << JsonText(CacheVerifyJson(dir, v, nullptr, /*strict=*/false)) << "\n";
//
// Paths and messages go through PrintableText (path_text.h), so every string is valid UTF-8.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libcache/build/builder.h"
#include "libcache/build/source_diff.h"
#include "libcache/source/audit.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/verify/cache_verify.h"

namespace yc {

// {"cache", "audit_report", "splits": {name: {images, records, ...}}, "redecoded_corrupt", "records",
//  "pixel_bytes", "bytes_on_disk", "seconds", "images_per_second"}.
nlohmann::ordered_json BuildReportJson(const BuildReport& report);

// The audit of a source dataset: {"source", "splits", "total", "problems", "ok"}. Not ok when there
// are errors, or (strict) warnings.
nlohmann::ordered_json SourceAuditJson(const DatasetSpec& spec, const DatasetAudit& audit, bool strict);

// The check of a built cache: {"cache", "ok", "files_checked", "records_checked", "bytes_checked",
// "problems", "source_changes" (only with `changes`)}. Not ok when a problem was found, or (strict)
// a source file changed since the build.
nlohmann::ordered_json CacheVerifyJson(const std::string& cache, const VerifyReport& report,
                                       const std::vector<SourceChange>* changes, bool strict);

// `j` as indented text. Strings put in it should already be valid UTF-8; anything that slipped
// through is shown as U+FFFD rather than aborting after the work is done.
std::string JsonText(const nlohmann::ordered_json& j);

}  // namespace yc
