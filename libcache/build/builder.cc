#include "libcache/build/builder.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>
#include <xxhash.h>

#include "libcache/base/file_read.h"
#include "libcache/base/mapped_file.h"
#include "libcache/base/thread_limit.h"
#include "libcache/build/atomic_dir.h"
#include "libcache/cache.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/source/discover.h"

namespace yc {
namespace fs = std::filesystem;

namespace {

// One image travelling through the pipeline.
struct Work {
  size_t index = 0;
  ScannedImage scanned;
  std::string record;  // encoded record ("" when excluded)
  bool reused = false;
  bool old_record_corrupt = false;  // --update: the old record failed its checks; decoded again
  int64_t mtime_ns = 0;
  int64_t label_mtime_ns = 0;
};

// Work objects circulate between the pipeline's first and last stage, so each token's ~1 MB record
// buffer is allocated once, not once per image.
class WorkPool {
 public:
  Work* Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      all_.push_back(std::make_unique<Work>());
      return all_.back().get();
    }
    Work* w = free_.back();
    free_.pop_back();
    return w;
  }
  void Put(Work* w) {
    w->scanned = ScannedImage();
    w->record.clear();  // keeps its capacity
    w->reused = false;
    w->old_record_corrupt = false;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(w);
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Work>> all_;
  std::vector<Work*> free_;
};

int64_t MtimeNs(const fs::path& path) {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  return StatRegularFile(path, &size, &mtime_ns) ? mtime_ns : 0;
}

// Findings about an image file's bytes, which stay true while the bytes do. Label problems are found
// again by re-parsing, and duplicate-image depends on the other files.
bool IsCarriedOver(ProblemCode code) {
  switch (code) {
    case ProblemCode::kExtensionMismatch:
    case ProblemCode::kCorruptData:
      return true;
    default:
      return false;
  }
}

// What the previous build of the same target knew, for --update.
struct PreviousBuild {
  std::unique_ptr<Cache> cache;
  // split -> rel path -> fingerprint (only images that made it into the cache)
  std::unordered_map<std::string, std::unordered_map<std::string, SourceFingerprint>> sources;
  // rel path -> image-level problems (warnings) reported for it last time; labels are re-parsed.
  std::unordered_map<std::string, std::vector<Problem>> image_problems;
};

Result<PreviousBuild> OpenPrevious(const BuildOptions& o) {
  PreviousBuild prev;
  std::error_code ec;
  if (!fs::exists(o.out / kManifestFileName, ec)) return prev;  // first build: nothing to reuse
  // Every reused record is hashed on Read: a damaged one must not be re-encoded under a fresh, valid
  // checksum. One XXH3 pass over bytes about to be copied anyway; the source file is hashed too.
  OpenOptions open;
  open.verify_checksums = true;
  Result<std::unique_ptr<Cache>> cache = Cache::Open(o.out, open);
  if (!cache.ok()) return cache.status().WithContext("--update: the existing cache cannot be read (rebuild without --update)");
  const Manifest& m = cache.value()->manifest();
  if (m.imgsz != o.imgsz)
    return Status::InvalidArgument("--update: the existing cache was built with imgsz " + std::to_string(m.imgsz) +
                                   ", not " + std::to_string(o.imgsz) + "; rebuild without --update");
  for (const SplitManifest& s : m.splits) {
    auto& map = prev.sources[s.name];
    for (const SourceFingerprint& fp : s.sources) {
      if (fp.record >= 0) map.emplace(fp.path, fp);
    }
  }
  if (const std::optional<MetadataFileEntry>& listed = m.audit_report) {
    // Cache::Open checked it; these are the bytes used, so they are bounded and checked again.
    const fs::path audit_path = o.out / listed->file;
    std::string text;
    YC_RETURN_IF_ERROR(ReadRegularFile(audit_path, listed->bytes, &text));
    if (text.size() != listed->bytes || XXH3_64bits(text.data(), text.size()) != listed->checksum)
      return Status::Corruption(Status::At(audit_path.string(), "changed after the cache was opened; rebuild without --update"));
    const nlohmann::json audit = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (audit.is_object() && audit.contains("problems") && audit["problems"].is_array()) {
      for (const nlohmann::json& pj : audit["problems"]) {
        try {
          Problem p = pj.get<Problem>();
          if (IsCarriedOver(p.code)) prev.image_problems[p.split + "\n" + p.file].push_back(std::move(p));
        } catch (const std::exception&) {
          // An unreadable entry only loses a carried-over warning; the image is still verified by hash.
        }
      }
    }
  }
  prev.cache = std::move(cache.value());
  return prev;
}

// A record of `s`'s labels and original size with the given pixels (freshly decoded, or reused).
RecordInput ScannedRecord(const ScannedImage& s, const SourceItem& item, const uint8_t* pixels, int h, int w, int c) {
  RecordInput in;
  in.pixels = pixels;
  in.h = h;
  in.w = w;
  in.c = c;
  in.orig_h = s.orig_h;
  in.orig_w = s.orig_w;
  in.boxes = s.boxes.data();
  in.n = s.boxes.size();
  in.source = item.rel;
  return in;
}

enum class Reuse {
  kDone,         // the record was taken from the old cache
  kNotReusable,  // not in the old cache, or the source changed: decode it
  kOldCorrupt,   // the source is unchanged but its old record is damaged: decode it, and say so
};

// A JPEG record's pixels are not the source's, so --update never encodes them again (that would lose
// quality twice): it keeps the old stream when this build would write the same one, and otherwise
// decodes the source again. The encoder is deterministic, so the same quality gives the same stream:
// jpeg keeps any old JPEG (it shrank the image, or it would be raw); auto keeps one only from an auto
// build, whose PSNR test (AutoKeepsJpeg) had the source's pixels and chose JPEG.
bool StoresSameJpeg(const Codec& old_codec, const Codec& codec) {
  const auto lossy = [](const Codec& c) { return c.kind == Codec::Kind::kJpeg || c.kind == Codec::Kind::kAuto; };
  if (!lossy(old_codec) || !lossy(codec) || old_codec.quality != codec.quality) return false;
  return codec.kind == Codec::Kind::kJpeg || old_codec.kind == Codec::Kind::kAuto;
}

// The --update fast path: the image's bytes are those of the previous build, so its decoded pixels are
// taken from the old record (verified against its own checksum by the reader, see OpenPrevious) and
// only the label is parsed again.
Reuse TryReuse(const PreviousBuild& prev, const std::string& split, const SourceItem& item, const ScanOptions& opt,
               const Codec& codec, Work* w) {
  const auto sit = prev.sources.find(split);
  if (sit == prev.sources.end()) return Reuse::kNotReusable;
  const auto fit = sit->second.find(item.rel);
  if (fit == sit->second.end()) return Reuse::kNotReusable;
  const SourceFingerprint& fp = fit->second;
  uint64_t hash = 0, size = 0;
  if (!HashFile(item.image, &hash, &size).ok() || size != fp.size || hash != fp.hash) return Reuse::kNotReusable;
  const RecordSource* old = prev.cache->split(split);
  if (old == nullptr) return Reuse::kNotReusable;
  thread_local ScratchBuffer scratch;
  RecordView view;
  // A record that fails its checksum, or that is intact but belongs to another image (a manifest that
  // disagrees with its shards), is not this image's pixels.
  if (!old->Read(static_cast<size_t>(fp.record), &view, &scratch).ok() || view.source != item.rel)
    return Reuse::kOldCorrupt;
  const bool keep_jpeg = view.jpeg != nullptr;
  if (keep_jpeg && !StoresSameJpeg(prev.cache->manifest().codec, codec)) return Reuse::kNotReusable;

  ScannedImage& s = w->scanned;
  s.read_ok = true;
  s.hash = hash;
  s.file_size = size;
  s.orig_h = view.orig_height;
  s.orig_w = view.orig_width;
  const auto pit = prev.image_problems.find(split + "\n" + item.rel);
  if (pit != prev.image_problems.end()) s.problems = pit->second;
  ScanLabel(item, opt, &s);
  FinishScan(&s);
  if (!s.excluded) {
    RecordInput in = ScannedRecord(s, item, view.pixels, view.height, view.width, view.channels);
    if (keep_jpeg) {
      in.jpeg = view.jpeg;
      in.jpeg_bytes = view.jpeg_bytes;
    }
    if (!EncodeRecord(in, codec, &w->record).ok()) return Reuse::kNotReusable;
  }
  w->reused = true;
  return Reuse::kDone;
}

Status EncodeScanned(const Work& w, const SourceItem& item, const Codec& codec, std::string* out) {
  const ScannedImage& s = w.scanned;
  return EncodeRecord(ScannedRecord(s, item, s.rgb.data, s.rgb.rows, s.rgb.cols, s.rgb.channels()), codec, out);
}

struct SplitResult {
  SplitBuildStats stats;
  SplitManifest manifest;
};

void InitSplitResult(const std::string& name, size_t images, SplitResult* result) {
  result->stats.split = name;
  result->stats.audit.split = name;
  result->stats.audit.images.resize(images);
  result->manifest.name = name;
  result->manifest.sources.resize(images);
}

ScanOptions SplitScanOptions(const BuildOptions& o, const DatasetSpec& spec, const std::string& split) {
  ScanOptions opt;
  opt.imgsz = o.imgsz;
  opt.nc = spec.nc();
  opt.keep_pixels = true;
  opt.split = split;
  return opt;
}

// The pipeline's parallel stage: the image's encoded record, reused from the previous build (--update)
// or decoded afresh; a record that fails to encode excludes its image as corrupt-data.
void PrepareRecord(const BuildOptions& o, const PreviousBuild& prev, const std::string& split, const SourceItem& item,
                   const ScanOptions& opt, const Codec& codec, Work* w) {
  // Stat before reading: an edit during the build then shows as a newer mtime later.
  w->mtime_ns = MtimeNs(item.image);
  w->label_mtime_ns = MtimeNs(item.label);
  const Reuse reuse = o.update ? TryReuse(prev, split, item, opt, codec, w) : Reuse::kNotReusable;
  w->old_record_corrupt = reuse == Reuse::kOldCorrupt;
  if (reuse != Reuse::kDone) {
    w->scanned = ScanImage(item, opt);
    if (!w->scanned.excluded && w->scanned.fatal.ok()) {
      const Status st = EncodeScanned(*w, item, codec, &w->record);
      if (!st.ok()) {
        w->scanned.problems.push_back({split, item.rel, st.message(), ProblemCode::kCorruptData, Severity::kError});
        w->scanned.excluded = true;
      }
    }
  }
  w->scanned.rgb.release();  // pixels live on in the encoded record only
}

// What --update compares the source files against next time: the image's and label's bytes as read.
void SetFingerprint(const SourceItem& item, const Work& w, SourceFingerprint* fp) {
  const ScannedImage& s = w.scanned;
  fp->path = item.rel;
  fp->size = s.file_size;
  fp->hash = s.hash;
  fp->mtime_ns = w.mtime_ns;
  fp->has_label = s.label_found;
  fp->label_size = s.label_size;
  fp->label_hash = s.label_hash;
  fp->label_mtime_ns = s.label_found ? w.label_mtime_ns : 0;
}

// Appends the image's record to the split and counts it; *fp gets its index.
Status AddRecord(const Work& w, CacheWriter* writer, SourceFingerprint* fp, SplitResult* result) {
  SplitBuildStats& stats = result->stats;
  SplitManifest& sm = result->manifest;
  uint64_t index = 0;
  const Status written = writer->AddEncoded(w.record, &index);
  fp->record = static_cast<int64_t>(index);
  ++stats.records;
  stats.reused += w.reused ? 1 : 0;
  RecordHeader header;
  if (ParseRecordHeader(reinterpret_cast<const uint8_t*>(w.record.data()), w.record.size(), &header).ok()) {
    stats.pixel_bytes += header.raw_pixel_bytes;
    sm.pixel_bytes += header.raw_pixel_bytes;
    stats.jpeg_records += header.codec == Codec::Kind::kJpeg ? 1 : 0;
  }
  sm.boxes += w.scanned.boxes.size();
  sm.backgrounds += w.scanned.boxes.empty() ? 1 : 0;
  return written;
}

// The pipeline's serial last stage, in source order: the record written (unless the image is excluded
// or writing already failed), its fingerprint and audit entry kept. *write_status keeps the first failure.
void CollectRecord(const SourceItem& item, Work* w, CacheWriter* writer, Status* write_status, SplitResult* result) {
  ScannedImage& s = w->scanned;
  if (!s.fatal.ok() && write_status->ok()) *write_status = s.fatal;  // out of memory: stop the build
  SourceFingerprint& fp = result->manifest.sources[w->index];
  if (w->old_record_corrupt) result->stats.redecoded_corrupt.push_back(item.rel);
  SetFingerprint(item, *w, &fp);
  if (!s.excluded && write_status->ok()) {
    *write_status = AddRecord(*w, writer, &fp, result);
  } else {
    ++result->manifest.excluded;
  }
  result->stats.audit.images[w->index] = std::move(s);
}

// Closes the split's files and completes its audit (orphan labels, duplicates against the other splits).
Status FinishSplit(const DatasetSpec& spec, const std::vector<SourceItem>& items,
                   const std::vector<SourceItem>& other_items, CacheWriter* writer, SplitResult* result) {
  SplitManifest& sm = result->manifest;
  SplitFiles files;
  YC_RETURN_IF_ERROR(writer->EndSplit(&files));
  sm.records = files.records;
  sm.shards = std::move(files.shards);
  sm.lmdb = std::move(files.lmdb);

  AuditContext ctx;
  ctx.root = spec.root;
  ctx.other_splits = &other_items;
  ctx.nc = spec.nc();
  FinishSplitAudit(items, ctx, &result->stats.audit);
  return Status::OK();
}

bool Cancelled(const BuildOptions& o) { return o.cancel != nullptr && o.cancel->load(); }

Status BuildSplit(const BuildOptions& o, const DatasetSpec& spec, const SplitSpec& split,
                  const std::vector<SourceItem>& items, const std::vector<SourceItem>& other_items,
                  const PreviousBuild& prev, CacheWriter* writer, SplitResult* result) {
  InitSplitResult(split.name, items.size(), result);
  const ScanOptions opt = SplitScanOptions(o, spec, split.name);
  YC_RETURN_IF_ERROR(writer->BeginSplit(split.name));
  Status write_status;
  size_t next = 0, done = 0;
  const int threads = o.threads > 0 ? o.threads : tbb::info::default_concurrency();
  const size_t tokens = static_cast<size_t>(2 * threads + 2);
  const Codec codec = writer->options().codec;
  WorkPool pool;

  tbb::parallel_pipeline(
      tokens,
      tbb::make_filter<void, Work*>(tbb::filter_mode::serial_in_order,
                                    [&](tbb::flow_control& fc) -> Work* {
                                      if (next >= items.size() || Cancelled(o) || !write_status.ok()) {
                                        fc.stop();
                                        return nullptr;
                                      }
                                      Work* w = pool.Get();
                                      w->index = next++;
                                      return w;
                                    }) &
          tbb::make_filter<Work*, Work*>(tbb::filter_mode::parallel,
                                         [&](Work* w) -> Work* {
                                           PrepareRecord(o, prev, split.name, items[w->index], opt, codec, w);
                                           return w;
                                         }) &
          tbb::make_filter<Work*, void>(tbb::filter_mode::serial_in_order, [&](Work* w) {
            CollectRecord(items[w->index], w, writer, &write_status, result);
            pool.Put(w);
            ++done;
            if (o.progress) o.progress(split.name, done, items.size());
          }));

  if (Cancelled(o)) return Status::Cancelled("build interrupted; nothing was written at " + o.out.string());
  YC_RETURN_IF_ERROR(write_status);
  return FinishSplit(spec, items, other_items, writer, result);
}

// A path the build reads, which the cache must stay clear of.
struct SourcePath {
  fs::path path;
  std::string what;  // "the dataset root", "split 'train' image folder", ...
};

// The label folder Ultralytics pairs with an image folder: the last "/images/" of "<dir>/" replaced by
// "/labels/" (LabelPathFor's rule, for a folder). Empty when the labels lie beside the images.
fs::path LabelFolderFor(const fs::path& image_dir) {
  std::string s = image_dir.string() + "/";
  const size_t at = s.rfind("/images/");
  if (at == std::string::npos) return {};
  s.replace(at, 8, "/labels/");
  return fs::path(s).parent_path();
}

std::vector<SourcePath> DatasetSourcePaths(const DatasetSpec& spec) {
  std::error_code ec;
  std::vector<SourcePath> paths;  // split paths first: on a tie the message names the most specific
  for (const SplitSpec& split : spec.splits) {
    const std::string name = "split '" + split.name + "' ";
    for (const fs::path& input : split.inputs) {
      if (fs::is_directory(input, ec)) {
        paths.push_back({input, name + "image folder"});
        const fs::path labels = LabelFolderFor(input);
        if (!labels.empty()) paths.push_back({labels, name + "label folder"});
      } else if (IsImageFile(input)) {
        paths.push_back({input, name + "image"});
        paths.push_back({LabelPathFor(input), name + "label file"});
      } else {
        paths.push_back({input, name + "image list"});
      }
    }
  }
  if (spec.source != spec.root) paths.push_back({spec.source, "the data YAML"});
  paths.push_back({spec.root, "the dataset root"});
  return paths;
}

// The real location of `p` as far as it exists (symlinks and ".." resolved), then lexically.
fs::path Resolved(const fs::path& p) {
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec);
  fs::path real = fs::weakly_canonical(abs, ec);
  if (ec) real = abs.lexically_normal();
  if (real.filename().empty() && real.has_parent_path() && real != real.root_path()) real = real.parent_path();
  return real;
}

// Whether `inner` is `outer` or lies below it, by whole path components.
bool IsSameOrInside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// *written receives the file's size and checksum for the manifest, which protects audit.json.
Status WriteAuditReport(const fs::path& path, const BuildReport& report, MetadataFileEntry* written) {
  nlohmann::ordered_json j;
  j["splits"] = nlohmann::ordered_json::object();
  nlohmann::json problems = nlohmann::json::array();
  for (const SplitBuildStats& s : report.splits) {
    j["splits"][s.split] = nlohmann::json(s.audit.summary);
    for (const Problem& p : s.audit.problems) problems.push_back(p);
  }
  j["problems"] = std::move(problems);
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::ofstream out(path, std::ios::binary);
  // Problems are valid UTF-8 already (problem.h); the handler only guards what might slip through.
  out << text;
  out.close();
  if (!out) return Status::IOError(Status::At(path.string(), "cannot write audit report"));
  *written = MetadataFileEntry{path.filename().string(), text.size(), XXH3_64bits(text.data(), text.size())};
  return Status::OK();
}

Status CheckBuildOptions(const BuildOptions& o) {
  if (o.imgsz < 0 || o.imgsz > kMaxImgsz)
    return Status::InvalidArgument("--imgsz must be 0.." + std::to_string(kMaxImgsz));
  if (const std::string bad = ThreadCountError("--threads", o.threads); !bad.empty()) return Status::InvalidArgument(bad);
  Codec parsed;  // the ranges of `--compress` (zstd level, JPEG quality), whoever filled in the options
  if (Status st = ParseCodecSpec(CodecSpec(o.codec), &parsed); !st.ok()) return st.WithContext("--compress");
  return Status::OK();
}

// The splits to build, in the dataset's order: those named by --split (every one when none is named).
Result<std::vector<const SplitSpec*>> ChosenSplits(const DatasetSpec& spec, const std::vector<std::string>& names) {
  std::vector<const SplitSpec*> chosen;
  for (const SplitSpec& s : spec.splits) {
    if (names.empty() || std::find(names.begin(), names.end(), s.name) != names.end()) chosen.push_back(&s);
  }
  for (const std::string& want : names) {
    if (spec.split(want) == nullptr)
      return Status::InvalidArgument(Status::At(spec.source.string(), "no split named '" + want + "'"));
  }
  return chosen;
}

Result<std::vector<std::vector<SourceItem>>> ListSplits(const DatasetSpec& spec,
                                                        const std::vector<const SplitSpec*>& chosen) {
  std::vector<std::vector<SourceItem>> lists;
  for (const SplitSpec* s : chosen) {
    Result<std::vector<SourceItem>> items = ListSplitFiles(spec, *s);
    if (!items.ok()) return items.status().WithContext("split " + s->name);
    lists.push_back(std::move(items.value()));
  }
  return lists;
}

WriterOptions WriterOptionsFor(const BuildOptions& o) {
  WriterOptions wo;
  wo.backend = o.backend;
  wo.codec = o.codec;
  wo.shard_size = o.shard_size;
  return wo;
}

// The manifest's build-wide fields; the splits, audit and class names are added as the build goes.
Manifest NewManifest(const BuildOptions& o, const DatasetSpec& spec) {
  Manifest manifest;
  manifest.tool_version = "0.1.0";
  manifest.created = ManifestTimestampNow();
  manifest.dataset_yaml = spec.source.string();
  manifest.dataset_root = spec.root.string();
  {
    std::error_code cwd_ec;
    manifest.working_dir = fs::current_path(cwd_ec).string();  // a relative `path:` resolved against it
  }
  manifest.names = spec.names;
  manifest.imgsz = o.imgsz;
  manifest.backend = o.backend;
  manifest.codec = o.codec;
  manifest.shard_size = o.backend == Backend::kShards ? o.shard_size : 0;
  manifest.build_options = {{"imgsz", o.imgsz},
                            {"backend", BackendName(o.backend)},
                            {"compress", CodecSpec(o.codec)},
                            {"shard_size", o.shard_size},
                            {"update", o.update}};
  return manifest;
}

// Every chosen split through the pipeline, then the duplicate images found across splits.
Status BuildSplits(const BuildOptions& o, const DatasetSpec& spec, const std::vector<const SplitSpec*>& chosen,
                   const std::vector<std::vector<SourceItem>>& lists, const PreviousBuild& prev, CacheWriter* writer,
                   BuildReport* report, Manifest* manifest) {
  for (size_t i = 0; i < chosen.size(); ++i) {
    std::vector<SourceItem> others;
    for (size_t j = 0; j < lists.size(); ++j) {
      if (j != i) others.insert(others.end(), lists[j].begin(), lists[j].end());
    }
    SplitResult result;
    YC_RETURN_IF_ERROR(BuildSplit(o, spec, *chosen[i], lists[i], others, prev, writer, &result));
    report->splits.push_back(std::move(result.stats));
    manifest->splits.push_back(std::move(result.manifest));
  }
  std::vector<SplitAudit*> audits;
  for (SplitBuildStats& s : report->splits) audits.push_back(&s.audit);
  AddCrossSplitDuplicates(lists, audits);
  return Status::OK();
}

// The report's totals and the manifest's audit summary, from the splits built.
void Summarise(const DatasetSpec& spec, BuildReport* report, Manifest* manifest) {
  nlohmann::ordered_json audit_json = nlohmann::ordered_json::object();
  for (const SplitBuildStats& s : report->splits) {
    audit_json[s.split] = nlohmann::json(s.audit.summary);
    report->total.Add(s.audit.summary);
    report->records += s.records;
    report->reused += s.reused;
    report->redecoded_corrupt += s.redecoded_corrupt.size();
    report->pixel_bytes += s.pixel_bytes;
  }
  manifest->audit = {{"splits", audit_json}, {"report", kAuditFileName}};
  // A folder without a data YAML names no classes: call them class_0..class_N as Ultralytics does for a
  // YAML with only `nc`, N the largest id in the labels, so the cache trains as it is.
  if (manifest->names.empty()) {
    for (size_t c = 0; c < report->total.class_counts.size(); ++c) manifest->names.push_back("class_" + std::to_string(c));
  }
  report->names = manifest->names;
  report->root = spec.root;
  report->root_from = spec.root_from;
}

// The staged cache's last files: the writer's own, audit.json, then the manifest that lists them.
Status FinishStagedCache(const fs::path& dir, const BuildReport& report, CacheWriter* writer, Manifest* manifest) {
  YC_RETURN_IF_ERROR(writer->Finish());
  manifest->audit_report.emplace();
  YC_RETURN_IF_ERROR(WriteAuditReport(dir / kAuditFileName, report, &*manifest->audit_report));
  return WriteManifest(dir, *manifest);
}

void MeasureOutput(const fs::path& out, BuildReport* report) {
  std::error_code ec;
  report->cache_dir = fs::absolute(out, ec);
  report->audit_report = report->cache_dir / kAuditFileName;
  for (const fs::directory_entry& e : fs::directory_iterator(report->cache_dir, ec)) {
    if (e.is_regular_file(ec)) report->bytes_on_disk += e.file_size(ec);
  }
}

}  // namespace

Status CheckOutputOutsideDataset(const DatasetSpec& spec, const fs::path& out) {
  const fs::path target = Resolved(out);
  // The closest overlap is named: being a source path, then lying inside the deepest one, then
  // containing one.
  enum Relation { kIs, kInside, kContains, kNone };
  Relation best = kNone;
  SourcePath named;
  for (const SourcePath& source : DatasetSourcePaths(spec)) {
    const fs::path path = Resolved(source.path);
    const bool inside = IsSameOrInside(target, path), contains = IsSameOrInside(path, target);
    const Relation r = inside && contains ? kIs : inside ? kInside : contains ? kContains : kNone;
    const bool deeper = r == kInside && best == kInside &&
                        std::distance(path.begin(), path.end()) > std::distance(named.path.begin(), named.path.end());
    if (r < best || deeper) {
      best = r;
      named = {path, source.what};
    }
  }
  if (best == kNone) return Status::OK();
  const char* relation = best == kIs ? "is " : best == kInside ? "is inside " : "contains ";
  return Status::InvalidArgument(Status::At(out.string(), relation + named.what + " " + named.path.string() +
                                                              "; a cache is never written into or over its source "
                                                              "dataset (choose an --out outside it)"));
}

double BuildReport::images_per_second() const {
  size_t images = total.images;
  return seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
}

Result<BuildReport> BuildCache(const BuildOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  YC_RETURN_IF_ERROR(CheckBuildOptions(o));
  YC_ASSIGN_OR_RETURN(const DatasetSpec spec, LoadDatasetSpec(o.source));
  // Before any work (and before --update opens what is there): where the cache goes must be safe to
  // replace. StagingDir checks the target again when it starts and when it swaps.
  YC_RETURN_IF_ERROR(CheckOutputOutsideDataset(spec, o.out));
  YC_RETURN_IF_ERROR(CheckReplaceableCacheDir(o.out));
  YC_ASSIGN_OR_RETURN(const std::vector<const SplitSpec*> chosen, ChosenSplits(spec, o.splits));
  YC_ASSIGN_OR_RETURN(const std::vector<std::vector<SourceItem>> lists, ListSplits(spec, chosen));
  PreviousBuild prev;
  if (o.update) {
    YC_ASSIGN_OR_RETURN(prev, OpenPrevious(o));
  }
  YC_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::Create(o.out));
  YC_ASSIGN_OR_RETURN(std::unique_ptr<CacheWriter> writer, CacheWriter::Create(staging.path(), WriterOptionsFor(o)));
  std::unique_ptr<tbb::global_control> limit;
  if (o.threads > 0) limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, o.threads);

  BuildReport report;
  Manifest manifest = NewManifest(o, spec);
  YC_RETURN_IF_ERROR(BuildSplits(o, spec, chosen, lists, prev, writer.get(), &report, &manifest));
  Summarise(spec, &report, &manifest);
  YC_RETURN_IF_ERROR(FinishStagedCache(staging.path(), report, writer.get(), &manifest));
  prev.cache.reset();  // the old cache's files are about to be swapped out
  if (Cancelled(o)) return Status::Cancelled("build interrupted; nothing was written at " + o.out.string());
  YC_RETURN_IF_ERROR(staging.Commit());
  MeasureOutput(o.out, &report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace yc
