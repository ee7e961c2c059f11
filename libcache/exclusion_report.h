// What a cache left out of each split and why, from what the cache itself records (manifest.json's
// source fingerprints and counts, audit.json's problems), so a command reports the same whether it
// just built the cache or was given one:
//
//   Result<ExclusionReport> r = ReadExclusionReport(cache_dir, {"train", "val"});
//   for (const SplitExclusions& s : r->splits) {
//     for (const std::string& line : ExclusionLines(s)) std::cout << line << "\n";
//     SplitFinding f = JudgeSplit(s);  // kError: no labels at all, or every image excluded
//   }
//
// Ultralytics drops an image whose label is unusable (verify_image_label's "ignoring corrupt
// image/label", class >= nc included) and warns "No labels found in ..." when a split has none; so do
// we, but out loud: counts per problem code, the first few files, the share of the split, a warning
// above kExcludedWarnPercent, and an error where training or validating could only mislead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "libcache/format/manifest.h"
#include "libcache/source/problem.h"

namespace yc {

// A split losing more than this share of its images is warned about: a few corrupt downloads are
// normal, more usually means a wrong class count or a broken export.
inline constexpr double kExcludedWarnPercent = 2.0;
// Files named per problem code (audit.json lists every one).
inline constexpr size_t kExcludedExamples = 3;

// One reason images were excluded for: a problem code and the images it was the first error of.
struct ExclusionCause {
  std::string code;                   // a problem code name; "unrecorded" when audit.json has no error for it
  size_t images = 0;
  std::vector<std::string> examples;  // the first kExcludedExamples images, relative to the dataset root
  std::string first_file;             // where the first image's problem is (the image or its label file)
  std::string first_message;          // why, in words ("line 3: class 80 >= nc 80")
};

struct SplitExclusions {
  std::string split;
  size_t images = 0;       // source images listed: records + excluded
  size_t records = 0;      // images in the cache
  size_t backgrounds = 0;  // records without boxes
  size_t excluded = 0;     // images left out
  uint64_t boxes = 0;
  bool sources_known = false;  // the manifest fingerprints the split's sources (label_files, first_* meaningful)
  size_t label_files = 0;      // kept images that had a label file at build
  std::string first_image;     // the split's first source image and the label file it would have
  std::string first_label;
  std::vector<ExclusionCause> causes;  // most images first
  std::vector<Problem> split_errors;   // errors about no single image (a folder that could not be listed)
  std::map<std::string, size_t> warnings;  // warning problems by code (the images are kept)

  double excluded_percent() const { return images == 0 ? 0.0 : 100.0 * static_cast<double>(excluded) / images; }
};

struct ExclusionReport {
  std::string audit_file;              // audit.json's path, empty when the cache has none (reasons unrecorded)
  std::vector<SplitExclusions> splits;  // in the order asked; splits the cache lacks are left out
};

// `audit` is audit.json's parsed content, or nullptr when the cache has none. Malformed entries are
// skipped (the counts come from the manifest, which was checked); never throws.
ExclusionReport BuildExclusionReport(const Manifest& manifest, const nlohmann::json* audit,
                                     const std::vector<std::string>& splits);

// Reads <dir>/manifest.json and the audit.json it lists (size and checksum checked), then builds the
// report. Errors name the file.
Result<ExclusionReport> ReadExclusionReport(const std::filesystem::path& dir, const std::vector<std::string>& splits);

// "train: 320 images: 151 kept (3 backgrounds), 169 excluded (52.8%)", then one line per cause:
// "  label-class-out-of-range 169 (52.8%): images/a.jpg (labels/a.txt: line 1: class 5 >= nc 3),
// images/b.jpg, images/c.jpg and 166 more", then errors about no single image, then the warnings'
// counts. Names are printable (path_text.h).
std::vector<std::string> ExclusionLines(const SplitExclusions& split);

enum class SplitVerdict { kOk, kWarning, kError };
struct SplitFinding {
  SplitVerdict verdict = SplitVerdict::kOk;
  std::string reason;  // empty when kOk; a sentence naming the split, the counts and what to check
};
// kError when the split has no images, every image is excluded, or no kept image has a box (a missing
// labels/ folder: training would learn nothing, box loss 0); kWarning above kExcludedWarnPercent.
SplitFinding JudgeSplit(const SplitExclusions& split);

}  // namespace yc
