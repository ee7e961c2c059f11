// The depthwise-kernel choice (trainer/model/depthwise_kernel.h): the thread-local scope, the policy's
// picks, the steady train shape, the cuDNN-free conv's gradients. On a GPU (skipped without one; run on the
// GPU host): PyTorch's depthwise kernel gives what cuDNN gives, forward and backward, fp16 channels_last.
#include "trainer/model/depthwise_kernel.h"

#include <thread>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "trainer/engine/training_stack.h"
#include "trainer/model/blocks.h"
#include "trainer/runtime/autocast.h"

namespace yc::trainer {
namespace {

TEST(DepthwiseKernel, ScopesNestAndStayOnTheirThread) {
  EXPECT_EQ(CurrentDepthwiseKernel(), DepthwiseKernel::kDirect);
  {
    DepthwiseKernelScope outer(DepthwiseKernel::kConvolution);
    EXPECT_EQ(CurrentDepthwiseKernel(), DepthwiseKernel::kConvolution);
    DepthwiseKernel seen_elsewhere = DepthwiseKernel::kConvolution;
    std::thread([&] { seen_elsewhere = CurrentDepthwiseKernel(); }).join();
    EXPECT_EQ(seen_elsewhere, DepthwiseKernel::kDirect);
    {
      DepthwiseKernelScope inner(DepthwiseKernel::kDirect);
      EXPECT_EQ(CurrentDepthwiseKernel(), DepthwiseKernel::kDirect);
    }
    EXPECT_EQ(CurrentDepthwiseKernel(), DepthwiseKernel::kConvolution);
  }
  EXPECT_EQ(CurrentDepthwiseKernel(), DepthwiseKernel::kDirect);
}

TEST(DepthwiseKernel, PolicyGivesCudnnTheSteadyShapeOnly) {
  const at::Tensor steady = at::empty({4, 3, 64, 64}), partial = at::empty({3, 3, 64, 64});
  const DepthwisePolicy auto_policy(DepthwiseKernelMode::kAuto, {4, 3, 64, 64});
  EXPECT_EQ(auto_policy.For(steady), DepthwiseKernel::kConvolution);
  EXPECT_EQ(auto_policy.For(partial), DepthwiseKernel::kDirect);
  EXPECT_EQ(auto_policy.Otherwise(), DepthwiseKernel::kDirect);
  const DepthwisePolicy no_steady(DepthwiseKernelMode::kAuto, {});
  EXPECT_EQ(no_steady.For(steady), DepthwiseKernel::kDirect);
  const DepthwisePolicy cudnn(DepthwiseKernelMode::kCudnn, {});
  EXPECT_EQ(cudnn.For(partial), DepthwiseKernel::kConvolution);
  EXPECT_EQ(cudnn.Otherwise(), DepthwiseKernel::kConvolution);
  const DepthwisePolicy direct(DepthwiseKernelMode::kDirect, {4, 3, 64, 64});
  EXPECT_EQ(direct.For(steady), DepthwiseKernel::kDirect);
  EXPECT_NE(auto_policy.Describe().find("4x3x64x64"), std::string::npos) << auto_policy.Describe();
  EXPECT_FALSE(ParseDepthwiseKernelMode("sometimes").ok());
  EXPECT_TRUE(ParseDepthwiseKernelMode("direct").ok());
}

TEST(DepthwiseKernel, SteadyTrainInputIsOneRanksSquareBatchUnlessShapesChange) {
  TrainOptions o;
  o.batch = 64;
  o.imgsz = 320;
  EXPECT_EQ(SteadyTrainInput(o, 2), (std::vector<int64_t>{32, 3, 320, 320}));
  o.rect = true;
  EXPECT_TRUE(SteadyTrainInput(o, 1).empty());
  o.rect = false;
  o.multi_scale = true;
  EXPECT_TRUE(SteadyTrainInput(o, 1).empty());
}

TEST(DepthwiseKernel, OnlyCudaDepthwiseConvsAreRerouted) {
  Conv dw = DWConv(8, 8, 3), plain(8, 8, 3);
  EXPECT_TRUE(HasDepthwiseConvs(*dw));
  EXPECT_FALSE(HasDepthwiseConvs(*plain));
  const at::Tensor x = at::randn({2, 8, 10, 10});
  EXPECT_FALSE(IsCudaDepthwise(*dw->conv, x));  // CPU: at::conv2d, whatever the scope
  EXPECT_TRUE(at::equal(Conv2dForward(*dw->conv, x), dw->conv->forward(x)));
}

// The cuDNN-free conv on the CPU (the plumbing: geometry, the bias's gradient, the flag put back) gives
// what at::conv2d gives, forward and backward.
TEST(DepthwiseKernel, ConvWithoutCudnnEqualsConv2dForwardAndBackward) {
  at::manual_seed(0);
  for (const bool with_bias : {true, false}) {
    const at::Tensor x0 = at::randn({2, 8, 11, 9}, at::kDouble);
    const at::Tensor w0 = at::randn({8, 1, 3, 3}, at::kDouble), b0 = at::randn({8}, at::kDouble);
    at::Tensor outs[2], grads[2][3];
    for (int k = 0; k < 2; ++k) {
      const at::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
      const at::Tensor b = with_bias ? b0.clone().requires_grad_() : at::Tensor();
      outs[k] = k == 0 ? at::conv2d(x, w, b, {2, 1}, {1, 1}, {1, 1}, 8)
                       : ConvWithoutCudnn(x, w, b, ConvGeometry{{2, 1}, {1, 1}, {1, 1}, 8});
      outs[k].square().sum().backward();
      grads[k][0] = x.grad();
      grads[k][1] = w.grad();
      if (with_bias) grads[k][2] = b.grad();
    }
    EXPECT_TRUE(at::allclose(outs[0], outs[1]));
    for (int i = 0; i < (with_bias ? 3 : 2); ++i) EXPECT_TRUE(at::allclose(grads[0][i], grads[1][i])) << i;
    EXPECT_TRUE(at::globalContext().userEnabledCuDNN());  // the backward's switch is put back
  }
}

TEST(DepthwiseKernel, DirectKernelMatchesCudnnOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (run on the GPU host)";
  for (int64_t stride : {1, 2}) {
    Conv dw = DWConv(64, 64, 3, stride);
    dw->to(at::kCUDA);
    const at::Tensor x0 = at::randn({5, 64, 40, 24}, at::kCUDA).to(at::kHalf).contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor outs[2], grads[2];
    for (int k = 0; k < 2; ++k) {
      DepthwiseKernelScope scope(k == 0 ? DepthwiseKernel::kConvolution : DepthwiseKernel::kDirect);
      const at::Tensor x = x0.detach().requires_grad_();
      dw->conv->weight.mutable_grad() = at::Tensor();
      at::Tensor y;
      {
        AutocastGuard autocast(at::kCUDA, true, at::kHalf);  // casts the weight for cuDNN; the direct path itself
        y = Conv2dForward(*dw->conv, x);
      }
      EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast));
      y.to(at::kFloat).square().sum().backward();
      outs[k] = y.to(at::kFloat);
      grads[k] = dw->conv->weight.grad().clone();
    }
    EXPECT_TRUE(at::allclose(outs[0], outs[1], 1e-2, 1e-2)) << "stride " << stride;
    EXPECT_TRUE(at::allclose(grads[0], grads[1], 5e-2, 5e-1)) << "stride " << stride;
  }
  EXPECT_TRUE(at::globalContext().userEnabledCuDNN());  // the direct backward put the flag back
  EXPECT_FALSE(DirectDepthwiseKernelFailed())
      << "the direct path fell back to cuDNN: the comparison above was cuDNN's with itself";
}

}  // namespace
}  // namespace yc::trainer
