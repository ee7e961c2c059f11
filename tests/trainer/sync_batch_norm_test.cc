#include "trainer/model/sync_batch_norm.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/modules/batchnorm.h>

#include "trainer/distributed/distributed.h"
#include "trainer/model/blocks.h"

namespace yc::trainer {
namespace {

// With one rank the global batch is the local one: SyncBatchNorm2d must then be torch's training-mode
// BatchNorm, forward and backward, running statistics included. (Two ranks against one process:
// tests/trainer/train_ddp_test.cc, SyncBnTwoRanksEqualOneProcess.)
// On CUDA SyncBatchNorm2d takes the fused-kernel path, here in channels_last as the trainer feeds it.
void ExpectOneRankEqualsTorchBatchNorm(const at::Device& device, at::MemoryFormat format) {
  auto dist = DistContext::Local();
  StatsReducer reducer(*dist);
  torch::manual_seed(5);
  const auto options = torch::nn::BatchNorm2dOptions(6).eps(kBnEps).momentum(kBnMomentum);
  torch::nn::BatchNorm2d ref(options), sync(options);
  ref->to(device);
  sync->to(device);
  {
    torch::NoGradGuard no_grad;
    ref->weight.uniform_(0.5, 1.5);
    ref->bias.uniform_(-0.5, 0.5);
    sync->weight.copy_(ref->weight);
    sync->bias.copy_(ref->bias);
  }
  for (int step = 0; step < 3; ++step) {
    const at::Tensor x0 = (at::randn({4, 6, 5, 7}) * 3 + 1).to(device).contiguous(format);
    const at::Tensor up = at::randn({4, 6, 5, 7}).to(device);  // upstream gradient
    at::Tensor xa = x0.clone().requires_grad_(true), xb = x0.clone().requires_grad_(true);
    at::Tensor ya = ref->forward(xa), yb = SyncBatchNorm2d(xb, *sync, reducer);
    EXPECT_LT((ya - yb).abs().max().item<double>(), 1e-4) << "step " << step;
    (ya * up).sum().backward();
    (yb * up).sum().backward();
    EXPECT_LT((xa.grad() - xb.grad()).abs().max().item<double>(), 1e-4) << "step " << step;
    EXPECT_LT((ref->weight.grad() - sync->weight.grad()).abs().max().item<double>(), 1e-3) << "step " << step;
    EXPECT_LT((ref->bias.grad() - sync->bias.grad()).abs().max().item<double>(), 1e-3) << "step " << step;
    EXPECT_LT((ref->running_mean - sync->running_mean).abs().max().item<double>(), 1e-5) << "step " << step;
    EXPECT_LT((ref->running_var - sync->running_var).abs().max().item<double>(), 1e-4) << "step " << step;
    EXPECT_EQ(ref->num_batches_tracked.item<int64_t>(), sync->num_batches_tracked.item<int64_t>());
    ref->zero_grad();
    sync->zero_grad();
  }
}

TEST(SyncBatchNorm, OneRankEqualsTorchBatchNorm) { ExpectOneRankEqualsTorchBatchNorm(at::kCPU, at::MemoryFormat::Contiguous); }

TEST(SyncBatchNorm, OneRankEqualsTorchBatchNormCudaKernels) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device (the fused-kernel path)";
  ExpectOneRankEqualsTorchBatchNorm(at::Device(at::kCUDA, 0), at::MemoryFormat::ChannelsLast);
}

// A Conv with a reducer uses it only while training; eval mode keeps the running statistics.
TEST(SyncBatchNorm, ConvUsesItOnlyInTraining) {
  auto dist = DistContext::Local();
  torch::manual_seed(2);
  Conv plain(3, 8, 3, 1), synced(3, 8, 3, 1);
  {
    torch::NoGradGuard no_grad;
    auto src = plain->named_parameters(true);
    for (auto& p : synced->named_parameters(true)) p.value().copy_(src[p.key()]);
  }
  EnableSyncBatchNorm(*synced, std::make_shared<StatsReducer>(*dist));
  const at::Tensor x = at::randn({2, 3, 16, 16});
  EXPECT_LT((plain->forward(x) - synced->forward(x)).abs().max().item<double>(), 1e-4);
  EXPECT_TRUE(plain->bn->running_mean.allclose(synced->bn->running_mean, 1e-5, 1e-6));
  plain->eval();
  synced->eval();
  EXPECT_TRUE(plain->forward(x).allclose(synced->forward(x), 1e-5, 1e-6));
}

}  // namespace
}  // namespace yc::trainer
