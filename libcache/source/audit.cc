#include "libcache/source/audit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <xxhash.h>

#include "libcache/base/file_read.h"
#include "libcache/source/labels.h"

namespace yc {
namespace fs = std::filesystem;
namespace {

constexpr size_t kKeepFileBuffer = size_t{64} << 20;  // release larger per-thread file buffers after use
constexpr uint64_t kMaxImageFile = (uint64_t{1} << 31) - 1;  // decoders take int/unsigned long sizes
constexpr uint64_t kMaxLabelFile = uint64_t{64} << 20;       // a label file is a few KB

struct ThreadBuffers {
  std::vector<uint8_t> file;
  std::string label;
  ParsedLabels parsed;
  DecodedImage decoded;
};

ThreadBuffers& Buffers() {
  thread_local ThreadBuffers b;
  return b;
}

enum class ReadResult { kOk, kMissing, kNotRegular, kTooLarge, kFailed };

// Reads a whole file into `out` (resized to the file's size). On failure `why` says what happened.
template <typename Buffer>
ReadResult ReadWhole(const fs::path& path, uint64_t limit, Buffer* out, std::string* why) {
  uint64_t size = 0;
  Result<ScopedFd> fd = OpenRegularFile(path, &size);  // never blocks on a FIFO or device
  if (!fd.ok()) {
    if (fd.status().code() == Status::Code::kNotFound) {
      *why = std::strerror(ENOENT);
      return ReadResult::kMissing;
    }
    const std::string& m = fd.status().message();  // "<path>: <reason>"; the caller names the file
    const std::string prefix = path.string() + ": ";
    *why = m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
    // DataError: a FIFO, device or directory where a file belongs (see OpenRegularFile).
    return fd.status().code() == Status::Code::kDataError ? ReadResult::kNotRegular : ReadResult::kFailed;
  }
  if (size > limit) {
    *why = "file is " + std::to_string(size) + " bytes";
    return ReadResult::kTooLarge;
  }
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd->get(), reinterpret_cast<char*>(out->data()) + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = n < 0 ? std::strerror(errno) : "file shrank while reading";
      return ReadResult::kFailed;
    }
    done += static_cast<size_t>(n);
  }
  return ReadResult::kOk;
}

void Add(ScannedImage* s, const ScanOptions& o, const std::string& file, ProblemCode code, Severity sev,
         std::string message) {
  s->problems.push_back({o.split, file, std::move(message), code, sev});
}

void CountProblems(const std::vector<Problem>& problems, AuditSummary* s) {
  for (const Problem& p : problems) {
    ++s->problem_counts[static_cast<size_t>(p.code)];
    ++(p.severity == Severity::kError ? s->errors : s->warnings);
  }
}

// A folder that could not be listed hides every image in it: an error, so verify fails rather than
// reporting a clean dataset with fewer images.
void AddUnreadableFolders(const fs::path& root, const std::vector<UnreadableFolder>& folders, SplitAudit* audit) {
  std::vector<Problem> found;
  for (const UnreadableFolder& f : folders) {
    found.push_back({audit->split, RelativePath(root, f.folder), "cannot list folder: " + f.reason,
                     ProblemCode::kUnreadable, Severity::kError});
  }
  CountProblems(found, &audit->summary);
  audit->problems.insert(audit->problems.end(), found.begin(), found.end());
}

}  // namespace

ScannedImage ScanImage(const SourceItem& item, const ScanOptions& options) {
  ScannedImage out;
  ThreadBuffers& buf = Buffers();
  const std::string& file = item.rel.empty() ? item.image.string() : item.rel;

  // --- image bytes ---
  std::string why;
  const ReadResult read = ReadWhole(item.image, kMaxImageFile, &buf.file, &why);
  if (read == ReadResult::kOk) {
    out.read_ok = true;
    out.file_size = buf.file.size();
    out.hash = XXH3_64bits(buf.file.data(), buf.file.size());
    if (buf.file.empty()) {
      Add(&out, options, file, ProblemCode::kEmptyFile, Severity::kError, "file is empty (0 bytes)");
    } else {
      out.format = SniffFormat(buf.file.data(), buf.file.size());
      if (ExtensionMismatch(out.format, item.image)) {
        Add(&out, options, file, ProblemCode::kExtensionMismatch, Severity::kWarning,
            std::string("content is ") + ImageFormatName(out.format) + ", extension is " +
                item.image.extension().string() + " (decoded as " + ImageFormatName(out.format) + ")");
      }
      DecodeOptions dopt;
      dopt.imgsz = options.imgsz;
      dopt.keep_pixels = options.keep_pixels;
      dopt.max_pixels = options.max_pixels;
      DecodedImage& dec = buf.decoded;
      DecodeImage(buf.file.data(), buf.file.size(), dopt, &dec);
      if (!dec.out_of_memory.empty()) {
        out.fatal = Status::ResourceExhausted("out of memory while decoding " + item.image.string() + " (" +
                                              dec.out_of_memory + ")");
        dec.rgb = cv::Mat();
        if (buf.file.capacity() > kKeepFileBuffer) std::vector<uint8_t>().swap(buf.file);
        return out;
      }
      out.orig_h = dec.orig_h;
      out.orig_w = dec.orig_w;
      out.orientation = dec.orientation;
      for (Issue& i : dec.issues) Add(&out, options, file, i.code, i.severity, std::move(i.message));
      if (!dec.has_error() && (dec.orig_w < 10 || dec.orig_h < 10)) {
        Add(&out, options, file, ProblemCode::kTooSmall, Severity::kError,
            "image is " + std::to_string(dec.orig_w) + "x" + std::to_string(dec.orig_h) +
                " (w x h), under 10 pixels on a side");
      }
      // The output Mat is handed over, not copied; the per-thread DecodedImage gets a fresh one.
      if (options.keep_pixels && !dec.has_error()) out.rgb = std::move(dec.rgb);
      dec.rgb = cv::Mat();
    }
  } else if (read == ReadResult::kNotRegular) {
    Add(&out, options, file, ProblemCode::kNotRegularFile, Severity::kError, "image is " + why);
  } else if (read == ReadResult::kTooLarge) {
    Add(&out, options, file, ProblemCode::kUnsupportedFormat, Severity::kError, why + ", too large for an image");
  } else {
    Add(&out, options, file, ProblemCode::kUnreadable, Severity::kError, "cannot read image: " + why);
  }
  if (buf.file.capacity() > kKeepFileBuffer) std::vector<uint8_t>().swap(buf.file);

  ScanLabel(item, options, &out);
  FinishScan(&out);
  return out;
}

void ScanLabel(const SourceItem& item, const ScanOptions& options, ScannedImage* out_ptr) {
  ScannedImage& out = *out_ptr;
  ThreadBuffers& buf = Buffers();
  std::string why;
  const std::string& label_file = item.label_rel.empty() ? item.label.string() : item.label_rel;
  const ReadResult lread = ReadWhole(item.label, kMaxLabelFile, &buf.label, &why);
  if (lread == ReadResult::kOk) {
    out.label_found = true;
    out.label_hash = XXH3_64bits(buf.label.data(), buf.label.size());  // the manifest's label fingerprint
    out.label_size = buf.label.size();
    ParseLabels(buf.label, options.nc, &buf.parsed);
    for (Issue& i : buf.parsed.issues) Add(&out, options, label_file, i.code, i.severity, std::move(i.message));
    out.boxes = buf.parsed.boxes;
  } else if (lread == ReadResult::kNotRegular) {
    Add(&out, options, label_file, ProblemCode::kNotRegularFile, Severity::kError, "label is " + why);
  } else if (lread == ReadResult::kTooLarge) {
    Add(&out, options, label_file, ProblemCode::kUnreadable, Severity::kError, why + ", too large for a label file");
  } else if (lread == ReadResult::kFailed) {
    Add(&out, options, label_file, ProblemCode::kUnreadable, Severity::kError, "cannot read label: " + why);
  }
  if (buf.label.capacity() > kKeepFileBuffer) std::string().swap(buf.label);
}

void FinishScan(ScannedImage* out_ptr) {
  ScannedImage& out = *out_ptr;
  for (const Problem& p : out.problems) {
    if (p.severity == Severity::kError) out.excluded = true;
  }
  if (out.excluded) {
    out.boxes.clear();
    out.rgb.release();
  }
  out.background = !out.excluded && out.boxes.empty();
}

void AuditSummary::Add(const AuditSummary& o) {
  images += o.images;
  ok += o.ok;
  backgrounds += o.backgrounds;
  excluded += o.excluded;
  boxes += o.boxes;
  errors += o.errors;
  warnings += o.warnings;
  if (class_counts.size() < o.class_counts.size()) class_counts.resize(o.class_counts.size());
  for (size_t i = 0; i < o.class_counts.size(); ++i) class_counts[i] += o.class_counts[i];
  for (size_t i = 0; i < problem_counts.size(); ++i) problem_counts[i] += o.problem_counts[i];
}

SplitAudit AuditSplit(const std::string& split, const std::vector<SourceItem>& items, const ScanOptions& options,
                      const AuditContext& context) {
  SplitAudit audit;
  audit.split = split;
  audit.images.resize(items.size());
  ScanOptions opt = options;
  opt.split = split;
  opt.keep_pixels = false;  // an audit holds every result at once: never pixels

  std::atomic<size_t> done{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> failed{false};  // some scan ran out of memory: stop, the audit reports that instead
  tbb::parallel_for(tbb::blocked_range<size_t>(0, items.size(), 4), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i != r.end(); ++i) {
      if ((context.cancel != nullptr && context.cancel->load(std::memory_order_relaxed)) ||
          failed.load(std::memory_order_relaxed)) {
        stopped.store(true, std::memory_order_relaxed);
        return;
      }
      audit.images[i] = ScanImage(items[i], opt);
      if (!audit.images[i].fatal.ok()) {
        failed.store(true, std::memory_order_relaxed);
        return;
      }
      const size_t n = done.fetch_add(1, std::memory_order_relaxed) + 1;
      if (context.progress) context.progress(n, items.size());
    }
  });
  audit.cancelled = stopped.load();
  if (failed.load()) {
    for (const ScannedImage& s : audit.images) {
      if (!s.fatal.ok()) {
        audit.fatal = s.fatal;
        return audit;
      }
    }
  }
  AuditContext ctx = context;
  ctx.nc = options.nc;
  FinishSplitAudit(items, ctx, &audit);
  return audit;
}

void FinishSplitAudit(const std::vector<SourceItem>& items, const AuditContext& context, SplitAudit* audit_ptr) {
  SplitAudit& audit = *audit_ptr;
  const std::string& split = audit.split;

  for (const ScannedImage& s : audit.images) {
    audit.problems.insert(audit.problems.end(), s.problems.begin(), s.problems.end());
  }

  // Byte-identical images: the first in sorted order is the original, later ones are warned about.
  std::unordered_map<uint64_t, size_t> first_by_hash;
  for (size_t i = 0; i < items.size(); ++i) {
    const ScannedImage& s = audit.images[i];
    if (!s.read_ok || s.file_size == 0) continue;
    const auto [it, inserted] = first_by_hash.emplace(s.hash, i);
    if (!inserted && audit.images[it->second].file_size == s.file_size) {
      audit.problems.push_back({split, items[i].rel, "same bytes as " + items[it->second].rel,
                                ProblemCode::kDuplicateImage, Severity::kWarning});
    }
  }

  if (!audit.cancelled) {
    static const std::vector<SourceItem> kNone;
    for (const fs::path& orphan : FindOrphanLabels(items, context.other_splits ? *context.other_splits : kNone)) {
      const std::string file = context.root.empty() ? orphan.string() : RelativePath(context.root, orphan);
      audit.problems.push_back({split, file, "label file without an image", ProblemCode::kLabelOrphan,
                                Severity::kWarning});
    }
  }

  AuditSummary& sum = audit.summary;
  for (size_t i = 0; i < items.size(); ++i) {
    const ScannedImage& s = audit.images[i];
    // Not reached before a cancel: a scanned image is either read or has an `unreadable` problem.
    if (!s.read_ok && s.problems.empty()) continue;
    ++sum.images;
    if (s.excluded) {
      ++sum.excluded;
    } else if (s.background) {
      ++sum.backgrounds;
    } else {
      ++sum.ok;
    }
    if (s.excluded) continue;  // its boxes are not in the cache (FinishScan clears them; the builder may not)
    sum.boxes += s.boxes.size();
    for (const Box& b : s.boxes) {
      const size_t c = static_cast<size_t>(b.cls);
      if (sum.class_counts.size() <= c) sum.class_counts.resize(c + 1);
      ++sum.class_counts[c];
    }
  }
  if (context.nc > 0 && sum.class_counts.size() < static_cast<size_t>(context.nc)) {
    sum.class_counts.resize(static_cast<size_t>(context.nc));
  }
  CountProblems(audit.problems, &sum);
}

Result<DatasetAudit> AuditDataset(const DatasetSpec& spec, const ScanOptions& options,
                                  const std::function<void(const std::string&, size_t, size_t)>& progress,
                                  const std::atomic<bool>* cancel) {
  std::vector<std::vector<SourceItem>> lists;
  std::vector<std::vector<UnreadableFolder>> unreadable(spec.splits.size());
  for (size_t si = 0; si < spec.splits.size(); ++si) {
    const SplitSpec& split = spec.splits[si];
    Result<std::vector<SourceItem>> items = ListSplitFiles(spec, split, &unreadable[si]);
    if (!items.ok()) return items.status().WithContext("split " + split.name);
    lists.push_back(std::move(items.value()));
  }
  ScanOptions opt = options;
  if (!spec.names.empty()) opt.nc = spec.nc();

  DatasetAudit out;
  for (size_t si = 0; si < spec.splits.size(); ++si) {
    const std::string& name = spec.splits[si].name;
    std::vector<SourceItem> others;
    for (size_t sj = 0; sj < lists.size(); ++sj) {
      if (sj != si) others.insert(others.end(), lists[sj].begin(), lists[sj].end());
    }
    AuditContext ctx;
    ctx.root = spec.root;
    ctx.other_splits = &others;
    ctx.cancel = cancel;
    if (progress) ctx.progress = [&](size_t done, size_t total) { progress(name, done, total); };
    SplitAudit audit = AuditSplit(name, lists[si], opt, ctx);
    AddUnreadableFolders(spec.root, unreadable[si], &audit);
    if (!audit.fatal.ok()) return audit.fatal;
    out.cancelled = out.cancelled || audit.cancelled;
    out.splits.push_back(std::move(audit));
    if (out.cancelled) break;
  }
  lists.resize(out.splits.size());
  std::vector<SplitAudit*> audits;
  for (SplitAudit& a : out.splits) audits.push_back(&a);
  AddCrossSplitDuplicates(lists, audits);
  for (const SplitAudit& a : out.splits) out.total.Add(a.summary);
  return out;
}

void AddCrossSplitDuplicates(const std::vector<std::vector<SourceItem>>& lists, const std::vector<SplitAudit*>& audits) {
  // Which earlier split holds each content hash.
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> seen;  // hash -> (split, item)
  for (size_t si = 0; si < audits.size(); ++si) {
    SplitAudit& audit = *audits[si];
    std::vector<Problem> cross;
    for (size_t i = 0; i < audit.images.size(); ++i) {
      const ScannedImage& s = audit.images[i];
      if (!s.read_ok || s.file_size == 0) continue;
      const auto it = seen.find(s.hash);
      if (it == seen.end()) {
        seen.emplace(s.hash, std::make_pair(si, i));
        continue;
      }
      const auto [sj, ij] = it->second;
      if (sj != si && audits[sj]->images[ij].file_size == s.file_size) {
        cross.push_back({audit.split, lists[si][i].rel,
                         "same bytes as " + lists[sj][ij].rel + " in split " + audits[sj]->split,
                         ProblemCode::kDuplicateImage, Severity::kWarning});
      }
    }
    CountProblems(cross, &audit.summary);
    audit.problems.insert(audit.problems.end(), cross.begin(), cross.end());
  }
}

void to_json(nlohmann::json& j, const AuditSummary& s) {
  nlohmann::json counts = nlohmann::json::object();
  for (int i = 0; i < kProblemCodeCount; ++i) {
    if (s.problem_counts[i] > 0) counts[ProblemCodeName(static_cast<ProblemCode>(i))] = s.problem_counts[i];
  }
  j = nlohmann::json{{"images", s.images},     {"ok", s.ok},
                     {"backgrounds", s.backgrounds}, {"excluded", s.excluded},
                     {"boxes", s.boxes},       {"errors", s.errors},
                     {"warnings", s.warnings}, {"class_counts", s.class_counts},
                     {"problem_counts", counts}};
}

void to_json(nlohmann::json& j, const SplitAudit& a) {
  j = nlohmann::json{{"split", a.split}, {"summary", a.summary}, {"problems", a.problems}};
}

}  // namespace yc
