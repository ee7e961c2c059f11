#include "libcache/verify/cache_verify.h"

#include <sys/stat.h>

#include "libcache/base/coding.h"
#include "libcache/base/file_read.h"
#include "libcache/base/mapped_file.h"
#include "libcache/cache.h"
#include "libcache/format/manifest.h"
#include "libcache/verify/lmdb_verify.h"
#include "libcache/verify/shard_verify.h"

namespace yc {
namespace {

namespace fs = std::filesystem;

VerifyProblem FileProblem(const std::string& split, const fs::path& file, const std::string& message) {
  VerifyProblem p;
  p.split = split;
  p.file = file.string();
  // Statuses already say "path: reason"; the report prints the file itself.
  const std::string prefix = p.file + ": ";
  p.message = message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
  return p;
}

// False (and a problem) when the file is missing; a size mismatch is reported but checking goes on,
// since the content checks will say where the file differs.
bool CheckPresence(const std::string& split, const fs::path& path, uint64_t expected_bytes, VerifyReport* report) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    report->problems.push_back(FileProblem(split, path, "missing (listed in manifest.json)"));
    return false;
  }
  if (!S_ISREG(st.st_mode)) {  // never read: a FIFO blocks, a device never ends
    report->problems.push_back(FileProblem(split, path, std::string("not a regular file (") + FileKindName(st.st_mode) + ")"));
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) != expected_bytes)
    report->problems.push_back(FileProblem(split, path, "size " + std::to_string(st.st_size) +
                                                            " bytes, manifest.json says " + std::to_string(expected_bytes)));
  report->bytes_checked += static_cast<uint64_t>(st.st_size);
  ++report->files_checked;
  return true;
}

// The manifest's box and background counts against what the records hold; only meaningful when
// every record of the split was read (a checksum cannot vouch for counts someone recomputed it over).
void CheckSplitCounts(const fs::path& dir, const SplitManifest& split, uint64_t boxes, uint64_t backgrounds,
                      VerifyReport* report) {
  const fs::path manifest = dir / kManifestFileName;
  if (boxes != split.boxes)
    report->problems.push_back(FileProblem(split.name, manifest, "splits." + split.name + ".boxes: says " +
                                                                     std::to_string(split.boxes) + ", the records hold " +
                                                                     std::to_string(boxes)));
  if (backgrounds != split.backgrounds)
    report->problems.push_back(FileProblem(split.name, manifest, "splits." + split.name + ".backgrounds: says " +
                                                                     std::to_string(split.backgrounds) +
                                                                     ", the records hold " + std::to_string(backgrounds)));
}

bool Cancelled(const VerifyOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

void VerifyShardSplit(const fs::path& dir, const SplitManifest& split, const RecordLimits& limits,
                      const VerifyOptions& options, VerifyReport* report) {
  uint64_t first = 0;  // split index of the current shard's first record, per the manifest
  uint64_t boxes = 0, backgrounds = 0;
  bool complete = true;  // every record decoded, so the counts above are the split's
  for (const ShardEntry& e : split.shards) {
    if (Cancelled(options)) {  // between shards: one shard (<= --shard-size) takes about a second
      report->cancelled = true;
      return;
    }
    const fs::path path = dir / e.file;
    if (!CheckPresence(split.name, path, e.bytes, report)) {
      complete = false;
    } else {
      const ShardVerifyResult r = VerifyShard(path, limits);
      complete = complete && r.ok() && r.records == e.records;
      boxes += r.boxes;
      backgrounds += r.backgrounds;
      for (const ShardProblem& sp : r.problems) {
        VerifyProblem p = FileProblem(split.name, path, "");
        if (sp.where == ShardProblem::Where::kRecord) {
          p.file_record = sp.record;
          p.record = static_cast<int64_t>(first) + sp.record;
          p.source = sp.source;
          p.message = sp.message;
        } else {
          p.message = std::string(ShardProblemWhereName(sp.where)) + ": " + sp.message;
        }
        report->problems.push_back(std::move(p));
      }
      report->records_checked += r.records;
      if (r.records != e.records && r.stored_checksum != 0)
        report->problems.push_back(FileProblem(split.name, path, "holds " + std::to_string(r.records) +
                                                                     " records, manifest.json says " + std::to_string(e.records)));
      if (r.ok() && r.computed_checksum != e.checksum)
        report->problems.push_back(FileProblem(split.name, path, "intact, but its checksum " + ChecksumToHex(r.computed_checksum) +
                                                                     " differs from manifest.json's " + ChecksumToHex(e.checksum) +
                                                                     " (stale or replaced file)"));
    }
    first += e.records;
  }
  if (complete) CheckSplitCounts(dir, split, boxes, backgrounds, report);
}

void VerifyLmdbSplit(const fs::path& dir, const SplitManifest& split, const RecordLimits& limits,
                     const VerifyOptions& options, VerifyReport* report) {
  const LmdbEntry& e = *split.lmdb;
  const fs::path path = dir / e.file;
  if (!CheckPresence(split.name, path, e.bytes, report)) return;
  uint64_t hash = 0;
  Status s = HashFile(path, &hash, nullptr);
  if (!s.ok()) {
    report->problems.push_back(FileProblem(split.name, path, s.message()));
    return;
  }
  if (hash != e.checksum)
    report->problems.push_back(FileProblem(split.name, path, "file checksum " + ChecksumToHex(hash) +
                                                                 " differs from manifest.json's " + ChecksumToHex(e.checksum)));
  const LmdbVerifyResult r = VerifyLmdbRecords(path, options.isolate_lmdb, limits);
  report->records_checked += r.records;
  for (const LmdbProblem& lp : r.problems) {
    VerifyProblem p = FileProblem(split.name, path, lp.message);
    // Reader errors name the record themselves ("<file>: record 3: ..."): keep the reason only.
    const std::string rec_prefix = "record " + std::to_string(lp.record) + ": ";
    if (lp.record >= 0 && p.message.compare(0, rec_prefix.size(), rec_prefix) == 0) p.message = p.message.substr(rec_prefix.size());
    p.record = lp.record;
    p.file_record = lp.record;
    p.source = lp.source;
    report->problems.push_back(std::move(p));
  }
  // A count mismatch only means something when the walk itself succeeded.
  if (r.walked && r.records != e.records)
    report->problems.push_back(FileProblem(split.name, path, "holds " + std::to_string(r.records) +
                                                                 " records, manifest.json says " + std::to_string(e.records)));
  if (r.walked && r.ok() && r.records == e.records) CheckSplitCounts(dir, split, r.boxes, r.backgrounds, report);
}

}  // namespace

std::string VerifyProblem::ToString() const {
  std::string s = file;
  if (record >= 0) {
    s += ": record " + std::to_string(record);
    if (file_record >= 0 && file_record != record) s += " (#" + std::to_string(file_record) + " in file)";
    if (!source.empty()) s += " [" + source + "]";
  }
  return s + ": " + message;
}

bool LooksLikeCacheDir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  // symlink_status: a manifest.json that is a dangling link, a FIFO or a folder still marks a cache.
  if (fs::exists(fs::symlink_status(dir / kManifestFileName, ec))) return true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path name = it->path().filename();
    const std::string ext = name.extension().string();
    if (ext == ".shard" || ext == ".lmdb" || name == "audit.json" || name == "manifest.json.tmp") return true;
  }
  return false;
}

VerifyReport VerifyCache(const fs::path& dir, const VerifyOptions& options) {
  VerifyReport report;
  auto manifest = ReadManifest(dir);
  if (!manifest.ok()) {
    std::string message = manifest.status().message();
    if (manifest.status().code() == Status::Code::kNotFound)
      message = "missing: without it nothing in this cache can be checked or trusted (rebuild with `yolocache build`)";
    report.problems.push_back(FileProblem("", dir / kManifestFileName, message));
    return report;
  }
  ++report.files_checked;
  if (const auto& audit = manifest.value().audit_report) {
    const Status s = CheckMetadataFile(dir, *audit);
    if (!s.ok()) report.problems.push_back(FileProblem("", dir / audit->file, s.message()));
    else ++report.files_checked;
  }
  const RecordLimits limits = ManifestRecordLimits(manifest.value());
  for (const SplitManifest& split : manifest.value().splits) {
    if (report.cancelled || Cancelled(options)) {
      report.cancelled = true;
      break;
    }
    if (manifest.value().backend == Backend::kLmdb) VerifyLmdbSplit(dir, split, limits, options, &report);
    else VerifyShardSplit(dir, split, limits, options, &report);
  }
  return report;
}

}  // namespace yc
