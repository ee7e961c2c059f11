// `yolocache inspect CACHE`: what a cache holds (records, boxes, class histogram, bytes, options);
// `--record N --out x.jpg` one stored image with its boxes; `--preview grid.jpg` a grid of augmented
// train samples; `--export-augmented N DIR` augmented samples as a YOLO dataset (images + labels).
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include "libcache/base/output_file.h"
#include "libcache/base/path_text.h"
#include "libcache/build/output_guard.h"
#include "libcache/cache.h"
#include "libcache/source/jpeg_encode.h"
#include "loader/loader.h"
#include "loader/measure/draw.h"
#include "tools/common/cli_validators.h"
#include "tools/common/command.h"
#include "tools/common/progress_bar.h"
#include "tools/yolocache/cli_util.h"

namespace yc::cli {
namespace {
namespace fs = std::filesystem;

struct InspectArgs {
  std::string cache, split = "train", out, preview, export_dir;
  int64_t record = -1;
  int preview_count = 16, export_count = 0;
  uint64_t seed = 0;
  int epoch = 0;
  bool json = false;
};

uint64_t DiskBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

std::vector<size_t> ClassCounts(const Manifest& m, const std::string& split) {
  std::vector<size_t> counts;
  const nlohmann::ordered_json& a = m.audit;
  if (a.contains("splits") && a["splits"].contains(split) && a["splits"][split].contains("class_counts"))
    for (const auto& v : a["splits"][split]["class_counts"]) counts.push_back(v.get<size_t>());
  return counts;
}

int Summary(const Cache& cache, const InspectArgs& a) {
  const Manifest& m = cache.manifest();
  const uint64_t disk = DiskBytes(cache.dir());
  uint64_t pixels = 0;
  for (const SplitManifest& s : m.splits) pixels += s.pixel_bytes;
  const double ratio = disk > 0 && pixels > 0 ? static_cast<double>(pixels) / static_cast<double>(disk) : 1.0;
  if (a.json) {
    nlohmann::ordered_json j;
    j["cache"] = PrintableText(cache.dir().string());
    j["format_version"] = m.format_version;
    j["created"] = m.created;
    j["dataset"] = PrintableText(m.dataset_yaml);
    j["imgsz"] = m.imgsz;
    j["backend"] = BackendName(m.backend);
    j["codec"] = CodecKindName(m.codec.kind);
    j["compress"] = CodecSpec(m.codec);  // with its zstd level or JPEG quality
    j["names"] = m.names;
    j["bytes_on_disk"] = disk;
    j["pixel_bytes"] = pixels;
    j["compression_ratio"] = ratio;
    j["build_options"] = m.build_options;
    for (const SplitManifest& s : m.splits) {
      j["splits"][s.name] = {{"records", s.records},         {"boxes", s.boxes},
                             {"backgrounds", s.backgrounds}, {"excluded", s.excluded},
                             {"pixel_bytes", s.pixel_bytes}, {"class_counts", ClassCounts(m, s.name)}};
    }
    std::cout << JsonText(j) << "\n";
    return kExitOk;
  }
  std::printf("cache     %s\n", cache.dir().c_str());
  std::printf("dataset   %s\n", m.dataset_yaml.c_str());
  std::printf("created   %s (format %d, yolocache %s)\n", m.created.c_str(), m.format_version, m.tool_version.c_str());
  std::printf("imgsz     %d   backend %s   codec %s", m.imgsz, BackendName(m.backend), CodecSpec(m.codec).c_str());
  std::printf("\nbytes     %s on disk, %s of pixels (ratio %.2f)\n\n", HumanBytes(static_cast<double>(disk)).c_str(),
              HumanBytes(static_cast<double>(pixels)).c_str(), ratio);
  std::printf("%-8s %9s %9s %12s %9s\n", "split", "records", "boxes", "backgrounds", "excluded");
  for (const SplitManifest& s : m.splits)
    std::printf("%-8s %9llu %9llu %12llu %9llu\n", s.name.c_str(), static_cast<unsigned long long>(s.records),
                static_cast<unsigned long long>(s.boxes), static_cast<unsigned long long>(s.backgrounds),
                static_cast<unsigned long long>(s.excluded));
  for (const SplitManifest& s : m.splits) {
    const std::vector<size_t> counts = ClassCounts(m, s.name);
    if (counts.empty()) continue;
    std::printf("\nboxes per class (%s):\n", s.name.c_str());
    for (size_t c = 0; c < counts.size(); ++c) {
      if (counts[c] == 0) continue;
      std::printf("  %3zu %-20s %zu\n", c, c < m.names.size() ? m.names[c].c_str() : "?", counts[c]);
    }
  }
  return kExitOk;
}

int WriteRecord(const Cache& cache, const InspectArgs& a) {
  const RecordSource* src = cache.split(a.split);
  if (src == nullptr) return Fail("inspect", Status::InvalidArgument("no split '" + a.split + "' in the cache"));
  if (a.record < 0 || static_cast<size_t>(a.record) >= src->size())
    return Fail("inspect", Status::InvalidArgument("--record " + std::to_string(a.record) + " is outside 0.." +
                                                   std::to_string(src->size() ? src->size() - 1 : 0)));
  if (a.out.empty()) return Fail("inspect", Status::InvalidArgument("--record needs --out FILE.jpg"));
  ScratchBuffer scratch;
  RecordView v;
  if (Status st = src->Read(static_cast<size_t>(a.record), &v, &scratch); !st.ok()) return Fail("inspect", st);
  // Read refuses any other channel count; the Mat below would read past the pixels otherwise.
  if (v.channels != static_cast<int>(kRecordChannels))
    return Fail("inspect", Status::Corruption("record " + std::to_string(a.record) + ": " + std::to_string(v.channels) +
                                              " channels, expected RGB"));
  cv::Mat rgb = cv::Mat(v.height, v.width, CV_8UC3, const_cast<uint8_t*>(v.pixels)).clone();
  std::vector<BoxXyxy> boxes;
  for (size_t k = 0; k < v.box_count; ++k) {
    const Box& b = v.boxes[k];
    boxes.push_back({(b.cx - b.w / 2) * v.width, (b.cy - b.h / 2) * v.height, (b.cx + b.w / 2) * v.width,
                     (b.cy + b.h / 2) * v.height, b.cls});
  }
  DrawBoxes(boxes, cache.manifest().names, &rgb);
  if (Status st = WriteJpeg(a.out, rgb.data, rgb.cols, rgb.rows); !st.ok()) return Fail("inspect", st);
  std::cout << a.split << " record " << a.record << ": " << PrintableText(v.source) << "  stored " << v.width << "x" << v.height
            << ", original " << v.orig_width << "x" << v.orig_height << ", " << v.box_count << " boxes -> " << a.out
            << "\n";
  return kExitOk;
}

bool Interrupted(const std::atomic<bool>* cancel) { return cancel->load(std::memory_order_relaxed); }

// A train-mode loader over the cache's train split, as training would see it at `epoch`.
Result<std::unique_ptr<Loader>> AugmentedLoader(const std::shared_ptr<Cache>& cache, const InspectArgs& a, int batch) {
  const RecordSource* src = cache->split(a.split);
  if (src == nullptr) return Status::InvalidArgument("no split '" + a.split + "' in the cache");
  LoaderOptions o;
  o.mode = LoaderMode::kTrain;
  o.batch = batch;
  o.imgsz = cache->manifest().imgsz > 0 ? cache->manifest().imgsz : 640;
  o.seed = a.seed;
  o.layout = ImageLayout::kNHWC;
  Result<std::unique_ptr<Loader>> loader = Loader::Create(std::shared_ptr<const RecordSource>(cache, src), o);
  if (!loader.ok()) return loader.status();
  if (Status st = loader.value()->StartEpoch(a.epoch); !st.ok()) return st;
  return loader;
}

int WritePreview(const std::shared_ptr<Cache>& cache, const InspectArgs& a) {
  const int n = std::max(1, a.preview_count);
  Result<std::unique_ptr<Loader>> loader = AugmentedLoader(cache, a, n);
  if (!loader.ok()) return Fail("inspect", loader.status());
  const std::atomic<bool>* cancel = InstallInterruptFlag();
  std::shared_ptr<Batch> batch;
  if (Status st = loader.value()->Next(&batch); !st.ok() || !batch) return Fail("inspect", st.ok() ? Status::DataError("empty split") : st);
  if (Interrupted(cancel)) return Fail("inspect", Status::Cancelled("interrupted"));  // before any output
  const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(batch->size))));
  const int rows = (batch->size + cols - 1) / cols;
  const int tile = std::min(batch->width, 480);
  cv::Mat grid(rows * tile, cols * tile, CV_8UC3, cv::Scalar(40, 40, 40));
  for (int i = 0; i < batch->size; ++i) {
    cv::Mat img = RenderBatchImage(*batch, i, cache->manifest().names);
    cv::Mat cell = grid(cv::Rect((i % cols) * tile, (i / cols) * tile, tile, tile));
    cv::resize(img, cell, cell.size(), 0, 0, cv::INTER_AREA);
  }
  if (Status st = WriteJpeg(a.preview, grid.data, grid.cols, grid.rows); !st.ok()) return Fail("inspect", st);
  std::cout << "preview: " << batch->size << " augmented " << a.split << " samples (epoch " << a.epoch << ", seed "
            << a.seed << ") -> " << a.preview << "\n";
  return kExitOk;
}

// Writes the export into `dir` (created, empty); stops at the first error or when interrupted.
Status ExportInto(const std::shared_ptr<Cache>& cache, const InspectArgs& a, const fs::path& dir,
                  const std::atomic<bool>* cancel) {
  std::error_code ec;
  fs::create_directories(dir / "images" / "train", ec);
  fs::create_directories(dir / "labels" / "train", ec);
  if (ec) return Status::IOError(Status::At(dir.string(), ec.message()));
  Result<std::unique_ptr<Loader>> loader = AugmentedLoader(cache, a, 16);
  if (!loader.ok()) return loader.status();
  ProgressBar bar("export", static_cast<size_t>(a.export_count));
  int written = 0, epoch = a.epoch;
  while (written < a.export_count) {
    if (Interrupted(cancel)) return Status::Cancelled("interrupted");
    std::shared_ptr<Batch> batch;
    YC_RETURN_IF_ERROR(loader.value()->Next(&batch));
    if (!batch) {  // next epoch: fresh augmentations of the same records
      YC_RETURN_IF_ERROR(loader.value()->StartEpoch(++epoch));
      continue;
    }
    std::vector<std::string> label_text(static_cast<size_t>(batch->size));
    for (size_t r = 0; r < batch->label_count(); ++r) {
      const float* row = &batch->labels[r * 6];
      char line[128];
      std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", static_cast<int>(row[1]), row[2], row[3], row[4], row[5]);
      label_text[static_cast<size_t>(row[0])] += line;
    }
    for (int i = 0; i < batch->size && written < a.export_count; ++i, ++written) {
      char stem[32];
      std::snprintf(stem, sizeof stem, "aug_%07d", written);
      const fs::path img = dir / "images" / "train" / (std::string(stem) + ".jpg");
      YC_RETURN_IF_ERROR(WriteJpeg(img, batch->image(i), batch->width, batch->height, 95));
      const fs::path label = dir / "labels" / "train" / (std::string(stem) + ".txt");
      YC_RETURN_IF_ERROR(WriteFileAtomically(label, label_text[static_cast<size_t>(i)]));
      bar.Update(static_cast<size_t>(written + 1));
    }
  }
  bar.Finish();
  const fs::path yaml_path = dir / "data.yaml";
  std::ostringstream yaml;
  yaml << "# " << a.export_count << " augmented samples of " << cache->dir().string() << " (yolocache inspect)\n"
       << "path: .\ntrain: images/train\nval: images/train\nnames:\n";
  const std::vector<std::string>& names = cache->manifest().names;
  for (size_t c = 0; c < names.size(); ++c) yaml << "  " << c << ": " << names[c] << "\n";
  return WriteFileAtomically(yaml_path, yaml.str());
}

int ExportAugmented(const std::shared_ptr<Cache>& cache, const InspectArgs& a) {
  const fs::path dir = a.export_dir;
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  if (existed && !fs::is_empty(dir, ec))
    return Fail("inspect", Status::InvalidArgument(Status::At(dir.string(), "exists and is not empty")));
  const Status st = ExportInto(cache, a, dir, InstallInterruptFlag());
  if (!st.ok()) {
    // Interrupted or failed: no half export is left. The folder was empty or absent, so only what this
    // command wrote is removed.
    if (!existed) {
      fs::remove_all(dir, ec);
    } else {
      for (const char* entry : {"images", "labels", "data.yaml"}) fs::remove_all(dir / entry, ec);
    }
    return Fail("inspect", st);
  }
  std::cout << "exported " << a.export_count << " augmented samples -> " << dir.string()
            << " (data.yaml, images/, labels/)\n";
  return kExitOk;
}

// The output-path rule (libcache/build/output_guard.h): source files are only ever read, and a cache is
// written only by build. --out, --preview or --export-augmented inside the cache (its manifest.json!),
// any cache, the dataset it was built from or one of its image or label folders is refused (exit 2).
Status CheckInspectOutput(const Cache& cache, const std::string& out) {
  return out.empty() ? Status::OK() : CheckOutsideCacheData(out, cache.dir(), cache.manifest());
}

int RunInspect(const InspectArgs& a) {
  Result<std::unique_ptr<Cache>> opened = Cache::Open(a.cache);
  if (!opened.ok()) return Fail("inspect", opened.status());
  std::shared_ptr<Cache> cache(std::move(opened.value()));
  for (const std::string* out : {&a.out, &a.preview, &a.export_dir}) {
    if (Status st = CheckInspectOutput(*cache, *out); !st.ok()) return Fail("inspect", st);
  }
  if (a.record >= 0 || !a.out.empty()) return WriteRecord(*cache, a);
  if (!a.preview.empty()) return WritePreview(cache, a);
  if (!a.export_dir.empty()) return ExportAugmented(cache, a);
  return Summary(*cache, a);
}

Registration reg("inspect",
                 "Summarise a cache; draw a stored record (--record N --out x.jpg); preview augmentation "
                 "(--preview grid.jpg); export augmented samples (--export-augmented N DIR)",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<InspectArgs>();
                   app.add_option("cache", a->cache, "Cache directory")->required();
                   app.add_option("--split", a->split, "Split for --record / --preview / --export-augmented")
                       ->capture_default_str();
                   auto* record = app.add_option("--record", a->record, "Record index to draw (with --out)")
                                      ->check(AtLeast(0));
                   auto* out = app.add_option("--out", a->out, "Output JPEG for --record")->needs(record);
                   auto* preview = app.add_option("--preview", a->preview, "Write a grid of augmented train samples to this JPEG");
                   app.add_option("--preview-count", a->preview_count, "Samples in the preview grid")
                       ->capture_default_str()
                       ->check(AtLeast(1))
                       ->needs(preview);
                   auto* exp = app.add_option("--export-augmented", "N DIR: write N augmented samples as a YOLO dataset")
                                   ->expected(2)
                                   ->type_name("N DIR");
                   // One output per run: a record, a preview or an export (the first would silently win).
                   preview->excludes(record)->excludes(out)->excludes(exp);
                   exp->excludes(record)->excludes(out);
                   app.add_option("--seed", a->seed, "Augmentation seed")->capture_default_str()->check(NoMinusSign());
                   app.add_option("--epoch", a->epoch, "Epoch to sample (close_mosaic applies to late epochs)")
                       ->capture_default_str()
                       ->check(AtLeast(0));
                   app.add_flag("--json", a->json, "Print the summary as JSON");
                   return [a, exp] {
                     if (exp->count() > 0) {
                       const std::vector<std::string> v = exp->as<std::vector<std::string>>();
                       try {
                         size_t used = 0;
                         a->export_count = std::stoi(v[0], &used);
                         if (used != v[0].size()) throw std::invalid_argument("trailing characters");
                       } catch (const std::exception&) {
                         return Fail("inspect", Status::InvalidArgument("--export-augmented: N must be a whole number, got '" +
                                                                        v[0] + "'"));
                       }
                       if (a->export_count <= 0) return Fail("inspect", Status::InvalidArgument("--export-augmented: N must be > 0"));
                       a->export_dir = v[1];
                     }
                     return RunInspect(*a);
                   };
                 });

}  // namespace
}  // namespace yc::cli
