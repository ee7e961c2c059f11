#include "libcache/source/dataset_spec.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <new>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "libcache/base/file_read.h"
#include "libcache/source/image_format.h"
#include "libcache/source/yaml_bounds.h"

namespace yc {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxYamlBytes = 16u << 20;  // a data YAML is a few KB; refuse to slurp anything huge
constexpr long long kMaxClasses = 100000;  // nc, or the number of names when nc is absent (as the trainer's bound)

Status Bad(const fs::path& yaml, const std::string& reason) {
  return Status::DataError(Status::At(yaml.string(), reason));
}

bool IsDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Absolute, lexically normal, without a trailing separator ("ds/." -> "ds").
fs::path Clean(fs::path p) {
  p = p.lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

fs::path Normal(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  return Clean(ec ? p : abs);
}

// A scalar's text, or nothing for null / non-scalars.
bool ScalarText(const YAML::Node& node, std::string* out) {
  if (!node.IsDefined() || !node.IsScalar()) return false;
  *out = node.Scalar();
  return true;
}

bool ParseIndex(const std::string& s, long long* out) {
  const char* b = s.data();
  const char* e = b + s.size();
  const auto [ptr, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && ptr == e;
}

// One split entry -> absolute path, with Ultralytics' "../x" fallback.
Result<fs::path> ResolveEntry(const fs::path& yaml, const std::string& key, const fs::path& root,
                              const std::string& entry) {
  if (entry.empty()) return Bad(yaml, key + ": empty path");
  fs::path p = fs::path(entry);
  if (p.is_relative()) p = root / p;
  p = Clean(p);
  if (!Exists(p) && entry.rfind("../", 0) == 0) {
    const fs::path fallback = Clean(root / entry.substr(3));
    if (Exists(fallback)) p = fallback;
  }
  if (!Exists(p)) return Bad(yaml, key + ": '" + entry + "' not found (" + p.string() + ")");
  if (!IsDir(p)) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext != ".txt" && FormatFromExtension(p) == ImageFormat::kUnknown) {
      return Bad(yaml, key + ": '" + entry + "' is not a directory, an image or a .txt list");
    }
  }
  return p;
}

Status ReadSplit(const fs::path& yaml, const YAML::Node& node, const std::string& key, const std::string& split,
                 const fs::path& root, std::vector<SplitSpec>* splits) {
  SplitSpec spec{split, {}};
  std::string text;
  if (node.IsNull()) return Status::OK();
  if (ScalarText(node, &text)) {
    if (text.empty()) return Status::OK();
    YC_ASSIGN_OR_RETURN(fs::path p, ResolveEntry(yaml, key, root, text));
    spec.inputs.push_back(std::move(p));
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (!ScalarText(node[i], &text)) {
        return Bad(yaml, key + ": entry " + std::to_string(i) + " is not a path");
      }
      YC_ASSIGN_OR_RETURN(fs::path p, ResolveEntry(yaml, key, root, text));
      spec.inputs.push_back(std::move(p));
    }
  } else {
    return Bad(yaml, key + ": expected a path or a list of paths");
  }
  if (!spec.inputs.empty()) splits->push_back(std::move(spec));
  return Status::OK();
}

Status ReadNames(const fs::path& yaml, const YAML::Node& root, std::vector<std::string>* names) {
  const YAML::Node node = root["names"];
  const YAML::Node nc_node = root["nc"];
  std::string text;
  if (node.IsDefined() && !node.IsNull()) {
    if ((node.IsSequence() || node.IsMap()) && node.size() > static_cast<size_t>(kMaxClasses)) {
      return Bad(yaml, "names: " + std::to_string(node.size()) + " classes, more than " + std::to_string(kMaxClasses));
    }
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) {
        if (!ScalarText(node[i], &text)) return Bad(yaml, "names: entry " + std::to_string(i) + " is not a name");
        names->push_back(text);
      }
    } else if (node.IsMap()) {
      std::map<long long, std::string> by_index;
      for (const auto& kv : node) {
        std::string key;
        long long index = -1;
        if (!ScalarText(kv.first, &key) || !ParseIndex(key, &index) || index < 0) {
          return Bad(yaml, "names: key '" + key + "' is not a class index");
        }
        if (!ScalarText(kv.second, &text)) return Bad(yaml, "names: entry " + key + " is not a name");
        by_index[index] = text;
      }
      const long long n = static_cast<long long>(by_index.size());
      if (n > 0 && by_index.rbegin()->first >= n) {
        return Bad(yaml, "names: " + std::to_string(n) + " classes need indices 0-" + std::to_string(n - 1) +
                             ", found " + std::to_string(by_index.rbegin()->first));
      }
      for (auto& [index, name] : by_index) names->push_back(std::move(name));
    } else {
      return Bad(yaml, "names: expected a list or a map of index: name");
    }
  }
  if (nc_node.IsDefined() && !nc_node.IsNull()) {
    long long nc = -1;
    if (!ScalarText(nc_node, &text) || !ParseIndex(text, &nc) || nc < 0 || nc > kMaxClasses) {
      return Bad(yaml, "nc: '" + text + "' is not a class count");
    }
    if (names->empty() && !(node.IsDefined() && !node.IsNull())) {
      for (long long i = 0; i < nc; ++i) names->push_back("class_" + std::to_string(i));
    } else if (static_cast<long long>(names->size()) != nc) {
      return Bad(yaml, "nc is " + std::to_string(nc) + " but names has " + std::to_string(names->size()) +
                           " entries");
    }
  }
  if (!node.IsDefined() && !nc_node.IsDefined()) return Bad(yaml, "missing key 'names' (or 'nc')");
  if (names->empty()) return Bad(yaml, "names: no classes");
  return Status::OK();
}

// Whether every train / val entry of `doc` exists under `root` (the test that picks a `path:` candidate).
bool SplitsExistUnder(const fs::path& yaml, const YAML::Node& doc, const fs::path& root) {
  std::vector<SplitSpec> scratch;
  for (const char* key : {"train", "val", "validation"}) {
    const YAML::Node node = doc[key];
    if (node.IsDefined() && !ReadSplit(yaml, node, key, key, root, &scratch).ok()) return false;
  }
  return true;
}

// The dataset root for a `path:` value, with Ultralytics' order and our YAML-folder fallback.
Status ResolveRoot(const fs::path& yaml, const YAML::Node& doc, const std::string& text, const SpecOptions& options,
                   DatasetSpec* spec) {
  const fs::path dir = yaml.parent_path();
  if (text.empty()) {  // Ultralytics: `data.get("path") or yaml parent`
    spec->root = dir;
    spec->root_from = "the YAML's folder";
    return Status::OK();
  }
  if (fs::path(text).is_absolute()) {
    spec->root = Clean(text);
    spec->root_from = "an absolute path";
    if (!IsDir(spec->root)) return Bad(yaml, "path: '" + text + "' not found (" + spec->root.string() + ")");
    return Status::OK();
  }
  std::error_code ec;
  const fs::path wd = options.working_dir.empty() ? fs::current_path(ec) : options.working_dir;
  const fs::path datasets = UltralyticsDatasetsDir(wd);
  const std::vector<std::pair<fs::path, std::string>> candidates = {
      {Clean(wd / text), "the working directory " + wd.string()},
      {Clean(datasets / text), "Ultralytics' datasets_dir " + datasets.string()},
      {Clean(dir / text), "the YAML's folder"}};
  const std::pair<fs::path, std::string>* existing = nullptr;
  for (const auto& c : candidates) {
    if (!IsDir(c.first)) continue;
    if (existing == nullptr) existing = &c;
    if (SplitsExistUnder(yaml, doc, c.first)) {
      existing = &c;
      break;
    }
  }
  if (existing == nullptr) {
    return Bad(yaml, "path: '" + text + "' not found (tried " + candidates[0].first.string() + ", " +
                         candidates[1].first.string() + ", " + candidates[2].first.string() + ")");
  }
  spec->root = existing->first;
  spec->root_from = existing->second;
  return Status::OK();
}

Result<DatasetSpec> LoadYaml(const fs::path& yaml, const SpecOptions& options) {
  // Read through ReadRegularFile: a FIFO or device given as the YAML is refused, never waited on.
  std::string contents;
  YC_RETURN_IF_ERROR(ReadRegularFile(yaml, kMaxYamlBytes, &contents));

  YC_RETURN_IF_ERROR(CheckYamlBounds(contents, yaml));
  YAML::Node doc;
  try {
    doc = YAML::Load(contents);
  } catch (const YAML::ParserException& e) {
    return Bad(yaml, "line " + std::to_string(e.mark.line + 1) + ": invalid YAML (" + e.msg + ")");
  } catch (const YAML::Exception& e) {
    return Bad(yaml, std::string("invalid YAML (") + e.what() + ")");
  }
  if (!doc.IsMap()) return Bad(yaml, "not a YAML mapping of dataset keys");

  DatasetSpec spec;
  spec.source = yaml;
  std::string text;
  const YAML::Node path_node = doc["path"];
  if (path_node.IsDefined() && !path_node.IsNull() && !ScalarText(path_node, &text))
    return Bad(yaml, "path: expected a directory");
  YC_RETURN_IF_ERROR(ResolveRoot(yaml, doc, text, options, &spec));

  YAML::Node val = doc["val"];
  const char* val_key = "val";
  if ((!val.IsDefined() || val.IsNull()) && doc["validation"].IsDefined()) {
    val = doc["validation"];
    val_key = "validation";
  }
  if (!doc["train"].IsDefined() || doc["train"].IsNull()) return Bad(yaml, "missing key 'train'");
  if (!val.IsDefined() || val.IsNull()) return Bad(yaml, "missing key 'val'");

  YC_RETURN_IF_ERROR(ReadSplit(yaml, doc["train"], "train", "train", spec.root, &spec.splits));
  if (spec.splits.empty()) return Bad(yaml, "train: no paths");
  YC_RETURN_IF_ERROR(ReadSplit(yaml, val, val_key, "val", spec.root, &spec.splits));
  if (spec.splits.size() < 2) return Bad(yaml, std::string(val_key) + ": no paths");
  for (const char* key : {"test", "minival"}) {
    const YAML::Node node = doc[key];
    if (node.IsDefined()) YC_RETURN_IF_ERROR(ReadSplit(yaml, node, key, key, spec.root, &spec.splits));
  }
  YC_RETURN_IF_ERROR(ReadNames(yaml, doc, &spec.names));
  return spec;
}

int SplitRank(const std::string& name) {
  if (name == "train") return 0;
  if (name == "val" || name == "valid" || name == "validation") return 1;
  if (name == "test") return 2;
  return 3;
}

Result<DatasetSpec> LoadDirectory(const fs::path& dir) {
  DatasetSpec spec;
  spec.source = dir;
  spec.root = dir;
  spec.root_from = "the dataset directory";
  const fs::path images = dir / "images";
  std::error_code ec;
  if (IsDir(images)) {
    for (fs::directory_iterator it(images, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.' || !IsDir(it->path())) continue;
      spec.splits.push_back({name, {it->path()}});
    }
    if (ec) return Status::IOError(Status::At(images.string(), ec.message()));
  }
  if (spec.splits.empty()) {
    spec.splits.push_back({"train", {dir}});
  }
  std::sort(spec.splits.begin(), spec.splits.end(), [](const SplitSpec& a, const SplitSpec& b) {
    const int ra = SplitRank(a.name), rb = SplitRank(b.name);
    return ra != rb ? ra < rb : a.name < b.name;
  });
  return spec;
}

// The data YAML a dataset folder holds, as Ultralytics' find_dataset_yaml picks it among the folder's
// own *.yaml files: the only one, else the one named like the folder (we also take data.yaml, the
// name Roboflow and our synth use). An empty path when there is none (a bare folder); DataError when
// several leave the choice open, rather than guessing which one the user meant.
Result<fs::path> FolderYaml(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& f = it->path();
    std::error_code fec;
    if (f.extension() != ".yaml" || f.filename().string()[0] == '.' || !it->is_regular_file(fec)) continue;
    found.push_back(f);
  }
  if (ec) return Status::IOError(Status::At(dir.string(), ec.message()));
  if (found.size() <= 1) return found.empty() ? fs::path() : found[0];
  std::sort(found.begin(), found.end());
  for (const std::string& stem : {dir.filename().string(), std::string("data")}) {
    for (const fs::path& f : found) {
      if (f.stem() == stem) return f;
    }
  }
  std::string names;
  for (const fs::path& f : found) names += (names.empty() ? "" : ", ") + f.filename().string();
  return Bad(dir, "holds several YAML files (" + names + ") and none is named " + dir.filename().string() +
                      ".yaml or data.yaml: give the one to use");
}

Result<DatasetSpec> LoadFolder(const fs::path& dir, const SpecOptions& options) {
  YC_ASSIGN_OR_RETURN(const fs::path yaml, FolderYaml(dir));
  return yaml.empty() ? LoadDirectory(dir) : LoadYaml(yaml, options);
}

}  // namespace

const SplitSpec* DatasetSpec::split(std::string_view name) const {
  for (const SplitSpec& s : splits) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

fs::path UltralyticsDatasetsDir(const fs::path& working_dir) {
  const char* config = std::getenv("YOLO_CONFIG_DIR");
  const char* home = std::getenv("HOME");
  fs::path settings;
  if (config != nullptr && *config != '\0') settings = fs::path(config) / "settings.json";
  else if (home != nullptr && *home != '\0') settings = fs::path(home) / ".config/Ultralytics/settings.json";
  std::string text;
  if (!settings.empty() && ReadRegularFile(settings, 1 << 20, &text).ok()) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("datasets_dir") && j["datasets_dir"].is_string())
      return fs::path(j["datasets_dir"].get<std::string>());
  }
  return working_dir / "datasets";
}

Result<DatasetSpec> LoadDatasetSpec(const fs::path& yaml_or_dir, const SpecOptions& options) {
  const fs::path p = Normal(yaml_or_dir);
  if (!Exists(p)) return Status::NotFound(Status::At(yaml_or_dir.string(), "not found"));
  try {
    return IsDir(p) ? LoadFolder(p, options) : LoadYaml(p, options);
  } catch (const YAML::Exception& e) {  // conversions on hostile documents
    return Bad(p, std::string("invalid YAML (") + e.what() + ")");
  } catch (const std::bad_alloc&) {  // not the data's fault: exit 3, as README says
    return Status::ResourceExhausted(Status::At(p.string(), "out of memory while reading the dataset"));
  } catch (const std::exception& e) {
    return Bad(p, std::string("cannot read dataset: ") + e.what());
  }
}

}  // namespace yc
