// Runs the python fixture scripts in tests/trainer/fixtures/ against the Ultralytics source beside the
// checkout (../shared/ultralytics) with Debian's python3-torch, and reads the tensor files they write.
// Tests that compare with Ultralytics call UltralyticsFixture::Find() and GTEST_SKIP() with its `why`
// when the checkout or a python3 with torch is absent.
#pragma once

#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace yc::testing {

struct UltralyticsFixture {
  bool available = false;
  std::string why;  // when not available
  std::filesystem::path ultralytics;  // the checkout (holds the `ultralytics` package)
  std::filesystem::path fixtures;     // tests/trainer/fixtures

  static UltralyticsFixture Find() {
    UltralyticsFixture f;
    const std::filesystem::path source = YOLOCACHE_SOURCE_DIR;
    f.fixtures = source / "tests" / "trainer" / "fixtures";
    f.ultralytics = std::filesystem::weakly_canonical(source / ".." / "shared" / "ultralytics");
    if (!std::filesystem::is_directory(f.ultralytics / "ultralytics")) {
      f.why = "no Ultralytics checkout at " + f.ultralytics.string();
      return f;
    }
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      f.why = "/usr/bin/python3 cannot import torch (install python3-torch)";
      return f;
    }
    f.available = true;
    return f;
  }

  // Runs `/usr/bin/python3 fixtures/<script> <args>` offline, with HOME and the Ultralytics settings in
  // `work` (nothing is written to the user's home). Returns the exit status; output goes to work/python.log.
  int Run(const std::string& script, const std::vector<std::string>& args, const std::filesystem::path& work) const {
    std::string cmd = "cd '" + work.string() + "' && HOME='" + work.string() + "' YOLO_CONFIG_DIR='" + work.string() +
                      "' YOLO_OFFLINE=1 PYTHONPATH='" + ultralytics.string() + "' /usr/bin/python3 '" +
                      (fixtures / script).string() + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " > '" + (work / "python.log").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  }
};

// A fixture's raw little-endian float32 file (a script's numpy .tofile()) as a tensor of `shape`; a size
// that does not fit the shape is a test failure naming the file (the tensor is then left unfilled).
inline at::Tensor ReadFloatFile(const std::filesystem::path& path, at::IntArrayRef shape) {
  const std::string bytes = ReadFile(path);
  at::Tensor t = at::empty(shape, at::kFloat);
  EXPECT_EQ(bytes.size(), static_cast<size_t>(t.numel()) * 4) << path;
  if (bytes.size() == static_cast<size_t>(t.numel()) * 4) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

// The tensors of a fixture .bin file (ultralytics_models.py describes the layout), in file order.
// Returns false with `error` set on a malformed file.
inline bool ReadTensorFile(const std::filesystem::path& path, std::vector<std::pair<std::string, at::Tensor>>* out,
                           std::string* error) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    if (bytes.size() - pos < n) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  };
  char magic[4];
  uint32_t count = 0;
  if (!take(magic, 4) || std::memcmp(magic, "YCT1", 4) != 0 || !take(&count, 4)) {
    *error = path.string() + ": not a YCT1 tensor file";
    return false;
  }
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0, ndim = 0;
    if (!take(&len, 4) || bytes.size() - pos < len) {
      *error = path.string() + ": truncated name";
      return false;
    }
    std::string name = bytes.substr(pos, len);
    pos += len;
    if (!take(&ndim, 4) || ndim > 8) {
      *error = path.string() + ": bad rank for " + name;
      return false;
    }
    std::vector<int64_t> dims(ndim);
    int64_t numel = 1;
    for (auto& d : dims) {
      if (!take(&d, 8) || d < 0) {
        *error = path.string() + ": bad shape for " + name;
        return false;
      }
      numel *= d;
    }
    at::Tensor t = at::empty(dims, at::kFloat);
    if (!take(t.data_ptr<float>(), static_cast<size_t>(numel) * 4)) {
      *error = path.string() + ": truncated data for " + name;
      return false;
    }
    out->emplace_back(std::move(name), std::move(t));
  }
  return true;
}

}  // namespace yc::testing
