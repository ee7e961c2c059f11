// Build throughput per core vs the bare decoder, on the same files in the same run:
//   bare:  tjDecompress2 (RGB) + cv::resize to the Ultralytics load_image size, files already in memory
//   build: `yolocache build` with one thread (read + hash + sniff + decode + EXIF + resize + labels +
//          encode + checksum + ordered write), into a temporary cache directory
// Prints img/s of each and the ratio build/bare (acceptance: >= 0.8).
//   decode_bench DATA.yaml [--imgsz 640] [--rounds 3] [--compress zstd]
#include <turbojpeg.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <opencv2/imgproc.hpp>

#include "libcache/build/builder.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/source/decode.h"
#include "libcache/source/discover.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"Build throughput per core vs bare tjDecompress2 + resize"};
  std::string data, compress = "none";
  int imgsz = 640, rounds = 3;
  app.add_option("data", data, "Data YAML or dataset directory")->required();
  app.add_option("--imgsz", imgsz, "Long side")->capture_default_str();
  app.add_option("--rounds", rounds, "Rounds (best of)")->capture_default_str();
  app.add_option("--compress", compress, "none | zstd")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  yc::Result<yc::DatasetSpec> spec = yc::LoadDatasetSpec(data);
  if (!spec.ok()) {
    std::cerr << spec.status().ToString() << "\n";
    return 3;
  }
  std::vector<std::string> files;
  for (const yc::SplitSpec& split : spec->splits) {
    yc::Result<std::vector<yc::SourceItem>> items = yc::ListSplitFiles(*spec, split);
    if (!items.ok()) return 3;
    for (const yc::SourceItem& item : *items) {
      std::ifstream in(item.image, std::ios::binary);
      files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }

  tjhandle tj = tjInitDecompress();
  std::vector<uint8_t> rgb;
  cv::Mat resized;
  double best_bare = 0, best_build = 0;
  const fs::path out = fs::temp_directory_path() / ("yolocache-decode-bench-" + std::to_string(getpid()));
  for (int round = 0; round < rounds; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    size_t decoded = 0;
    for (const std::string& f : files) {
      int w = 0, h = 0, sub = 0, cs = 0;
      const auto* src = reinterpret_cast<const unsigned char*>(f.data());
      if (tjDecompressHeader3(tj, src, f.size(), &w, &h, &sub, &cs) != 0) continue;
      rgb.resize(static_cast<size_t>(w) * h * 3);
      if (tjDecompress2(tj, src, f.size(), rgb.data(), w, 0, h, TJPF_RGB, 0) != 0) continue;
      const cv::Size target = yc::ResizeTarget(h, w, imgsz);
      cv::Mat full(h, w, CV_8UC3, rgb.data());
      if (target.width != w || target.height != h) cv::resize(full, resized, target, 0, 0, cv::INTER_LINEAR);
      ++decoded;
    }
    const double bare = decoded / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    yc::BuildOptions b;
    b.source = data;
    b.out = out;
    b.imgsz = imgsz;
    b.threads = 1;
    b.codec.kind = compress == "zstd" ? yc::Codec::Kind::kZstd : yc::Codec::Kind::kNone;
    yc::Result<yc::BuildReport> report = yc::BuildCache(b);
    if (!report.ok()) {
      std::cerr << report.status().ToString() << "\n";
      return 3;
    }
    const double build = report->images_per_second();
    std::printf("round %d: bare decode+resize %.1f img/s, build (1 thread) %.1f img/s, ratio %.3f\n", round + 1, bare,
                build, build / bare);
    best_bare = std::max(best_bare, bare);
    best_build = std::max(best_build, build);
  }
  std::error_code ec;
  fs::remove_all(out, ec);
  tjDestroy(tj);
  std::printf("files %zu, imgsz %d, compress %s\nbest: bare %.1f img/s/core, build %.1f img/s/core, ratio %.3f\n",
              files.size(), imgsz, compress.c_str(), best_bare, best_build, best_build / best_bare);
  return 0;
}
