#include "libcache/build/output_guard.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "libcache/base/file_read.h"

namespace yc {

namespace fs = std::filesystem;

namespace {

fs::path Resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : r;
}

std::string Quote(const fs::path& p) { return p.string(); }

}  // namespace

bool SameFile(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return Resolved(a) == Resolved(b);
}

bool IsWithin(const fs::path& path, const fs::path& dir) {
  const fs::path p = Resolved(path), d = Resolved(dir);
  auto pi = p.begin(), di = d.begin();
  for (; di != d.end(); ++di, ++pi) {
    if (di->empty()) continue;  // a trailing separator
    if (pi == p.end() || *pi != *di) return false;
  }
  return true;
}

Status CheckNotAnInput(const fs::path& out, const std::vector<fs::path>& inputs) {
  for (const fs::path& in : inputs) {
    if (!in.empty() && SameFile(out, in)) {
      return Status::InvalidArgument(Status::At(Quote(out), "is the input " + Quote(in) +
                                                                "; an output never replaces an input (choose another output)"));
    }
  }
  return Status::OK();
}

Status CheckOutsideFolders(const fs::path& out, const std::vector<fs::path>& folders, const std::string& what) {
  for (const fs::path& dir : folders) {
    if (!dir.empty() && IsWithin(out, dir)) {
      return Status::InvalidArgument(Status::At(Quote(out), "is inside " + what + " " + Quote(dir) +
                                                                "; outputs are never written into it (choose a folder outside)"));
    }
  }
  return Status::OK();
}

Status CheckOutsideCaches(const fs::path& out) {
  const fs::path resolved = Resolved(out);
  for (fs::path dir = resolved;; dir = dir.parent_path()) {
    const fs::path manifest = dir / kManifestFileName;
    std::error_code ec;
    if (fs::is_regular_file(manifest, ec)) {
      std::string text;
      if (ReadRegularFile(manifest, kMaxMetadataBytes, &text).ok() && ParseManifestContent(text, manifest.string()).ok()) {
        return Status::InvalidArgument(Status::At(Quote(out), "is inside the yolocache cache " + dir.string() +
                                                                  " (its manifest.json); outputs are never written into a cache"));
      }
    }
    if (dir == dir.parent_path() || dir.empty()) break;
  }
  return Status::OK();
}

Status CheckWithinFolder(const fs::path& path, const fs::path& folder) {
  if (IsWithin(path, folder)) return Status::OK();
  return Status::InvalidArgument(Status::At(Quote(path), "resolves outside the output folder " + Quote(folder) +
                                                             " (a symbolic link or ..); not written"));
}

std::vector<fs::path> DatasetFolders(const Manifest& m) {
  std::set<fs::path> folders;
  const fs::path root = m.dataset_root.empty() ? fs::path() : fs::path(m.dataset_root);
  if (!root.empty()) folders.insert(root.lexically_normal());
  for (const SplitManifest& split : m.splits) {
    std::set<std::string> seen;  // parent folders as recorded: most sources share a few
    for (const SourceFingerprint& s : split.sources) {
      const fs::path rel = fs::path(s.path).parent_path();
      if (!seen.insert(rel.string()).second) continue;
      const fs::path images = (rel.is_absolute() || root.empty() ? rel : root / rel).lexically_normal();
      if (images.empty()) continue;
      folders.insert(images);
      // img2label_paths: the last "images" component becomes "labels".
      std::vector<fs::path> parts(images.begin(), images.end());
      for (size_t i = parts.size(); i-- > 0;) {
        if (parts[i] == "images") {
          parts[i] = "labels";
          fs::path labels;
          for (const fs::path& part : parts) labels /= part;
          folders.insert(labels);
          break;
        }
      }
    }
  }
  return {folders.begin(), folders.end()};
}

Status CheckOutsideCacheData(const fs::path& out, const fs::path& cache_dir, const Manifest& manifest) {
  YC_RETURN_IF_ERROR(CheckOutsideFolders(out, {cache_dir}, "the cache"));
  YC_RETURN_IF_ERROR(CheckOutsideCaches(out));
  return CheckOutsideFolders(out, DatasetFolders(manifest), "the cache's source dataset");
}

}  // namespace yc
