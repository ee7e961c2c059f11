// SyncBatchNorm for data-parallel training (`yolocache-train train --sync-bn`, YOLOv5's flag): in training
// mode each BatchNorm normalises with the statistics of the global batch, summed across ranks, instead of
// its rank's share; with the loss normaliser also taken over the global batch (DetectionLoss::
// set_global_normaliser) N ranks then compute what one process does with the same global batch.
//
// The model keeps its torch::nn::BatchNorm2d modules (same parameter and buffer names, so checkpoints do
// not change); a Conv whose sync reducer is set calls SyncBatchNorm2d instead of bn->forward while
// training. Eval mode (validation, EMA, inference) uses the running statistics as always.
#pragma once

#include <memory>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>

namespace yc::trainer {

class DistContext;

// Sums a tensor over all ranks. Differentiable: the gradient of a sum over ranks is the sum over ranks of
// the gradients, so backward sums too.
class StatsReducer {
 public:
  explicit StatsReducer(DistContext& dist) : dist_(dist) {}
  at::Tensor SumAcrossRanks(const at::Tensor& t);
  // Without autograd (normalisers, counts).
  void SumInPlace(at::Tensor& t);
  int world_size() const;
  int rank() const;

 private:
  DistContext& dist_;
};

// Batch normalisation of `x` (N, C, H, W) with the global batch's per-channel mean and biased variance,
// `bn`'s affine parameters, and `bn`'s running statistics updated as torch does (unbiased variance,
// momentum, num_batches_tracked). On CUDA (affine, tracking BatchNorm): PyTorch's fused SyncBatchNorm
// kernels, output in x's dtype and memory format. Elsewhere: composed tensor ops in fp32, returns fp32.
at::Tensor SyncBatchNorm2d(const at::Tensor& x, torch::nn::BatchNorm2dImpl& bn, StatsReducer& reducer);

// Points every Conv of `model` at `reducer` (nullptr: back to per-rank statistics).
void EnableSyncBatchNorm(torch::nn::Module& model, std::shared_ptr<StatsReducer> reducer);

}  // namespace yc::trainer
