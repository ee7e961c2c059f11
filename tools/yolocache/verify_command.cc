// `yolocache verify PATH`: on a source dataset (YAML or directory) the data audit; on a built cache
// every checksum and the manifest, and with --source the source files changed since the build; on a
// cache in object storage (s3://, http(s)://) the same check of every object, fetched afresh.
// Exit: 0 clean, 1 problems found (errors; warnings too with --strict), 2 usage, 3 I/O or fatal.
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>

#include "libcache/base/path_text.h"
#include "libcache/build/prepare_cache.h"
#include "libcache/build/pull_cache.h"
#include "libcache/build/source_diff.h"
#include "libcache/format/manifest.h"
#include "libcache/remote/object_location.h"
#include "libcache/remote/object_store.h"
#include "libcache/report_json.h"
#include "libcache/source/audit.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/verify/cache_verify.h"
#include "tools/common/command.h"
#include "tools/common/progress_bar.h"
#include "tools/yolocache/cli_util.h"

namespace yc::cli {
namespace {

struct VerifyArgs {
  std::string path, source;
  std::string cache_dir;  // --cache-dir: where the checked copy of a cache given as a URL goes
  bool json = false, strict = false, quiet = false;
  int max_problems = 50;
};

void PrintAuditTable(const DatasetAudit& audit, const std::vector<std::string>& names) {
  std::printf("%-8s %8s %8s %12s %9s %8s %7s %9s\n", "split", "images", "ok", "backgrounds", "excluded", "boxes",
              "errors", "warnings");
  auto row = [](const std::string& name, const AuditSummary& s) {
    std::printf("%-8s %8zu %8zu %12zu %9zu %8zu %7zu %9zu\n", name.c_str(), s.images, s.ok, s.backgrounds, s.excluded,
                s.boxes, s.errors, s.warnings);
  };
  for (const SplitAudit& s : audit.splits) row(s.split, s.summary);
  if (audit.splits.size() > 1) row("all", audit.total);
  std::printf("\nproblems by code:\n");
  bool any = false;
  for (int c = 0; c < kProblemCodeCount; ++c) {
    if (audit.total.problem_counts[c] == 0) continue;
    any = true;
    std::printf("  %-26s %zu\n", ProblemCodeName(static_cast<ProblemCode>(c)), audit.total.problem_counts[c]);
  }
  if (!any) std::printf("  none\n");
  std::printf("\nboxes per class:\n");
  const std::vector<size_t>& counts = audit.total.class_counts;
  for (size_t c = 0; c < counts.size(); ++c) {
    const std::string name = c < names.size() ? names[c] : "class_" + std::to_string(c);
    std::printf("  %3zu %-20s %zu\n", c, name.c_str(), counts[c]);
  }
}

int VerifySource(const VerifyArgs& a) {
  Result<DatasetSpec> spec = LoadDatasetSpec(a.path);
  if (!spec.ok()) return Fail("verify", spec.status());
  SplitProgress bar("audit");
  Result<DatasetAudit> audit = AuditDataset(*spec, ScanOptions{}, std::ref(bar), InstallInterruptFlag());
  bar.Finish();
  if (!audit.ok()) return Fail("verify", audit.status());
  if (audit->cancelled) return Fail("verify", Status::Cancelled("interrupted"));
  const AuditSummary& total = audit->total;
  const bool failed = total.errors > 0 || (a.strict && total.warnings > 0);
  if (a.json) {
    std::cout << JsonText(SourceAuditJson(*spec, *audit, a.strict)) << "\n";
    return failed ? kExitProblems : kExitOk;
  }
  std::cout << "dataset: " << PrintableText(spec->source.string()) << " (root " << PrintableText(spec->root.string()) << ", "
            << spec->names.size() << " classes)\n\n";
  PrintAuditTable(*audit, spec->names);
  int shown = 0;
  size_t all = 0;
  for (const SplitAudit& s : audit->splits) all += s.problems.size();
  if (all > 0 && !a.quiet) std::cout << "\nproblems:\n";
  for (const SplitAudit& s : audit->splits) {
    for (const Problem& p : s.problems) {
      if (a.quiet || shown >= a.max_problems) break;
      std::cout << "  " << SeverityName(p.severity) << " " << ProblemCodeName(p.code) << " [" << p.split << "] "
                << PrintableText(p.file) << ": " << PrintableText(p.message) << "\n";
      ++shown;
    }
  }
  if (!a.quiet && all > static_cast<size_t>(shown))
    std::cout << "  ... " << all - shown << " more (use --max-problems or --json)\n";
  std::cout << "\n" << (failed ? "FAILED" : "OK") << ": " << total.errors << " errors, " << total.warnings
            << " warnings; " << total.excluded << " images would be excluded from a cache\n";
  return failed ? kExitProblems : kExitOk;
}

// What verify finds in a cache folder: every problem (cache_verify.h) and, with --source, the source
// files changed since the build. A non-OK status: interrupted, or the source could not be compared.
struct CacheFindings {
  VerifyReport report;
  std::vector<SourceChange> changes;
};

Status CheckCacheFolder(const VerifyArgs& a, const std::filesystem::path& dir, CacheFindings* out) {
  VerifyOptions options;
  options.cancel = InstallInterruptFlag();
  out->report = VerifyCache(dir, options);
  if (out->report.cancelled) return Status::Cancelled("interrupted");
  if (a.source.empty()) return Status::OK();
  Result<Manifest> manifest = ReadManifest(dir);
  if (!manifest.ok()) return Status::OK();  // the report already says why the manifest cannot be used
  DiffOptions diff_options;  // full: every file of equal size is hashed
  diff_options.cancel = options.cancel;
  Result<std::vector<SourceChange>> diff = DiffSources(*manifest, a.source, diff_options);
  if (!diff.ok()) return diff.status();
  out->changes = std::move(diff.value());
  return Status::OK();
}

// The findings on stdout as text or JSON; `shown_as` names the cache (its folder, or its URL).
int PrintCacheFindings(const VerifyArgs& a, const std::string& shown_as, const CacheFindings& f) {
  const VerifyReport& report = f.report;
  const std::vector<SourceChange>& changes = f.changes;
  const bool failed = !report.ok() || (a.strict && !changes.empty());
  if (a.json) {
    std::cout << JsonText(CacheVerifyJson(shown_as, report, a.source.empty() ? nullptr : &changes, a.strict)) << "\n";
    return failed ? kExitProblems : kExitOk;
  }
  std::cout << "cache: " << PrintableText(shown_as) << ": " << report.files_checked << " files, " << report.records_checked
            << " records, " << HumanBytes(static_cast<double>(report.bytes_checked)) << " checked\n";
  int shown = 0;
  for (const VerifyProblem& p : report.problems) {
    if (shown++ >= a.max_problems) break;
    std::cout << "  error " << PrintableText(p.ToString()) << "\n";
  }
  if (report.problems.size() > static_cast<size_t>(a.max_problems))
    std::cout << "  ... " << report.problems.size() - a.max_problems << " more\n";
  if (!a.source.empty()) {
    std::map<std::string, int> counts;
    int labels = 0;
    for (const SourceChange& c : changes) {
      ++counts[SourceChangeKindName(c.kind)];
      labels += c.label ? 1 : 0;
      if (shown++ < a.max_problems)
        std::cout << "  " << SourceChangeKindName(c.kind) << " [" << c.split << "] " << PrintableText(c.path)
                  << (c.label ? " (label)" : "") << "\n";
    }
    std::cout << "source " << PrintableText(a.source) << " since the build: " << counts["added"] << " added, " << counts["removed"]
              << " removed, " << counts["changed"] << " changed (" << labels << " of them labels)\n";
  }
  std::cout << (failed ? "FAILED" : "OK") << ": " << report.problems.size() << " problems\n";
  return failed ? kExitProblems : kExitOk;
}

int VerifyCacheDir(const VerifyArgs& a) {
  CacheFindings findings;
  Status st = CheckCacheFolder(a, a.path, &findings);
  if (!st.ok()) return Fail("verify", st);
  return PrintCacheFindings(a, a.path, findings);
}

// A cache in object storage: every object fetched again (not the local copy of an earlier fetch) into a
// staging folder and checked there as a local cache is; only a copy without problems then replaces the
// local copy (pull_cache.h), so `verify URL` before training also fetches what training will reuse.
int VerifyCacheUrl(const VerifyArgs& a) {
  Result<ObjectLocation> at = ParseObjectLocation(a.path);
  if (!at.ok()) return Fail("verify", at.status());
  Result<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(*at);
  if (!store.ok()) return Fail("verify", store.status());
  PullOptions pull;
  pull.cache_root = a.cache_dir.empty() ? DefaultCacheRoot() : std::filesystem::path(a.cache_dir);
  pull.refetch = true;
  pull.cancel = InstallInterruptFlag();
  ProgressBar bar("fetch", 0, "MiB");
  pull.progress = [&bar](uint64_t done, uint64_t total) {  // serialised by PullCache
    bar.SetTotal(total >> 20);
    bar.Update(done >> 20);
  };
  CacheFindings findings;
  bool checked = false;
  pull.check = [&](const std::filesystem::path& staged) -> Status {
    bar.Finish();
    YC_RETURN_IF_ERROR(CheckCacheFolder(a, staged, &findings));
    checked = true;
    // Problems name the objects, not the staging folder that is removed after.
    for (VerifyProblem& p : findings.report.problems) {
      p.file = (*store)->location().Display(std::filesystem::path(p.file).filename().string());
    }
    if (findings.report.ok()) return Status::OK();
    return Status::Corruption(findings.report.problems.front().ToString());
  };
  Result<PullReport> pulled = PullCache(**store, pull);
  bar.Finish();
  // Fetching failed (the store said no, stopped answering, an object came back short), or the check was
  // interrupted: one line naming the object and the reason.
  if (!checked) return Fail("verify", pulled.status());
  if (!pulled.ok() && findings.report.ok()) return Fail("verify", pulled.status());  // swapping the copy in
  return PrintCacheFindings(a, at->Display(), findings);
}

Registration reg("verify",
                 "Audit a source dataset (YAML/dir), or check a built cache's checksums and manifest. "
                 "Exit 0 clean, 1 problems, 2 usage, 3 I/O",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<VerifyArgs>();
                   app.add_option("path", a->path,
                                  "Data YAML, dataset directory, cache directory, or a cache in object storage "
                                  "(s3://bucket/prefix, https://...: every object fetched and checked; docs/REMOTE.md)")
                       ->required();
                   app.add_option("--cache-dir", a->cache_dir,
                                  "With a URL: where the checked copy goes, for training to reuse (default: "
                                  "$YOLOCACHE_CACHE_DIR, else $XDG_CACHE_HOME/yolocache, else ~/.cache/yolocache)");
                   app.add_option("--source", a->source,
                                  "With a cache: list source images and label files added, removed or changed since the build");
                   app.add_flag("--strict", a->strict, "Warnings (and source changes) also fail (exit 1)");
                   app.add_flag("--json", a->json, "Print one JSON document on stdout");
                   app.add_flag("-q,--quiet", a->quiet, "Only the summary");
                   app.add_option("--max-problems", a->max_problems, "Problems listed in the text output")
                       ->capture_default_str();
                   // A folder with cache files but no valid manifest is a broken cache, not a dataset.
                   return [a] {
                     if (IsObjectUrl(a->path)) return VerifyCacheUrl(*a);
                     return LooksLikeCacheDir(a->path) ? VerifyCacheDir(*a) : VerifySource(*a);
                   };
                 });

}  // namespace
}  // namespace yc::cli
