#include "libcache/source/discover.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_set>

#include "libcache/base/file_read.h"

namespace yc {
namespace fs = std::filesystem;
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool Hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// A folder that cannot be listed: an error, or noted in *unreadable when the caller
// collects them and goes on with the rest.
Status NoteUnreadable(const fs::path& path, const std::string& reason, std::vector<UnreadableFolder>* unreadable) {
  if (unreadable == nullptr) return Status::IOError(Status::At(path.string(), "cannot list folder: " + reason));
  unreadable->push_back({path, reason});
  return Status::OK();
}

// Recursive listing that follows symlinked folders but visits each real folder once (no loops).
// Permission errors are not skipped: a chmod 000 folder would otherwise look like an empty one.
Status WalkImages(const fs::path& top, std::vector<fs::path>* out, std::vector<UnreadableFolder>* unreadable) {
  std::set<fs::path> visited;
  std::vector<fs::path> stack{top};
  while (!stack.empty()) {
    const fs::path dir = stack.back();
    stack.pop_back();
    std::error_code ec;
    const fs::path real = fs::canonical(dir, ec);
    if (ec) {
      YC_RETURN_IF_ERROR(NoteUnreadable(dir, ec.message(), unreadable));
      continue;
    }
    if (!visited.insert(real).second) continue;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      YC_RETURN_IF_ERROR(NoteUnreadable(dir, ec.message(), unreadable));
      continue;
    }
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (Hidden(p)) continue;
      std::error_code sec;
      if (it->is_directory(sec)) {
        stack.push_back(p);
      } else if (IsImageFile(p)) {
        out->push_back(p);
      }
    }
    if (ec) YC_RETURN_IF_ERROR(NoteUnreadable(dir, ec.message(), unreadable));
  }
  return Status::OK();
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The list is read whole through ReadRegularFile: a FIFO given as a list is refused instead of
// blocking, and a list that is a device is not read without end.
Status ReadList(const fs::path& list, const fs::path& root, std::vector<fs::path>* out) {
  std::string text;
  const Status st = ReadRegularFile(list, kMaxMetadataBytes, &text);
  if (!st.ok()) return st.WithContext("image list");
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = Trim(text.substr(begin, end - begin));
    begin = end + 1;
    if (line.empty()) continue;
    fs::path p;
    if (line.rfind("./", 0) == 0) {
      p = list.parent_path() / line.substr(2);
    } else {
      p = fs::path(line);
      if (p.is_relative()) p = root / p;
    }
    if (IsImageFile(p)) out->push_back(p.lexically_normal());
  }
  return Status::OK();
}

}  // namespace

bool IsImageFile(const fs::path& path) {
  static const std::unordered_set<std::string> kFormats = {".bmp", ".dng",  ".jpeg", ".jpg", ".mpo", ".png",
                                                           ".tif", ".tiff", ".webp", ".pfm", ".heic"};
  return kFormats.count(Lower(path.extension().string())) > 0;
}

fs::path LabelPathFor(const fs::path& image) {
  std::string s = image.string();
  const std::string sa = "/images/", sb = "/labels/";
  const size_t at = s.rfind(sa);
  if (at != std::string::npos) s.replace(at, sa.size(), sb);
  fs::path label(s);
  label.replace_extension(".txt");
  return label;
}

std::string RelativePath(const fs::path& root, const fs::path& path) {
  const fs::path rel = path.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") return path.generic_string();
  return rel.generic_string();
}

Result<std::vector<SourceItem>> ListSplitFiles(const DatasetSpec& spec, const SplitSpec& split,
                                               std::vector<UnreadableFolder>* unreadable) {
  std::vector<fs::path> images;
  for (const fs::path& input : split.inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      YC_RETURN_IF_ERROR(WalkImages(input, &images, unreadable));
    } else if (IsImageFile(input)) {
      images.push_back(input);
    } else if (fs::exists(input, ec)) {
      YC_RETURN_IF_ERROR(ReadList(input, spec.root, &images));
    } else {
      return Status::NotFound(Status::At(input.string(), "not found (split " + split.name + ")"));
    }
  }
  std::vector<SourceItem> items;
  items.reserve(images.size());
  for (const fs::path& p : images) {
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec).lexically_normal();
    fs::path label = LabelPathFor(abs);
    std::string label_rel = RelativePath(spec.root, label);
    items.push_back({abs, std::move(label), RelativePath(spec.root, abs), std::move(label_rel)});
  }
  // Plain string order, as Python's sorted() on the path strings.
  std::sort(items.begin(), items.end(),
            [](const SourceItem& a, const SourceItem& b) { return a.image.native() < b.image.native(); });
  items.erase(std::unique(items.begin(), items.end(),
                          [](const SourceItem& a, const SourceItem& b) { return a.image == b.image; }),
              items.end());
  return items;
}

std::vector<fs::path> FindOrphanLabels(const std::vector<SourceItem>& items, const std::vector<SourceItem>& also_known) {
  std::unordered_set<std::string> owned;
  std::set<fs::path> dirs;
  for (const SourceItem& it : items) {
    owned.insert(it.label.string());
    dirs.insert(it.label.parent_path());
  }
  for (const SourceItem& it : also_known) owned.insert(it.label.string());
  std::vector<fs::path> orphans;
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    if (ec) continue;  // no label folder at all: every image is a background, nothing is orphaned
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
      if (ec) break;
      const fs::path& p = it->path();
      if (Hidden(p) || p.extension() != ".txt" || p.filename() == "classes.txt") continue;
      std::error_code fec;
      if (!it->is_regular_file(fec)) continue;
      if (owned.count(p.string()) == 0) orphans.push_back(p);
    }
  }
  std::sort(orphans.begin(), orphans.end());
  return orphans;
}

}  // namespace yc
