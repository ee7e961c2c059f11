// How well this machine's own cores scale from 1 to N threads, as the reference the loader's scaling
// is read against (prints only):
//   cpu_scaling_bench [--threads 1,2,4,8,16] [--seconds 1.5] [--kernels clock,compute,memory]
// Three kernels, each thread working on its own memory, no sharing and no synchronisation while timed:
//   clock:   a chain of dependent integer multiplies (loader/base/core_clock.h): the core clock each
//            thread gets (x86 only; elsewhere it prints 0),
//   compute: the loader's fused HSV kernel (AVX-512 or AVX2, whichever the loader uses) over an
//            L1-resident 24 KB run of pixels (ALU bound: what turbo frequency and shared physical
//            cores allow),
//   memory:  copying 1.2 MB images (one 640x640 RGB sample) from a 64 MB per-thread pool (what the
//            memory system allows for the loader's streaming passes).
// Scaling efficiency = (throughput at N) / (N x throughput at 1).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loader/base/core_clock.h"
#include "loader/base/rng.h"
#include "loader/base/simd.h"
#include "loader/ops/hsv.h"

namespace {

using Clock = std::chrono::steady_clock;

// Runs `work(thread, &units)` on n threads for about `seconds` after a common start; returns total units/s.
template <typename Work>
double RunThreads(int n, double seconds, Work work) {
  std::atomic<bool> go{false}, stop{false};
  std::vector<double> units(static_cast<size_t>(n), 0.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      units[static_cast<size_t>(t)] = work(t, stop);
    });
  }
  const auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  double total = 0;
  for (double u : units) total += u;
  return total / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cpu_scaling_bench: the machine's own 1 -> N thread scaling (compute-bound and memory-bound)"};
  std::vector<int> thread_counts{1, 2, 4, 8, static_cast<int>(std::thread::hardware_concurrency())};
  double seconds = 1.5;
  app.add_option("--threads", thread_counts, "Thread counts")->delimiter(',');
  app.add_option("--seconds", seconds, "Seconds per measurement");
  // One kernel alone lets two processes (pinned with taskset) run different kernels side by side,
  // e.g. the clock chain on one core while the others run the vector kernel.
  std::vector<std::string> kernels{"clock", "compute", "memory"};
  app.add_option("--kernels", kernels, "Kernels to run")
      ->delimiter(',')
      ->check(CLI::IsMember({"clock", "compute", "memory"}));
  CLI11_PARSE(app, argc, argv);
  auto wanted = [&](const char* name) { return std::find(kernels.begin(), kernels.end(), name) != kernels.end(); };

  yc::AugmentHyp hyp;  // Ultralytics' default HSV gains
  yc::Rng rng(0, 0, 0);
  const yc::HsvLut lut = yc::MakeHsvLut(yc::DrawHsvGains(rng, hyp));
  constexpr size_t kRunPixels = 8192;  // 24 KB of RGB: stays in L1/L2
  constexpr size_t kImageBytes = 640 * 640 * 3;
  constexpr size_t kPoolImages = 52;  // ~64 MB per thread: beyond any cache

  auto compute = [&](int, const std::atomic<bool>& stop) {
    std::vector<uint8_t> px(kRunPixels * 3), hsv(yc::kHsvChunkPixels * 3);
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 131u);
    double runs = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      yc::ApplyHsv(lut, px.data(), px.data(), kRunPixels, hsv.data());
      ++runs;
    }
    return runs * kRunPixels / 409600.0;  // in 640x640 images
  };
  auto clock = [&](int, const std::atomic<bool>& stop) {
    double cycles = 0;
    while (!stop.load(std::memory_order_relaxed)) cycles += yc::SampleCoreClock(16384).cycles;
    return cycles;
  };
  auto memory = [&](int, const std::atomic<bool>& stop) {
    std::vector<uint8_t> pool(kPoolImages * kImageBytes, 1), out(kImageBytes);
    double images = 0;
    size_t k = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      std::memcpy(out.data(), pool.data() + (k++ % kPoolImages) * kImageBytes, kImageBytes);
      ++images;
    }
    return images + out[k % kImageBytes] * 0.0;  // keeps the copies observable
  };

  std::printf("HSV kernel: %s\n", yc::SimdLevelName(yc::ActiveSimdLevel()));
  std::printf("%-8s %12s %8s %20s %8s %20s %8s\n", "threads", "GHz/thread", "ratio", "compute img/s/thread", "ratio",
              "memory GB/s/thread", "ratio");
  double clock1 = 0, compute1 = 0, memory1 = 0;
  bool first = true;
  for (int n : thread_counts) {
    if (n < 1) continue;
    // A kernel not run prints 0 and ratio 0.
    const double g = wanted("clock") ? RunThreads(n, seconds, clock) / n / 1e9 : 0;
    const double c = wanted("compute") ? RunThreads(n, seconds, compute) / n : 0;
    const double m = wanted("memory") ? RunThreads(n, seconds, memory) / n * kImageBytes / 1e9 : 0;
    if (first) clock1 = g, compute1 = c, memory1 = m, first = false;
    auto ratio = [](double x, double x1) { return x1 > 0 ? x / x1 : 0.0; };
    std::printf("%-8d %12.2f %8.2f %20.0f %8.2f %20.2f %8.2f\n", n, g, ratio(g, clock1), c, ratio(c, compute1), m,
                ratio(m, memory1));
  }
  return 0;
}
