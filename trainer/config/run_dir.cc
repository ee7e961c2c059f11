#include "trainer/config/run_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace yc::trainer {

namespace fs = std::filesystem;

Result<fs::path> ResolveRunDir(const std::string& out_dir, const std::string& project_dir, const std::string& name,
                               bool exist_ok, bool create) {
  std::error_code ec;
  if (!out_dir.empty()) {
    const fs::path out(out_dir);
    if (create) {
      fs::create_directories(out, ec);
      if (ec) return Status::IOError(Status::At(out.string(), "cannot create the directory: " + ec.message()));
    }
    return out;
  }
  if (project_dir.empty() || name.empty()) return Status::InvalidArgument("--project and --name must not be empty");
  const fs::path project(project_dir);
  const fs::path base = project / name;
  if (exist_ok) {
    if (create) {
      fs::create_directories(base, ec);
      if (ec) return Status::IOError(Status::At(base.string(), "cannot create the directory: " + ec.message()));
    }
    return base;
  }
  if (create) {
    fs::create_directories(base.parent_path(), ec);
    if (ec) return Status::IOError(Status::At(base.parent_path().string(), "cannot create the directory: " + ec.message()));
  }
  // increment_path: <name>, then <name>2 .. <name>9998 (Ultralytics' range), the first that does not exist.
  for (int n = 1; n < 9999; ++n) {
    const fs::path candidate = n == 1 ? base : project / (name + std::to_string(n));
    if (!create) {
      if (!fs::exists(candidate, ec)) return candidate;
      continue;
    }
    if (::mkdir(candidate.c_str(), 0777) == 0) return candidate;
    if (errno != EEXIST) return Status::IOError(Status::At(candidate.string(), std::string("cannot create the directory: ") + std::strerror(errno)));
  }
  return Status::IOError(Status::At(base.string(), "no free run directory up to " + name + "9998"));
}

}  // namespace yc::trainer
