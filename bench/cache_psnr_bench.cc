// How far a lossy cache's pixels are from an exact one's: PSNR per record of CACHE (e.g. built with
// --compress jpeg:90) against REFERENCE (the same dataset and imgsz, --compress none), per split.
// Prints the global PSNR (from the summed squared error), the mean, median and lowest per-record PSNR
// and the record that has it; asserts nothing.
//   cache_psnr_bench REFERENCE CACHE [--split train]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "libcache/cache.h"
#include "libcache/format/jpeg_pixels.h"

namespace {

int Fail(const yc::Status& s) {
  std::fprintf(stderr, "cache_psnr_bench: %s\n", s.ToString().c_str());
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("PSNR of a lossy cache's records against an exact cache of the same dataset");
  std::string reference, cache;
  std::vector<std::string> splits;
  app.add_option("reference", reference, "Exact cache (--compress none or zstd)")->required();
  app.add_option("cache", cache, "Cache to measure (e.g. --compress jpeg:90 or auto)")->required();
  app.add_option("--split", splits, "Splits (default: every split)");
  CLI11_PARSE(app, argc, argv);

  auto ref = yc::Cache::Open(reference);
  if (!ref.ok()) return Fail(ref.status());
  auto lossy = yc::Cache::Open(cache);
  if (!lossy.ok()) return Fail(lossy.status());
  if (splits.empty())
    for (const yc::SplitManifest& s : lossy.value()->manifest().splits) splits.push_back(s.name);
  std::printf("%s vs %s (codec %s)\n", cache.c_str(), reference.c_str(), yc::CodecSpec(lossy.value()->manifest().codec).c_str());
  for (const std::string& split : splits) {
    const yc::RecordSource* a = ref.value()->split(split);
    const yc::RecordSource* b = lossy.value()->split(split);
    if (a == nullptr || b == nullptr || a->size() != b->size())
      return Fail(yc::Status::InvalidArgument("split " + split + ": missing, or record counts differ"));
    yc::ScratchBuffer sa, sb;
    std::vector<double> psnr;
    double squared = 0, bytes = 0;
    size_t jpeg = 0, worst = 0;
    for (size_t i = 0; i < a->size(); ++i) {
      yc::RecordView va, vb;
      if (yc::Status s = a->Read(i, &va, &sa); !s.ok()) return Fail(s);
      if (yc::Status s = b->Read(i, &vb, &sb); !s.ok()) return Fail(s);
      const uint64_t n = static_cast<uint64_t>(va.height) * va.width * va.channels;
      if (vb.height != va.height || vb.width != va.width || va.source != vb.source)
        return Fail(yc::Status::InvalidArgument("split " + split + ": record " + std::to_string(i) + " differs in size or source"));
      jpeg += vb.jpeg != nullptr ? 1 : 0;
      for (uint64_t k = 0; k < n; ++k) {
        const double d = static_cast<int>(va.pixels[k]) - static_cast<int>(vb.pixels[k]);
        squared += d * d;
      }
      bytes += static_cast<double>(n);
      psnr.push_back(yc::PixelPsnr(va.pixels, vb.pixels, n));
      if (psnr.back() < psnr[worst]) worst = psnr.size() - 1;
    }
    if (psnr.empty()) continue;
    std::vector<double> sorted = psnr;
    std::sort(sorted.begin(), sorted.end());
    double finite_sum = 0;
    size_t finite = 0;
    for (double p : psnr)
      if (std::isfinite(p)) finite_sum += p, ++finite;
    const double global = squared > 0 ? 10 * std::log10(255.0 * 255.0 * bytes / squared) : std::numeric_limits<double>::infinity();
    yc::RecordView vw;
    std::string worst_source;
    if (b->Read(worst, &vw, &sb).ok()) worst_source = std::string(vw.source);
    std::printf("%-6s %zu records (%zu JPEG): PSNR %.2f dB overall, mean %.2f over %zu lossy records, median %.2f, "
                "lowest %.2f (%s)\n",
                split.c_str(), psnr.size(), jpeg, global, finite > 0 ? finite_sum / finite : 0.0, finite,
                sorted[sorted.size() / 2], sorted.front(), worst_source.c_str());
  }
  return 0;
}
