// The image files of a split and where their labels are, with Ultralytics' rules:
//   * a directory is searched recursively (hidden files and folders skipped, as Python's glob does;
//     symlinked folders followed once). A folder that cannot be listed (permissions) is never skipped
//     in silence: it is an error, or reported through `unreadable` when the caller asks for that;
//   * a *.txt list gives one image path per line ("./x" relative to the list's folder, other relative
//     lines relative to the dataset root); listed files that do not exist are kept, so the scan
//     reports them as unreadable rather than silently training on less;
//   * only extensions in IMG_FORMATS count (bmp dng jpeg jpg mpo png tif tiff webp pfm heic, any case);
//   * label = image path with the LAST "/images/" replaced by "/labels/" and the extension by ".txt"
//     (beside the image when the path has no "/images/").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/source/dataset_spec.h"

namespace yc {

struct SourceItem {
  std::filesystem::path image;  // absolute, normalised (symlinks not resolved)
  std::filesystem::path label;  // absolute; may not exist (background image)
  std::string rel;              // image path relative to the dataset root, '/'-separated
  std::string label_rel;        // label path relative to the dataset root, '/'-separated
};

// Extension in Ultralytics' IMG_FORMATS (case-insensitive).
bool IsImageFile(const std::filesystem::path& path);

// img2label_paths for one image.
std::filesystem::path LabelPathFor(const std::filesystem::path& image);

// `path` relative to `root` with '/' separators; the absolute path when it lies outside root.
std::string RelativePath(const std::filesystem::path& root, const std::filesystem::path& path);

// A folder of a split that could not be listed, and why ("Permission denied").
struct UnreadableFolder {
  std::filesystem::path folder;
  std::string reason;
};

// Sorted (by image path) and de-duplicated. A folder that cannot be listed (or a list file that
// cannot be read) is an IOError naming it, unless `unreadable` is given: then it is appended there and
// the listing goes on with the rest (the audit reports it as an `unreadable` problem). List files
// that are not regular files (a FIFO) are refused without blocking.
Result<std::vector<SourceItem>> ListSplitFiles(const DatasetSpec& spec, const SplitSpec& split,
                                               std::vector<UnreadableFolder>* unreadable = nullptr);

// *.txt files in the label folders of `items` that no image maps to, sorted. Images in `also_known`
// (e.g. the other splits, when splits share a label folder) count as owners too. "classes.txt"
// (written beside labels by LabelImg and similar tools) is not a label and never reported.
std::vector<std::filesystem::path> FindOrphanLabels(const std::vector<SourceItem>& items,
                                                    const std::vector<SourceItem>& also_known = {});

}  // namespace yc
