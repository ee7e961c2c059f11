// Loader throughput on a synthetic in-memory source of 640-long-side images (prints only).
//   loader_bench [--images 128] [--batch 64] [--imgsz 640] [--threads 1,2] [--batches 6] [--compare]
// Train mode with default hyps: img/s total and per thread; val mode img/s per thread; the fast
// path against the reference path (speed ratio, pixel MAD and box agreement); a one-thread
// breakdown of where a train sample's time goes.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "loader/base/simd.h"
#include "loader/loader.h"
#include "loader/measure/stage_profile.h"
#include "loader/ops/collate.h"
#include "loader/ops/hsv.h"
#include "loader/render/fast_path.h"
#include "loader/render/plan.h"
#include "loader/render/reference_path.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Images per second over `batches` batches after one warm-up batch.
double Throughput(std::shared_ptr<const yc::RecordSource> src, yc::LoaderOptions o, int batches) {
  auto loader = yc::Loader::Create(src, o);
  if (!loader.ok()) {
    std::fprintf(stderr, "%s\n", loader.status().ToString().c_str());
    return 0;
  }
  yc::Loader& l = *loader.value();
  size_t images = 0;
  int epoch = 0;
  std::shared_ptr<yc::Batch> b;
  if (!l.StartEpoch(epoch).ok() || !l.Next(&b).ok() || !b) return 0;  // warm-up: pool, scratch
  b.reset();
  const auto t0 = Clock::now();
  for (int i = 0; i < batches; ++i) {
    yc::Status st = l.Next(&b);
    if (st.ok() && !b) {
      st = l.StartEpoch(++epoch);
      if (st.ok()) st = l.Next(&b);
    }
    if (!st.ok() || !b) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 0;
    }
    images += b->size;
    b.reset();
  }
  return images / Seconds(t0, Clock::now());
}

void Breakdown(const yc::RecordSource& src, const yc::LoaderOptions& o, int samples) {
  const yc::Result<yc::StageProfile> p = yc::ProfileTrainStages(src, o, samples);
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
    return;
  }
  std::printf("  one-thread breakdown per sample: geometry+warp %.2f ms, HSV+layout %.2f ms (layout alone %.2f ms)\n",
              p->geometry_warp_ms, p->hsv_layout_ms, p->layout_only_ms);
}

void Compare(const yc::RecordSource& src, const yc::LoaderOptions& o, int samples) {
  yc::RenderScratch fs, rs;
  std::vector<yc::BoxXyxy> fb, rb;
  std::vector<uint8_t> hsv(yc::kHsvChunkPixels * 3);
  double fast = 0, ref = 0, worst_mad = 0, sum_mad = 0, worst_box = 0;
  size_t box_mismatch = 0;
  cv::Mat out(o.imgsz, o.imgsz, CV_8UC3), expected;
  for (int i = 0; i < samples; ++i) {
    yc::Rng rng(o.seed, 1, i);
    const yc::TrainPlan plan = yc::DrawTrainPlan(rng, i % src.size(), src.size(), o.hyp, false, o.imgsz);
    const auto t0 = Clock::now();
    (void)yc::RenderTrainFast(plan, src, o, &fs, &out, &fb);
    if (plan.hsv.enabled) yc::ApplyHsv(yc::MakeHsvLut(plan.hsv), out.data, out.data, out.total(), hsv.data());
    const auto t1 = Clock::now();
    (void)yc::RenderTrainReference(plan, src, o, out.size(), &rs, &expected, &rb);
    const auto t2 = Clock::now();
    fast += Seconds(t0, t1), ref += Seconds(t1, t2);
    const auto d = yc::testing::CompareImages(expected, out);
    worst_mad = std::max(worst_mad, d.mean_abs);
    sum_mad += d.mean_abs;
    if (fb.size() != rb.size()) {
      ++box_mismatch;
      continue;
    }
    for (size_t k = 0; k < fb.size(); ++k)
      worst_box = std::max({worst_box, double(std::abs(fb[k].x1 - rb[k].x1)), double(std::abs(fb[k].y1 - rb[k].y1)),
                            double(std::abs(fb[k].x2 - rb[k].x2)), double(std::abs(fb[k].y2 - rb[k].y2))});
  }
  std::printf(
      "fast vs reference (one thread, %d samples): fast %.2f ms, reference %.2f ms per sample, "
      "speed-up %.2fx\n",
      samples, 1e3 * fast / samples, 1e3 * ref / samples, ref / fast);
  std::printf("  pixel MAD mean %.4f, worst %.4f levels; worst box corner diff %.4f px; box-count mismatches %zu\n",
              sum_mad / samples, worst_mad, worst_box, box_mismatch);
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  size_t start = 0;
  while (start < s.size()) {
    const size_t comma = s.find(',', start);
    out.push_back(std::stoi(s.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"yolocache loader benchmark"};
  int images = 128, batch = 64, imgsz = 640, batches = 6, samples = 60;
  std::string threads = "1,2";
  bool compare = false, nhwc = false, no_simd = false;
  app.add_option("--images", images, "synthetic images in the source");
  app.add_option("--batch", batch, "batch size");
  app.add_option("--imgsz", imgsz, "image size (records are stored at this long side)");
  app.add_option("--threads", threads, "comma-separated thread counts");
  app.add_option("--batches", batches, "batches timed per configuration");
  app.add_option("--samples", samples, "samples for --compare and the breakdown");
  app.add_flag("--compare", compare, "compare the fast and reference paths");
  app.add_flag("--nhwc", nhwc, "NHWC output instead of NCHW");
  app.add_flag("--no-simd", no_simd, "portable kernels only (what non-x86 hosts run)");
  CLI11_PARSE(app, argc, argv);
  cv::setNumThreads(1);  // OpenCV's own threads would blur the per-thread numbers
  if (no_simd) yc::SetSimdCap(yc::SimdLevel::kNone);

  auto src = std::make_shared<yc::testing::FakeSource>(yc::testing::FakeSource::Synthetic(images, imgsz, 1));
  yc::LoaderOptions o;
  o.batch = batch;
  o.imgsz = imgsz;
  o.prefetch = 2;
  o.layout = nhwc ? yc::ImageLayout::kNHWC : yc::ImageLayout::kNCHW;
  std::printf("source: %d synthetic images, long side %d; batch %d, imgsz %d, %s, default hyps%s\n", images, imgsz,
              batch, imgsz, nhwc ? "NHWC" : "NCHW", no_simd ? ", portable kernels" : "");
  for (int t : ParseList(threads)) {
    o.threads = t;
    o.mode = yc::LoaderMode::kTrain;
    const double train = Throughput(src, o, batches);
    o.mode = yc::LoaderMode::kVal;
    const double val = Throughput(src, o, batches);
    std::printf("threads %d: train %.0f img/s (%.0f per thread), val %.0f img/s (%.0f per thread)\n", t, train,
                train / t, val, val / t);
  }
  o.mode = yc::LoaderMode::kTrain;
  Breakdown(*src, o, samples);
  if (compare) Compare(*src, o, samples);
  return 0;
}
