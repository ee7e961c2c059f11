// Queued host copies (trainer/io/host_copies.h) and the one-read fp16 range check of release weights
// (trainer/io/ultralytics_module_writer.h: AllFitHalf). On a GPU (skipped without one; run on the GPU host):
// copies queued before an in-place update hold the values from before it.
#include "trainer/io/host_copies.h"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "trainer/io/ultralytics_module_writer.h"

namespace yc::trainer {
namespace {

TEST(HostCopies, HostTensorsAreCopiedAtOnce) {
  at::Tensor source = at::arange(12, at::kFloat).reshape({3, 4}).t();  // not contiguous
  HostCopies copies;
  at::Tensor copy = copies.Queue(source);
  source.add_(100);
  copies.Wait();
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_TRUE(at::equal(copy, at::arange(12, at::kFloat).reshape({3, 4}).t()));
}

TEST(HostCopies, DeviceCopiesHoldTheValuesFromBeforeLaterUpdates) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (run on the GPU host)";
  const at::Tensor expected = at::randn({64, 32, 3, 3});
  at::Tensor source = expected.to(at::kCUDA).contiguous(at::MemoryFormat::ChannelsLast);
  HostCopies copies;
  std::vector<at::Tensor> copied;
  for (int k = 0; k < 50; ++k) copied.push_back(copies.Queue(source.to(at::kHalf)));
  at::Tensor fp32 = copies.Queue(source);
  source.mul_(-3);  // queued after the copies: they must not see it
  copies.Wait();
  EXPECT_TRUE(fp32.device().is_cpu());
  EXPECT_TRUE(fp32.is_contiguous());
  EXPECT_TRUE(at::equal(fp32, expected));
  for (const at::Tensor& c : copied) EXPECT_TRUE(at::equal(c, expected.to(at::kHalf)));
  copies.Wait();  // nothing in flight: returns at once
}

TEST(ReleaseHalf, OneReadSaysWhetherAnyTensorNeedsFp32) {
  using Named = std::vector<std::pair<std::string, at::Tensor>>;
  const at::Tensor small = at::randn({8, 4});
  const at::Tensor counts = at::full({3}, 70000, at::kLong);  // integer buffers stay as they are
  EXPECT_TRUE(AllFitHalf(Named{{"w", small}, {"n", counts}}));
  // A finite value beyond fp16's range: that tensor keeps float32, so the set does not fit.
  const at::Tensor large = small.clone().index_fill_(1, at::tensor({0}, at::kLong), 70000.0);
  EXPECT_FALSE(AllFitHalf(Named{{"w", small}, {"big", large}}));
  EXPECT_EQ(ReleaseHalf(large).scalar_type(), at::kFloat);
  // Already not finite: fp16 loses nothing, as ReleaseHalf's own test says.
  const at::Tensor nan = small.clone().index_fill_(1, at::tensor({0}, at::kLong), std::nan(""));
  EXPECT_TRUE(AllFitHalf(Named{{"nan", nan}}));
  EXPECT_EQ(ReleaseHalf(nan).scalar_type(), at::kHalf);
  // Skipping the test gives what the test gives for a set that fits.
  EXPECT_TRUE(at::equal(ReleaseHalf(small, /*fits_half=*/true), ReleaseHalf(small)));
  EXPECT_TRUE(AllFitHalf(Named{}));
}

}  // namespace
}  // namespace yc::trainer
