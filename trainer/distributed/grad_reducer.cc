#include "trainer/distributed/grad_reducer.h"

#include <algorithm>
#include <exception>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace yc::trainer {
namespace {

std::string FirstLine(const std::exception& e) {
  std::string msg = e.what();
  const size_t nl = msg.find('\n');
  if (nl != std::string::npos) msg.resize(nl);
  return msg;
}

int64_t Bytes(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

}  // namespace

// Runs after a parameter's AccumulateGrad node, i.e. once its .grad holds this backward's gradient
// (a FunctionPostHook of our own: LambdaPostHook's constructor differs between LibTorch 1.13 and 2.x).
class GradReducer::Hook : public torch::autograd::FunctionPostHook {
 public:
  Hook(GradReducer* reducer, size_t index) : reducer_(reducer), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    reducer_->OnGradReady(index_);
    return outputs;
  }

 private:
  GradReducer* reducer_;
  size_t index_;
};

std::vector<std::vector<size_t>> AssignBuckets(const std::vector<at::Tensor>& params, int64_t first_bucket_bytes,
                                               int64_t bucket_bytes) {
  // One open bucket per (dtype, device); the first bucket of each kind has the smaller cap.
  using Key = std::tuple<int, int, int>;  // scalar type, device type, device index
  struct Open {
    std::vector<size_t> params;
    int64_t bytes = 0;
    bool first = true;
  };
  std::map<Key, Open> open;
  std::vector<std::pair<size_t, std::vector<size_t>>> result_with_pos;  // (first parameter, bucket)
  for (size_t k = params.size(); k-- > 0;) {
    const at::Tensor& p = params[k];
    const Key key{static_cast<int>(p.scalar_type()), static_cast<int>(p.device().type()),
                  static_cast<int>(p.device().index())};
    Open& o = open[key];
    o.params.push_back(k);
    o.bytes += Bytes(p);
    const int64_t cap = o.first ? first_bucket_bytes : bucket_bytes;
    if (o.bytes >= cap) {
      result_with_pos.emplace_back(o.params.front(), std::move(o.params));
      o = Open();
      o.first = false;
    }
  }
  for (auto& [key, o] : open) {
    if (!o.params.empty()) result_with_pos.emplace_back(o.params.front(), std::move(o.params));
  }
  // Launch order: by the bucket's first (highest-index) parameter, descending, which is the order
  // backward tends to finish them; identical on every rank because it depends on the list only.
  std::stable_sort(result_with_pos.begin(), result_with_pos.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::vector<size_t>> buckets;
  buckets.reserve(result_with_pos.size());
  for (auto& [pos, list] : result_with_pos) buckets.push_back(std::move(list));
  return buckets;
}

GradReducer::GradReducer(const torch::nn::Module& module, c10::intrusive_ptr<CommGroup> group,
                         GradReducerOptions options)
    : GradReducer(module.parameters(/*recurse=*/true), std::move(group), options) {}

GradReducer::GradReducer(std::vector<at::Tensor> params, c10::intrusive_ptr<CommGroup> group,
                         GradReducerOptions options)
    : group_(std::move(group)), options_(options) {
  // Trainable, each tensor once (a module reused in two places lists its parameters twice).
  std::unordered_set<const void*> seen;
  for (at::Tensor& p : params) {
    if (!p.defined() || !p.requires_grad()) continue;
    if (!seen.insert(p.unsafeGetTensorImpl()).second) continue;
    params_.push_back(std::move(p));
  }
  if (group_) {
    world_size_ = group_->getSize();
    Init();
  }
}

void GradReducer::Init() {
  const size_t n = params_.size();
  bucket_of_.assign(n, 0);
  slots_.resize(n);
  ready_.assign(n, 0);
  used_.assign(n, 0);
  at::NoGradGuard no_grad;
  const auto assignment = AssignBuckets(params_, options_.first_bucket_bytes, options_.bucket_bytes);
  buckets_.resize(assignment.size());
  for (size_t b = 0; b < assignment.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.params = assignment[b];
    int64_t numel = 0;
    for (size_t i : bucket.params) numel += params_[i].numel();
    const at::Tensor& first = params_[bucket.params.front()];
    bucket.flat = at::zeros({numel}, at::TensorOptions().dtype(first.scalar_type()).device(first.device()));
    int64_t offset = 0;
    for (size_t i : bucket.params) {
      const int64_t count = params_[i].numel();
      slots_[i] = bucket.flat.narrow(0, offset, count).view(params_[i].sizes());
      bucket_of_[i] = b;
      offset += count;
    }
    bucket.pending = bucket.params.size();
  }
  if (options_.find_unused_parameters && n > 0) {
    used_flags_ = at::zeros({static_cast<int64_t>(n)}, at::TensorOptions().dtype(at::kInt).device(params_[0].device()));
  }
  accumulators_.reserve(n);
  hook_keys_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // The accumulator is held weakly by the parameter; keeping it alive keeps the hook attached.
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!acc) {
      init_error_ = Status::InvalidArgument("grad reducer: parameter " + std::to_string(i) +
                                       " is not a leaf tensor; its gradient cannot be hooked");
      continue;
    }
    hook_keys_.push_back(acc->add_post_hook(std::make_unique<Hook>(this, i)));
    accumulators_.push_back(std::move(acc));
  }
}

GradReducer::~GradReducer() {
  for (size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(hook_keys_[k]);
  // A buffer must not be freed under a collective still writing it.
  for (Bucket& bucket : buckets_) {
    if (!bucket.work) continue;
    try {
      bucket.work->wait();
    } catch (const std::exception&) {
      // Already failing; the destructor has nobody to report to.
    }
  }
}

void GradReducer::set_require_sync(bool require_sync) {
  std::lock_guard<std::mutex> lock(mu_);
  require_sync_ = require_sync;
}

void GradReducer::FillSlot(size_t index) {
  const at::Tensor& grad = params_[index].grad();
  if (grad.defined()) {
    slots_[index].copy_(grad);  // copy_ reads any layout (channels_last weights)
  } else {
    slots_[index].zero_();
  }
}

void GradReducer::Launch(size_t b, bool from_hook) {
  Bucket& bucket = buckets_[b];
  std::vector<at::Tensor> io{bucket.flat};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  bucket.work = group_->allreduce(io, options);
  ++launched_total_;
  if (from_hook) ++launched_in_hooks_;
}

void GradReducer::LaunchInOrder(bool from_hook) {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) Launch(next_launch_++, from_hook);
}

void GradReducer::OnGradReady(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  used_[index] = 1;
  if (!require_sync_ || !error_.ok()) return;
  if (ready_[index]) {
    error_ = Status::InvalidArgument("grad reducer: gradient of parameter " + std::to_string(index) +
                                     " arrived twice before Finish() (two synced backward passes?)");
    return;
  }
  try {
    at::NoGradGuard no_grad;
    FillSlot(index);
    ready_[index] = 1;
    if (--buckets_[bucket_of_[index]].pending == 0) LaunchInOrder(/*from_hook=*/true);
  } catch (const std::exception& e) {
    // Throwing out of a hook would abort backward half-way on this rank only; keep going and report.
    error_ = Status::IOError("grad reducer: all-reduce launch failed: " + FirstLine(e));
  }
}

Status GradReducer::WaitAll() {
  Status status;
  for (Bucket& bucket : buckets_) {
    if (!bucket.work) continue;
    try {
      bucket.work->wait();
    } catch (const std::exception& e) {
      if (status.ok()) status = Status::IOError("grad reducer: all-reduce failed: " + FirstLine(e));
    }
    bucket.work.reset();
  }
  return status;
}

void GradReducer::ResetWindow() {
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(used_.begin(), used_.end(), 0);
  for (Bucket& bucket : buckets_) bucket.pending = bucket.params.size();
  next_launch_ = 0;
  error_ = Status::OK();
}

Status GradReducer::Finish() {
  if (!active()) return Status::OK();
  std::lock_guard<std::mutex> lock(mu_);
  if (!init_error_.ok()) return init_error_;
  if (!require_sync_) {
    return Status::InvalidArgument(
        "grad reducer: Finish() after a no-sync backward; set_require_sync(true) before the backward that "
        "precedes the optimizer step");
  }
  Status status = error_;
  std::vector<int32_t> global_used;
  if (status.ok()) {
    try {
      at::NoGradGuard no_grad;
      // Parameters this rank did not use: their current .grad (earlier no-sync micro-batches) or zeros.
      for (size_t i = 0; i < params_.size(); ++i) {
        if (ready_[i]) continue;
        FillSlot(i);
        ready_[i] = 1;
        --buckets_[bucket_of_[i]].pending;
      }
      LaunchInOrder(/*from_hook=*/false);
      if (used_flags_.defined()) {
        at::Tensor host = at::from_blob(used_.data(), {static_cast<int64_t>(used_.size())}, at::kByte);
        used_flags_.copy_(host);  // byte -> int32 (Gloo and NCCL both reduce int32)
        std::vector<at::Tensor> io{used_flags_};
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp(c10d::ReduceOp::MAX);
        group_->allreduce(io, options)->wait();
        at::Tensor flags = used_flags_.to(at::kCPU);
        global_used.assign(flags.data_ptr<int32_t>(), flags.data_ptr<int32_t>() + flags.numel());
      }
    } catch (const std::exception& e) {
      status = Status::IOError("grad reducer: all-reduce failed: " + FirstLine(e));
    }
  }
  // Wait even after a failure: a buffer still under a collective must not be touched again.
  const Status waited = WaitAll();
  if (status.ok()) status = waited;
  if (status.ok()) {
    try {
      at::NoGradGuard no_grad;
      if (options_.average && world_size_ > 1) {
        for (Bucket& bucket : buckets_) bucket.flat.div_(static_cast<double>(world_size_));
      }
      for (size_t i = 0; i < params_.size(); ++i) {
        if (!global_used.empty() && global_used[i] == 0) continue;  // nobody used it: leave .grad alone
        at::Tensor& grad = params_[i].mutable_grad();
        if (!grad.defined()) grad = at::empty_like(params_[i]);  // used elsewhere, not here
        grad.copy_(slots_[i]);
      }
    } catch (const std::exception& e) {
      status = Status::IOError("grad reducer: writing gradients back failed: " + FirstLine(e));
    }
  }
  ResetWindow();
  return status;
}

}  // namespace yc::trainer
