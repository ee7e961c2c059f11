// Random Read(i) throughput of a built cache held in the page cache: the loader's access pattern.
// Builds caches in a temporary directory (raw shards, zstd shards, raw LMDB) from real photos
// (--images, decoded with TurboJPEG) or synthetic ones, then reads random records from T threads
// and touches every decoded byte (memcpy into a per-thread tile buffer, as a mosaic does).
// Prints GB/s of decoded pixels per thread; asserts nothing.
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "libcache/cache.h"
#include "libcache/verify/cache_verify.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Image {
  std::vector<uint8_t> rgb;
  int h = 0, w = 0;
  std::string source;
};

std::vector<Image> LoadJpegs(const fs::path& dir, size_t limit) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && (e.path().extension() == ".jpg" || e.path().extension() == ".jpeg")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  tjhandle tj = tjInitDecompress();
  std::vector<Image> out;
  for (const fs::path& f : files) {
    if (out.size() >= limit) break;
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    int w = 0, h = 0, sub = 0, cs = 0;
    if (tjDecompressHeader3(tj, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), &w, &h, &sub, &cs) != 0)
      continue;
    Image img;
    img.w = w;
    img.h = h;
    img.rgb.resize(static_cast<size_t>(w) * h * 3);
    if (tjDecompress2(tj, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), img.rgb.data(), w, 0, h,
                      TJPF_RGB, TJFLAG_ACCURATEDCT) != 0)
      continue;
    img.source = fs::relative(f, dir).string();
    out.push_back(std::move(img));
  }
  tjDestroy(tj);
  return out;
}

std::vector<Image> Synthetic(size_t count, int h, int w) {
  std::mt19937 rng(1);
  std::vector<Image> out(count);
  for (size_t i = 0; i < count; ++i) {
    Image& img = out[i];
    img.h = h;
    img.w = w;
    img.rgb.resize(static_cast<size_t>(h) * w * 3);
    for (auto& b : img.rgb) b = static_cast<uint8_t>(rng());
    img.source = "synthetic/" + std::to_string(i) + ".jpg";
  }
  return out;
}

struct Built {
  double seconds = 0;
  uint64_t bytes = 0;
};

Built BuildCache(const fs::path& dir, const std::vector<Image>& images, size_t records, const yc::WriterOptions& options) {
  fs::remove_all(dir);
  const auto start = Clock::now();
  auto writer = yc::CacheWriter::Create(dir, options);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    std::exit(1);
  }
  yc::Manifest m;
  m.tool_version = "bench";
  m.created = yc::ManifestTimestampNow();
  m.imgsz = 640;
  m.backend = options.backend;
  m.codec = options.codec;
  m.shard_size = options.shard_size;
  yc::SplitManifest split;
  split.name = "train";
  (void)writer.value()->BeginSplit("train");
  const yc::Box box{1, 0.5f, 0.5f, 0.2f, 0.3f};
  for (size_t i = 0; i < records; ++i) {
    const Image& img = images[i % images.size()];
    yc::RecordInput in;
    in.pixels = img.rgb.data();
    in.h = img.h;
    in.w = img.w;
    in.c = 3;
    in.orig_h = img.h;
    in.orig_w = img.w;
    in.boxes = &box;
    in.n = 1;
    in.source = img.source;
    const yc::Status s = writer.value()->Add(in);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  yc::SplitFiles files;
  (void)writer.value()->EndSplit(&files);
  (void)writer.value()->Finish();
  split.records = files.records;
  split.shards = files.shards;
  split.lmdb = files.lmdb;
  Built b;
  for (const auto& s : split.shards) b.bytes += s.bytes;
  if (split.lmdb) b.bytes += split.lmdb->bytes;
  m.splits.push_back(split);
  (void)yc::WriteManifest(dir, m);
  b.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return b;
}

struct ReadResult {
  double gbps_per_thread = 0, records_per_s = 0, mb_per_record = 0;
};

ReadResult ReadRandom(const yc::RecordSource& source, int threads, double seconds) {
  std::atomic<uint64_t> total_bytes{0}, total_records{0};
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + t);
      yc::ScratchBuffer scratch;
      std::vector<uint8_t> tile;
      uint64_t bytes = 0, records = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int k = 0; k < 16; ++k) {
          yc::RecordView v;
          if (!source.Read(rng() % source.size(), &v, &scratch).ok()) {
            ++errors;
            continue;
          }
          const size_t n = static_cast<size_t>(v.height) * v.width * v.channels;
          if (tile.size() < n) tile.resize(n);
          std::memcpy(tile.data(), v.pixels, n);  // the loader copies each tile into its canvas
          bytes += n;
          ++records;
        }
      }
      total_bytes += bytes;
      total_records += records;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (errors.load() > 0) std::fprintf(stderr, "read errors: %d\n", errors.load());
  ReadResult r;
  r.gbps_per_thread = static_cast<double>(total_bytes.load()) / elapsed / 1e9 / threads;
  r.records_per_s = static_cast<double>(total_records.load()) / elapsed;
  r.mb_per_record = total_records.load() ? static_cast<double>(total_bytes.load()) / total_records.load() / 1e6 : 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Random Read(i) throughput of yolocache caches (page-cache resident)");
  std::string images_dir, work_dir = (fs::temp_directory_path() / "yolocache-record-read-bench").string();
  size_t records = 512;
  std::vector<int> thread_counts{1, 2};
  double seconds = 2.0;
  int zstd_level = 3;
  app.add_option("--images", images_dir, "directory of JPEGs to decode and cache (default: synthetic noise 640x480)");
  app.add_option("--records", records, "records per cache (images are repeated to reach it)");
  app.add_option("--threads", thread_counts, "reader thread counts to run");
  app.add_option("--seconds", seconds, "seconds per measurement");
  app.add_option("--zstd-level", zstd_level, "zstd level for the compressed cache");
  app.add_option("--dir", work_dir, "scratch directory (removed at exit)");
  CLI11_PARSE(app, argc, argv);

  const std::vector<Image> images = images_dir.empty() ? Synthetic(64, 480, 640) : LoadJpegs(images_dir, records);
  if (images.empty()) {
    std::fprintf(stderr, "no images decoded from %s\n", images_dir.c_str());
    return 1;
  }
  uint64_t raw_bytes = 0;
  for (size_t i = 0; i < records; ++i) raw_bytes += images[i % images.size()].rgb.size();
  std::printf("%zu records (%zu distinct images), %.1f MB of decoded pixels, %u hardware threads\n", records, images.size(),
              raw_bytes / 1e6, std::thread::hardware_concurrency());

  struct Case {
    const char* name;
    yc::WriterOptions writer;
    bool verify;
  };
  yc::WriterOptions raw, zstd, lmdb;
  raw.shard_size = zstd.shard_size = uint64_t{256} << 20;
  zstd.codec = yc::Codec{yc::Codec::Kind::kZstd, zstd_level};
  lmdb.backend = yc::Backend::kLmdb;
  const Case cases[] = {{"shards raw", raw, false},  {"shards raw +verify", raw, true}, {"shards zstd", zstd, false},
                        {"shards zstd +verify", zstd, true}, {"lmdb raw", lmdb, false}};

  std::printf("%-22s %8s %10s %10s %8s %14s %10s\n", "case", "threads", "GB/s/thr", "rec/s", "MB/rec", "cache MB(ratio)",
              "build s");
  std::string last_dir;
  for (const Case& c : cases) {
    const fs::path dir = fs::path(work_dir) / (std::string(yc::BackendName(c.writer.backend)) + "-" +
                                               yc::CodecKindName(c.writer.codec.kind));
    static Built built;
    if (dir.string() != last_dir) {
      built = BuildCache(dir, images, records, c.writer);
      last_dir = dir.string();
    }
    yc::OpenOptions open;
    open.verify_checksums = c.verify;
    open.verify_first_read = false;  // the figures are for hashing on every read or never
    open.willneed = true;
    auto cache = yc::Cache::Open(dir, open);
    if (!cache.ok()) {
      std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
      return 1;
    }
    const yc::RecordSource& source = *cache.value()->split("train");
    ReadRandom(source, 1, 0.3);  // warm: page cache, scratch buffers, zstd contexts
    for (int threads : thread_counts) {
      const ReadResult r = ReadRandom(source, threads, seconds);
      std::printf("%-22s %8d %10.2f %10.0f %8.2f %8.0f(%4.2f) %10.2f\n", c.name, threads, r.gbps_per_thread, r.records_per_s,
                  r.mb_per_record, built.bytes / 1e6, static_cast<double>(built.bytes) / raw_bytes, built.seconds);
    }
  }
  // Full verify of the raw shard cache, for scale.
  const fs::path raw_dir = fs::path(work_dir) / "shards-none";
  const auto start = Clock::now();
  const yc::VerifyReport report = yc::VerifyCache(raw_dir);
  const double verify_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("verify (shards raw): %s, %.2f GB/s over %.0f MB\n", report.ok() ? "ok" : "PROBLEMS",
              report.bytes_checked / verify_s / 1e9, report.bytes_checked / 1e6);
  std::error_code ec;
  fs::remove_all(work_dir, ec);
  return 0;
}
