#include "libcache/base/pid_files.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace yc {
namespace fs = std::filesystem;

namespace {
constexpr const char* kTempTag = ".tmp-";
constexpr size_t kMaxPidDigits = 9;  // pid_max is at most 2^22 on Linux
}  // namespace

bool ProcessAlive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

long TaggedPid(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.size() - prefix.size() > kMaxPidDigits || name.rfind(prefix, 0) != 0)
    return -1;
  if (name[prefix.size()] == '0') return -1;  // getpid() never has a leading zero
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
  }
  return std::stol(name.substr(prefix.size()));
}

std::string TempFileName(const std::string& name) { return "." + name + kTempTag + std::to_string(::getpid()); }

void RemoveStaleTempFiles(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t tag = name.rfind(kTempTag);
    // "." + a non-empty name + ".tmp-" + digits, as TempFileName writes it.
    if (name.size() < 2 || name[0] != '.' || tag == std::string::npos || tag < 2) continue;
    const long pid = TaggedPid(name, name.substr(0, tag + std::char_traits<char>::length(kTempTag)));
    if (pid <= 0 || ProcessAlive(pid)) continue;
    std::error_code type_ec;
    if (fs::is_regular_file(fs::symlink_status(it->path(), type_ec))) stale.push_back(it->path());
  }
  for (const fs::path& p : stale) fs::remove(p, ec);
}

}  // namespace yc
