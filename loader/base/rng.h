// Counter-based sampling randomness. Ultralytics draws from Python `random` and NumPy streams whose
// state depends on worker scheduling; we cannot reproduce those numbers, so every random decision is
// instead a pure function of (seed, epoch, global sample position): each sample gets its own
// generator keyed by a SplitMix64 hash of those three numbers. A batch therefore depends only on
// (seed, epoch, batch index, rank, world_size), whatever the thread count, and training can resume
// at any batch. Within a sample the draws keep Ultralytics' order, so the distributions match.
#pragma once

#include <cstddef>
#include <cstdint>

namespace yc {

// SplitMix64 finaliser: a bijective 64-bit mix.
uint64_t Mix64(uint64_t x);

// Streams that are not per-sample (the epoch permutation) use reserved keys.
// kCutMix: a sample's CutMix draws (render/plan.h says why they are apart).
enum class RngStream : uint64_t { kSample = 1, kPermutation = 2, kWindowed = 3, kCutMix = 4 };

// xoshiro256** seeded from a key. Not thread-safe: one per sample.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t epoch, uint64_t position, RngStream stream = RngStream::kSample);

  uint64_t NextU64();
  // Uniform double in [0, 1) with 53 random bits, like Python's random.random().
  double Random();
  // a + (b - a) * Random(), like Python's random.uniform(a, b).
  double Uniform(double a, double b) { return a + (b - a) * Random(); }
  // Unbiased integer in [0, n) (Lemire's multiply-and-reject); n > 0.
  uint64_t Below(uint64_t n);
  // Standard normal (Box-Muller, no cached second value so the stream stays simple).
  double Normal();
  // Gamma(shape, 1) for shape >= 1 (Marsaglia-Tsang).
  double Gamma(double shape);
  // Beta(a, b) = X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b); NumPy's beta for a, b > 1.
  double Beta(double a, double b);

 private:
  uint64_t s_[4];
};

}  // namespace yc
