#include "trainer/model/sync_batch_norm.h"

#include <torch/autograd.h>

#include "trainer/distributed/distributed.h"
#include "trainer/model/blocks.h"

namespace yc::trainer {

namespace {

// all_reduce(SUM) as an autograd function. The reducer travels in saved_data as an integer: autograd
// keeps only IValues there, and the reducer outlives the graph (it belongs to the run).
struct AllReduceSumFn : public torch::autograd::Function<AllReduceSumFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, StatsReducer* reducer) {
    ctx->saved_data["reducer"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(reducer));
    at::Tensor y = x.detach().clone();
    reducer->SumInPlace(y);
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* reducer = reinterpret_cast<StatsReducer*>(static_cast<intptr_t>(ctx->saved_data["reducer"].toInt()));
    at::Tensor g = grads[0].contiguous().clone();
    reducer->SumInPlace(g);
    return {g, at::Tensor()};
  }
};

// The CUDA path, as PyTorch's SyncBatchNorm: the fused batch-norm kernels (any dtype, channels_last kept)
// with two small collectives per layer and step, one for the statistics, one for the gradient sums.
// Saved for backward: input, weight, global mean and invstd, per-rank counts.
struct FusedSyncBnFn : public torch::autograd::Function<FusedSyncBnFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& running_mean, const at::Tensor& running_var,
                            double momentum, double eps, StatsReducer* reducer) {
    const int64_t c = x.size(1);
    auto stats = at::batch_norm_stats(x, eps);  // this rank's mean and invstd (fp32)
    const at::Tensor& mean = std::get<0>(stats);
    const at::Tensor count = at::full({1}, static_cast<double>(x.numel() / c), mean.options());
    // All ranks' [mean, invstd, count] rows: an all-gather done as a sum of one-row-each tensors.
    at::Tensor rows = at::zeros({reducer->world_size(), 2 * c + 1}, mean.options());
    rows.select(0, reducer->rank()).copy_(at::cat({mean, std::get<1>(stats), count}));
    reducer->SumInPlace(rows);
    const at::Tensor counts = rows.narrow(1, 2 * c, 1).reshape({-1});
    auto global = at::batch_norm_gather_stats_with_counts(x, rows.narrow(1, 0, c), rows.narrow(1, c, c), running_mean,
                                                          running_var, momentum, eps, counts);
    ctx->save_for_backward({x, weight, std::get<0>(global), std::get<1>(global), counts.to(at::kInt)});
    ctx->saved_data["reducer"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(reducer));
    return at::batch_norm_elemt(x, weight, bias, std::get<0>(global), std::get<1>(global), eps);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* reducer = reinterpret_cast<StatsReducer*>(static_cast<intptr_t>(ctx->saved_data["reducer"].toInt()));
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1], &mean = saved[2], &invstd = saved[3], &counts = saved[4];
    at::Tensor dy = grads[0];
    if (!dy.is_contiguous(x.suggest_memory_format())) dy = dy.contiguous(x.suggest_memory_format());
    auto reduced = at::batch_norm_backward_reduce(dy, x, mean, invstd, weight, true, true, true);
    const int64_t c = x.size(1);
    at::Tensor sums = at::cat({std::get<0>(reduced), std::get<1>(reduced)});  // sum_dy, sum_dy_xmu
    reducer->SumInPlace(sums);
    at::Tensor dx = at::batch_norm_backward_elemt(dy, x, mean, invstd, weight, sums.narrow(0, 0, c),
                                                  sums.narrow(0, c, c), counts);
    // Weight and bias gradients stay this rank's: the data-parallel gradient reduction handles them.
    return {dx, std::get<2>(reduced), std::get<3>(reduced), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor StatsReducer::SumAcrossRanks(const at::Tensor& t) { return AllReduceSumFn::apply(t, this); }

void StatsReducer::SumInPlace(at::Tensor& t) {
  Status st = dist_.AllReduceSumStreamOrdered(t);
  // Inside autograd there is no Status to return: a failed collective stops the step like any op error.
  TORCH_CHECK(st.ok(), "SyncBatchNorm: ", st.ToString());
}

int StatsReducer::world_size() const { return dist_.world_size(); }
int StatsReducer::rank() const { return dist_.rank(); }

at::Tensor SyncBatchNorm2d(const at::Tensor& x, torch::nn::BatchNorm2dImpl& bn, StatsReducer& reducer) {
  TORCH_CHECK(x.dim() == 4, "SyncBatchNorm2d: expected (N, C, H, W)");
  const double momentum = bn.options.momentum().value_or(0.1);
  if (x.is_cuda() && bn.options.affine() && bn.options.track_running_stats()) {
    at::Tensor y = FusedSyncBnFn::apply(x.contiguous(x.suggest_memory_format()), bn.weight, bn.bias, bn.running_mean,
                                        bn.running_var, momentum, bn.options.eps(), &reducer);
    at::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);
    return y;
  }
  // Elsewhere (CPU, where those kernels do not exist): composed of tensor ops, autograd through the sums.
  const int64_t c = x.size(1);
  const at::Tensor xf = x.to(at::kFloat);
  // [sum (C), sum of squares (C), count (1)] in one collective.
  const at::Tensor count = at::full({1}, static_cast<double>(x.numel() / c), xf.options());
  const at::Tensor local = at::cat({xf.sum({0, 2, 3}), xf.pow(2).sum({0, 2, 3}), count});
  const at::Tensor global = reducer.SumAcrossRanks(local);
  const at::Tensor n = global.narrow(0, 2 * c, 1);
  const at::Tensor mean = global.narrow(0, 0, c) / n;
  const at::Tensor var = (global.narrow(0, c, c) / n - mean.pow(2)).clamp_min(0);  // biased, as BN normalises
  const double eps = bn.options.eps();
  const at::Tensor invstd = (var + eps).rsqrt();
  at::Tensor y = (xf - mean.view({1, c, 1, 1})) * invstd.view({1, c, 1, 1});
  if (bn.options.affine()) y = y * bn.weight.view({1, c, 1, 1}) + bn.bias.view({1, c, 1, 1});
  if (bn.options.track_running_stats()) {
    at::NoGradGuard no_grad;
    const double m = momentum;
    const at::Tensor unbiased = var.detach() * (n.detach() / (n.detach() - 1).clamp_min(1));
    bn.running_mean.mul_(1 - m).add_(mean.detach(), m);
    bn.running_var.mul_(1 - m).add_(unbiased, m);
    bn.num_batches_tracked.add_(1);
  }
  return y;
}

void EnableSyncBatchNorm(torch::nn::Module& model, std::shared_ptr<StatsReducer> reducer) {
  for (const auto& m : model.modules(/*include_self=*/true)) {
    if (auto* conv = dynamic_cast<ConvImpl*>(m.get())) conv->set_sync_bn(reducer);
  }
}

}  // namespace yc::trainer
