// Helpers shared by the test suites: temp dirs, shared data lookup, small file writers.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace yc::testing {

// A fresh directory removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// ../shared/data/<name>, or an empty path when that folder is absent.
std::filesystem::path SharedData(const std::string& name);

// Directory holding the built binaries (yolocache, yolocache-train).
std::filesystem::path BinaryDir();

// A TCP port on 127.0.0.1 that was free a moment ago (for rendezvous in multi-process tests).
int FreeLoopbackPort();

void WriteFile(const std::filesystem::path& path, const std::string& bytes);
std::string ReadFile(const std::filesystem::path& path);

}  // namespace yc::testing

// Skips the current test with a message when a shared data folder is missing.
#define YC_REQUIRE_SHARED(var, name)                                              \
  const std::filesystem::path var = ::yc::testing::SharedData(name);              \
  if (var.empty()) GTEST_SKIP() << "../shared/data/" << name << " not present; skipped"
