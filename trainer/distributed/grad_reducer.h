// Gradient all-reduce for data-parallel training, the part of PyTorch's DDP Reducer a C++ loop needs:
// trainable parameters are grouped into buckets in reverse registration order (roughly the order
// backward produces their gradients); a post-hook on each parameter's AccumulateGrad node copies the
// finished gradient into the bucket's persistent flat buffer, and once every gradient of a bucket is in
// an asynchronous all-reduce of that buffer starts, so communication overlaps the rest of backward.
// Finish() waits for the buckets, divides by the world size (DDP's average) and copies the results back
// into .grad, after which every rank holds the same gradients.
//
//   GradReducer reducer(*model, ctx->group());         // after model->to(device) and BroadcastModule
//   reducer.set_require_sync(is_last_micro_batch);     // before backward; false = no_sync()
//   (loss * ctx->world_size()).backward();              // Ultralytics' DDP loss scaling (see below)
//   if (is_last_micro_batch) { YC_RETURN_IF_ERROR(reducer.Finish()); unscale; clip; step; zero_grad; }
//
// Averaging: like DDP, Finish() averages, so the gradient is the mean of the ranks' gradients.
// Ultralytics multiplies its (sum-reduced, x batch) loss by world_size under DDP; doing the same here
// gives the gradient of the summed global-batch loss, exactly as Ultralytics trains.
//
// Collective order: buckets are launched strictly in index order on every rank (a ready bucket waits for
// its predecessors), so ranks never disagree about which buffer a collective carries.
// Unused parameters: a parameter whose hook never fired (not used in this rank's forward) contributes
// its current .grad, or zeros, when Finish() launches the remaining buckets: nothing waits for a
// gradient that will not come, so a rank that skips a branch never hangs the others. With
// find_unused_parameters, one extra small all-reduce tells which parameters no rank used; their .grad
// is then left as it was (undefined stays undefined, as with DDP), so the optimizer skips them.
// Every rank must call Finish() after each synced backward, as every rank must call backward().
//
// Threads: hooks run on the autograd engine's thread for the parameters' device (the caller's thread on
// CPU); the copy and the launch are ordered on that thread's current stream, which NCCL waits for.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/nn/module.h>

#include "base/status.h"
#include "trainer/distributed/distributed.h"

namespace torch::autograd {
struct Node;
}

namespace yc::trainer {

struct GradReducerOptions {
  int64_t bucket_bytes = 25 << 20;      // DDP's bucket_cap_mb default
  int64_t first_bucket_bytes = 1 << 20;  // DDP's smaller first bucket: the first launch comes early
  bool average = true;                   // divide by world size (DDP); false leaves the sum
  bool find_unused_parameters = false;   // see above; costs one tiny all-reduce per step
};

// Parameter indices (into the list given) of each bucket, in launch order: reverse list order, split by
// dtype and device, a bucket closed once its bytes reach the cap (a larger parameter gets its own).
std::vector<std::vector<size_t>> AssignBuckets(const std::vector<at::Tensor>& params, int64_t first_bucket_bytes,
                                               int64_t bucket_bytes);

class GradReducer {
 public:
  // The module's trainable parameters (requires_grad), deduplicated, in registration order. A null
  // group (world size 1) makes an inactive reducer: no hooks, Finish() returns at once.
  GradReducer(const torch::nn::Module& module, c10::intrusive_ptr<CommGroup> group,
              GradReducerOptions options = {});
  GradReducer(std::vector<at::Tensor> params, c10::intrusive_ptr<CommGroup> group, GradReducerOptions options = {});
  ~GradReducer();  // removes the hooks; waits for collectives still in flight
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  bool active() const { return static_cast<bool>(group_); }

  // true (default): the next backward reduces. false: gradients only accumulate locally (DDP's
  // no_sync()); set it back to true for the micro-batch that precedes an optimizer step.
  void set_require_sync(bool require_sync);
  bool require_sync() const { return require_sync_; }

  // After a synced backward: launches what backward did not (unused parameters' buckets), waits for all,
  // averages, writes .grad. A communication failure or misuse (Finish without a synced backward,
  // a second backward before Finish) is a Status, never a throw; the gradients are then not usable.
  Status Finish();

  size_t num_buckets() const { return buckets_.size(); }
  const std::vector<size_t>& bucket_params(size_t b) const { return buckets_[b].params; }
  const std::vector<at::Tensor>& params() const { return params_; }
  // Counters since construction (tests and logs): all-reduces launched, and how many of those were
  // launched from a hook, i.e. while backward was still running.
  int64_t collectives_launched() const { return launched_total_; }
  int64_t launched_during_backward() const { return launched_in_hooks_; }

 private:
  struct Bucket {
    std::vector<size_t> params;
    at::Tensor flat;  // persistent buffer, reused every step
    size_t pending = 0;  // gradients not yet copied in, this sync window
    c10::intrusive_ptr<c10d::Work> work;
  };
  class Hook;

  void Init();
  void OnGradReady(size_t index);  // from the AccumulateGrad post-hook
  void FillSlot(size_t index);
  void LaunchInOrder(bool from_hook);
  void Launch(size_t b, bool from_hook);
  void ResetWindow();
  Status WaitAll();

  std::vector<at::Tensor> params_;
  c10::intrusive_ptr<CommGroup> group_;
  GradReducerOptions options_;
  int world_size_ = 1;

  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;     // per parameter
  std::vector<at::Tensor> slots_;     // per parameter: its shaped view into the bucket buffer
  std::vector<uint8_t> ready_;        // copied into its bucket in this sync window
  std::vector<uint8_t> used_;         // its hook fired since the last Finish
  at::Tensor used_flags_;             // find_unused_parameters: per-parameter int32 on the group's device
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive: they carry the hooks
  std::vector<uintptr_t> hook_keys_;

  std::mutex mu_;
  bool require_sync_ = true;
  size_t next_launch_ = 0;  // buckets launch strictly in index order
  Status error_;            // first failure inside a hook, reported by Finish()
  Status init_error_;       // a parameter that cannot be hooked
  int64_t launched_total_ = 0;
  int64_t launched_in_hooks_ = 0;
};

}  // namespace yc::trainer
