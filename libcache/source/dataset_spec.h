// Which files make up a dataset: an Ultralytics data YAML, or a bare directory.
//
// YAML (Ultralytics `check_det_dataset` rules, ultralytics/data/utils.py):
//   path:  dataset root. Absent or empty -> the YAML's directory; absolute -> itself; relative -> as
//          Ultralytics resolves it: against the working directory, then against Ultralytics'
//          datasets_dir (its settings.json, `$YOLO_CONFIG_DIR` or ~/.config/Ultralytics; else
//          <working dir>/datasets), then, as our fallback, against the YAML's directory. The first
//          candidate under which the train and val entries exist wins (so `path: .` beside its splits
//          keeps working from any folder); when none has them, the first that exists (Ultralytics'
//          choice), whose missing entry is then the error. DatasetSpec::root_from says which was used.
//   train: / val: (required; 'validation' is read as val) / test: / minival: (optional)
//          each a directory (searched recursively), a *.txt list of image paths (lines starting with
//          "./" are relative to the list's folder, other relative lines to the root), a single image,
//          or a YAML list mixing those. Relative entries resolve against the root; a missing
//          "../x" falls back to root/x as Ultralytics does. Every entry must exist.
//   names: a list, or a map {index: name} with indices 0..n-1; nc optional but must equal len(names);
//          with only nc, names are class_0..class_{nc-1}.
// A directory holding a data YAML is read as that YAML, found as Ultralytics' find_dataset_yaml does
// among the directory's own *.yaml files: the only one, else <directory name>.yaml, else data.yaml;
// several without either are a DataError listing them.
// A bare directory (no *.yaml in it): each images/<split>/ folder is a split, or else the whole
// directory is "train"; it has no names (nc unknown: the class upper bound is not checked).
// Errors are DataError (NotFound for a missing argument) with the YAML path and the key in the text.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace yc {

struct SplitSpec {
  std::string name;                           // "train", "val", "test", "minival", or a folder name
  std::vector<std::filesystem::path> inputs;  // absolute: directories, *.txt lists, or image files
};

struct DatasetSpec {
  std::filesystem::path source;      // the YAML file or directory given (absolute)
  std::filesystem::path root;        // dataset root (absolute, normalised)
  // How root was found, for messages: "the YAML's folder", "the working directory /x", "Ultralytics'
  // datasets_dir /d", "an absolute path", "the dataset directory".
  std::string root_from;
  std::vector<std::string> names;    // class names by index; empty when unknown
  std::vector<SplitSpec> splits;     // train, val, then test/minival (bare dirs: train/val/test first)

  int nc() const { return static_cast<int>(names.size()); }
  const SplitSpec* split(std::string_view name) const;  // nullptr when absent
};

struct SpecOptions {
  // What a relative `path:` is tried against first; empty: the process's working directory. A cache
  // records its build's, so a later source check reads the same files from any folder.
  std::filesystem::path working_dir;
};

Result<DatasetSpec> LoadDatasetSpec(const std::filesystem::path& yaml_or_dir, const SpecOptions& options = {});

// Ultralytics' datasets_dir: "datasets_dir" in its settings.json ($YOLO_CONFIG_DIR/settings.json, else
// ~/.config/Ultralytics/settings.json) when readable, else <working_dir>/datasets.
std::filesystem::path UltralyticsDatasetsDir(const std::filesystem::path& working_dir);

}  // namespace yc
