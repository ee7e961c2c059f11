// Where a command may write: the one output-path rule of every command that writes (export, predict,
// inspect, train's runs). An output must never be one of the command's inputs, never land inside a
// dataset or a cache (a folder holding a manifest.json of ours), and never resolve outside its output
// folder. Each refusal is InvalidArgument (exit 2) naming both paths, given before anything is written.
// How a file is then written is libcache/base/output_file.h.
//
//   YC_RETURN_IF_ERROR(yc::CheckNotAnInput(out, {weights}));        // export --out w.pt of w.pt
//   YC_RETURN_IF_ERROR(yc::CheckOutsideCaches(out));                 // inspect --out CACHE/manifest.json
//   YC_RETURN_IF_ERROR(yc::CheckOutsideCacheData(run_dir, cache.dir(), cache.manifest()));
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/format/manifest.h"

namespace yc {

// Both exist and are one file (stat: device and inode, links followed), or, for paths that do not all
// exist yet, their weakly_canonical forms are equal.
bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b);

// Whether `path` is `dir` or lies below it, after resolving both (weakly_canonical: symbolic links of
// the existing part followed, "." and ".." removed).
bool IsWithin(const std::filesystem::path& path, const std::filesystem::path& dir);

// InvalidArgument "<out>: is the input <input>; ..." for the first input SameFile as `out`.
Status CheckNotAnInput(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs);

// InvalidArgument "<out>: is inside <what> <dir>; ..." for the first folder (empty ones are skipped)
// that `out` IsWithin.
Status CheckOutsideFolders(const std::filesystem::path& out, const std::vector<std::filesystem::path>& folders,
                           const std::string& what);

// InvalidArgument "<out>: is inside the yolocache cache <dir>; ..." when `out` or one of its parent
// folders holds a manifest.json that parses as ours (ParseManifestContent: old or damaged ones count).
Status CheckOutsideCaches(const std::filesystem::path& out);

// InvalidArgument "<path>: resolves outside the output folder <folder>" unless IsWithin(path, folder)
// (a symbolic link among its parents, a "..").
Status CheckWithinFolder(const std::filesystem::path& path, const std::filesystem::path& folder);

// The folders a cache was built from: the dataset root (when recorded), every source image's folder and
// its label folder (Ultralytics' img2label_paths: the last /images/ -> /labels/). Sorted, unique.
std::vector<std::filesystem::path> DatasetFolders(const Manifest& manifest);

// For an output of a command that reads a cache (inspect's pictures, train's run folder): not inside
// the cache `cache_dir`, nor any other cache (CheckOutsideCaches), nor the dataset folders it was
// built from (DatasetFolders: a run's plots there would become training images of the next build).
Status CheckOutsideCacheData(const std::filesystem::path& out, const std::filesystem::path& cache_dir,
                             const Manifest& manifest);

}  // namespace yc
