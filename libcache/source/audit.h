// The per-image scan shared by `yolocache verify` (on a source dataset) and the builder, and the
// split-level audit on top of it. Sources are only read, never modified (Ultralytics rewrites JPEGs
// without EOI in place; we report them instead).
//
// ScanImage: read the file, hash it (XXH3-64), sniff the format (extension-mismatch warning), decode it
// fully (truncation only shows in a full decode; see decode.h), check the oriented size (too-small:
// < 10 px on a side), parse the label (labels.h; a missing or empty label file is a background image,
// counted, not a problem). Any error-severity problem excludes the image.
//
// AuditSplit: ScanImage over every item with TBB (pixels are never kept, so memory stays bounded),
// then split-level checks:
//   label-orphan     warning  a .txt in the split's label folders that no image maps to
//   duplicate-image  warning  same bytes (hash and size) as an earlier image of the split (or, in
//                             AuditDataset, of an earlier split: train/val leakage). Both are kept,
//                             as Ultralytics keeps them; the warning names the earlier file.
// Summary: images == ok + backgrounds + excluded (Ultralytics' found / missing+empty / corrupt); boxes
// and class_counts cover the kept images only.
// Running out of memory is not a property of an image: it stops the audit with ResourceExhausted
// ("out of memory while decoding <file> (...)") instead of marking the image corrupt.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <opencv2/core.hpp>

#include "base/status.h"
#include "libcache/base/box.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/source/decode.h"
#include "libcache/source/discover.h"
#include "libcache/source/image_format.h"
#include "libcache/source/problem.h"

namespace yc {

struct ScanOptions {
  int imgsz = 0;              // resize target (long side) when keep_pixels; 0 keeps the source size
  int nc = 0;                 // class count; <= 0 leaves the class upper bound unchecked
  bool keep_pixels = false;   // return the decoded, oriented, resized RGB image
  int64_t max_pixels = int64_t{1} << 28;  // decoder refuses larger images (unsupported-format)
  std::string split;          // copied into Problem::split
};

struct ScannedImage {
  std::vector<Box> boxes;     // kept boxes (empty when excluded or background)
  cv::Mat rgb;                // CV_8UC3 RGB when keep_pixels and not excluded
  int orig_h = 0, orig_w = 0;  // source size after EXIF orientation (0 if undecodable)
  int orientation = 1;
  ImageFormat format = ImageFormat::kUnknown;  // by content
  uint64_t hash = 0;          // XXH3-64 of the file bytes
  uint64_t file_size = 0;
  bool read_ok = false;       // the image bytes were read (hash and file_size are meaningful)
  bool label_found = false;   // a label file exists (and was read)
  uint64_t label_hash = 0;    // XXH3-64 of the label file's bytes (when label_found)
  uint64_t label_size = 0;
  bool background = false;    // usable image without boxes (no/empty label file, or all rows dropped)
  bool excluded = false;      // some problem has error severity
  std::vector<Problem> problems;
  // Not a finding about the file: the scan itself could not finish (ResourceExhausted: out of memory
  // while decoding). Never recorded as a problem; callers stop with it (exit 3).
  Status fatal;
};

// Thread-safe and reentrant (per-thread buffers, one TurboJPEG handle per thread).
// ScanImage = the image file's checks + ScanLabel + FinishScan.
ScannedImage ScanImage(const SourceItem& item, const ScanOptions& options);
// The label half of a scan (used alone by `build --update` for images whose bytes are unchanged):
// reads and parses item.label into out->boxes / out->problems / out->label_found.
void ScanLabel(const SourceItem& item, const ScanOptions& options, ScannedImage* out);
// Derives excluded / background from the problems and boxes gathered so far.
void FinishScan(ScannedImage* out);

struct AuditSummary {
  size_t images = 0, ok = 0, backgrounds = 0, excluded = 0, boxes = 0;
  size_t errors = 0, warnings = 0;                   // problems by severity
  std::vector<size_t> class_counts;                  // boxes per class id (kept images only)
  std::array<size_t, kProblemCodeCount> problem_counts{};  // by ProblemCode
  void Add(const AuditSummary& other);
};

struct SplitAudit {
  std::string split;
  std::vector<ScannedImage> images;  // one per item, same order; pixels dropped
  std::vector<Problem> problems;     // per-image problems in item order, then split-level ones
  AuditSummary summary;
  bool cancelled = false;            // stopped early through AuditContext::cancel
  Status fatal;                      // the first ScannedImage::fatal; the audit stopped there
};

struct AuditContext {
  std::filesystem::path root;                          // for relative orphan paths (else absolute)
  const std::vector<SourceItem>* other_splits = nullptr;  // owners of shared label folders
  std::function<void(size_t done, size_t total)> progress;  // called from worker threads
  const std::atomic<bool>* cancel = nullptr;           // set to stop early (Ctrl-C)
  int nc = 0;                                          // class histogram length (FinishSplitAudit)
};

SplitAudit AuditSplit(const std::string& split, const std::vector<SourceItem>& items, const ScanOptions& options,
                      const AuditContext& context = {});

// The split-level half of AuditSplit, for images scanned elsewhere (the builder's pipeline): expects
// audit->split and audit->images (one per item, all scanned) and adds the per-image problems,
// duplicate-image and label-orphan findings and the summary.
void FinishSplitAudit(const std::vector<SourceItem>& items, const AuditContext& context, SplitAudit* audit);

// duplicate-image warnings across splits (train/val leakage): an image with the same bytes as one of
// an earlier split. lists[i] are the items of audits[i].
void AddCrossSplitDuplicates(const std::vector<std::vector<SourceItem>>& lists, const std::vector<SplitAudit*>& audits);

struct DatasetAudit {
  std::vector<SplitAudit> splits;  // in spec order
  AuditSummary total;
  bool cancelled = false;
};

// Lists and audits every split of `spec` (nc from spec.names when it has any), with orphan checks
// across splits sharing label folders and duplicate-image checks across splits. A folder of a split
// that cannot be listed (permissions) is an `unreadable` error naming the folder; the rest is audited.
// A split's fatal status (out of memory) is returned as the error.
Result<DatasetAudit> AuditDataset(const DatasetSpec& spec, const ScanOptions& options,
                                  const std::function<void(const std::string& split, size_t done, size_t total)>&
                                      progress = {},
                                  const std::atomic<bool>* cancel = nullptr);

// {"images","ok","backgrounds","excluded","boxes","errors","warnings","class_counts":[...],
//  "problem_counts":{"code":n,...}} (only codes that occurred)
void to_json(nlohmann::json& j, const AuditSummary& s);
// {"split","summary":{...},"problems":[...]}
void to_json(nlohmann::json& j, const SplitAudit& a);

}  // namespace yc
