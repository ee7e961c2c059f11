// Counter-based sample streams.
#include "loader/base/rng.h"

#include <gtest/gtest.h>

namespace yc {
namespace {

TEST(RngTest, SameKeySameStreamDifferentKeysDiffer) {
  Rng a(1, 2, 3), b(1, 2, 3), c(1, 2, 4), d(1, 3, 3), e(2, 2, 3), f(1, 2, 3, RngStream::kPermutation);
  const uint64_t x = a.NextU64();
  EXPECT_EQ(x, b.NextU64());
  EXPECT_NE(x, c.NextU64());
  EXPECT_NE(x, d.NextU64());
  EXPECT_NE(x, e.NextU64());
  EXPECT_NE(x, f.NextU64());
}

TEST(RngTest, UniformAndBelowRanges) {
  Rng r(9, 9, 9);
  int counts[7] = {};
  for (int i = 0; i < 70000; ++i) {
    const double u = r.Uniform(-2, 3);
    ASSERT_GE(u, -2);
    ASSERT_LT(u, 3);
    const uint64_t k = r.Below(7);
    ASSERT_LT(k, 7u);
    ++counts[k];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
  EXPECT_EQ(r.Below(1), 0u);
}

TEST(RngTest, NormalMoments) {
  Rng r(5, 0, 0);
  double sum = 0, sq = 0;
  const int n = 50000;
  for (int i = 0; i < n; ++i) {
    const double x = r.Normal();
    sum += x, sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0, 0.02);
  EXPECT_NEAR(sq / n, 1, 0.03);
}

}  // namespace
}  // namespace yc
