#include "trainer/sync_batch_norm.h"

#include <torch/autograd.h>

#include "trainer/distributed.h"
#include "trainer/modules.h"

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

}  // namespace

at::Tensor StatsReducer::SumAcrossRanks(const at::Tensor& t) { return AllReduceSumFn::apply(t, this); }

void StatsReducer::SumInPlace(at::Tensor& t) {
  Status st = dist_.AllReduceSumStreamOrdered(t);
  // Inside autograd there is no Status to return: a failed collective stops the step like any op error.
  TORCH_CHECK(st.ok(), "SyncBatchNorm: ", st.ToString());
}

int StatsReducer::world_size() const { return dist_.world_size(); }

at::Tensor SyncBatchNorm2d(const at::Tensor& x, torch::nn::BatchNorm2dImpl& bn, StatsReducer& reducer) {
  TORCH_CHECK(x.dim() == 4, "SyncBatchNorm2d: expected (N, C, H, W)");
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
    const double m = bn.options.momentum().value_or(0.1);
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
