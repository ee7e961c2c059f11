#include "tools/yolocache/cli_util.h"

#include <csignal>
#include <filesystem>
#include <iostream>

#include "libcache/manifest.h"

namespace yc::cli {
namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void OnSignal(int) { g_interrupted.store(true); }
}  // namespace

const std::atomic<bool>* InstallInterruptFlag() {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return &g_interrupted;
}

Status ParseCompressOption(const std::string& text, Codec* out) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  if (!ParseCodecKind(kind, &out->kind))
    return Status::InvalidArgument("--compress: '" + text + "' is not none, zstd or zstd:LEVEL");
  if (colon != std::string::npos) {
    if (out->kind != Codec::Kind::kZstd) return Status::InvalidArgument("--compress: only zstd takes a level");
    try {
      size_t used = 0;
      out->level = std::stoi(text.substr(colon + 1), &used);
      if (used != text.size() - colon - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      return Status::InvalidArgument("--compress: bad zstd level in '" + text + "'");
    }
    if (out->level < -7 || out->level > 22) return Status::InvalidArgument("--compress: zstd level must be -7..22");
  }
  return Status::OK();
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
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(path) / kManifestFileName, ec);
}

}  // namespace yc::cli
