// How every command writes a file a user will see (exported models, predictions, previews,
// checkpoints): into a temp file of our own, then one rename. The temp file is created in the output's
// folder with O_CREAT|O_EXCL|O_NOFOLLOW (a symbolic link, a FIFO or any other file of that name is never
// opened, so a write is never redirected and never blocks), fsynced, and renamed over the final name only
// when that name is absent or a regular file; a symbolic link, FIFO, directory or device there is
// refused (IOError naming it and its kind) and left as it was. Until Commit the final name is untouched:
// an interrupted write leaves the previous file, never a truncated one. Where an output may go at all
// is libcache/build/output_guard.h.
//
//   YC_RETURN_IF_ERROR(yc::WriteFileAtomically("out/best.onnx", bytes));
//
//   Result<OutputFile> f = OutputFile::Create("out/clip.avi", ".avi");  // a writer that opens by name
//   ... write f->temp_path() ...
//   YC_RETURN_IF_ERROR(f->Commit());  // or let it go out of scope: the temp file is removed
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace yc {

class OutputFile {
 public:
  // Creates `.<name>.tmp-<pid>[suffix]` beside `path` (its folder must exist). `suffix` keeps an
  // extension a writer chooses its format by (".avi"). A leftover temp file of that exact name (a
  // killed process whose pid came back) is removed first when it is a regular file.
  static Result<OutputFile> Create(const std::filesystem::path& path, const std::string& suffix = "");
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();  // removes the temp file unless committed

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  // Appends to the temp file through the descriptor opened by Create.
  Status Write(std::string_view bytes);
  // fsyncs and closes the temp file, checks the final name (absent or a regular file), renames, fsyncs
  // the folder. Errors name the final path.
  Status Commit();

 private:
  OutputFile(std::filesystem::path path, std::filesystem::path temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  void Discard();
  std::filesystem::path path_, temp_;
  int fd_ = -1;
  bool done_ = false;
};

// OK when `path` does not exist or is a regular file (lstat: a link is judged itself, not its
// target); else IOError "<path>: exists and is a <kind>, not a regular file; not replaced".
Status CheckReplaceable(const std::filesystem::path& path);

// Create + Write + Commit.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace yc
