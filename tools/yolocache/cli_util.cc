#include "tools/yolocache/cli_util.h"

#include <filesystem>
#include <iostream>

#include "libcache/format/manifest.h"

namespace yc::cli {

Status ParseCompressOption(const std::string& text, Codec* out) {
  return ParseCodecSpec(text, out).WithContext("--compress");
}

Status ParseByteSize(const std::string& text, uint64_t* out) {
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    std::string unit = text.substr(used);
    double mult = 1;
    if (unit == "K" || unit == "KB" || unit == "KiB") mult = 1024.0;
    else if (unit == "M" || unit == "MB" || unit == "MiB") mult = 1024.0 * 1024;
    else if (unit == "G" || unit == "GB" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
    else if (!unit.empty()) throw std::invalid_argument("unit");
    if (value <= 0) throw std::invalid_argument("size");
    *out = static_cast<uint64_t>(value * mult);
    return Status::OK();
  } catch (const std::exception&) {
    return Status::InvalidArgument("'" + text + "' is not a size (e.g. 512M, 1G)");
  }
}

int Fail(const std::string& command, const Status& status) {
  std::cerr << "yolocache " << command << ": " << status.ToString() << "\n";
  return ExitCodeFor(status);
}

bool IsCacheDir(const std::string& path) {
  // Anything named manifest.json counts (a FIFO too): opening the cache then says what is wrong with
  // it, rather than auditing the cache folder as if it were a dataset.
  std::error_code ec;
  const auto type = std::filesystem::symlink_status(std::filesystem::path(path) / kManifestFileName, ec).type();
  return !ec && type != std::filesystem::file_type::not_found && type != std::filesystem::file_type::none;
}

}  // namespace yc::cli
