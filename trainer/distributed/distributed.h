// Multi-process data-parallel set-up on c10d (LibTorch has no C++ DistributedDataParallel): read the
// launcher's environment, rendezvous over a TCPStore, create a Gloo (CPU) or NCCL (CUDA) process group,
// and offer the few collectives a YOLO training loop needs outside the gradient path (GradReducer does
// that one): broadcast a model from rank 0, all-reduce a small tensor, barrier.
//
//   auto env = yc::trainer::DistEnvFromEnvironment();           // RANK, WORLD_SIZE, ... (torchrun)
//   auto ctx = yc::trainer::InitDistributed(*env, DistBackend::kNccl);  // world 1: a no-op context
//   ctx.value()->BroadcastModule(*model);                      // identical start on every rank
//   if (ctx.value()->is_main()) log(...);                      // rank-0-only logging / saving / val
//
// Store: under torchrun (TORCHELASTIC_USE_AGENT_STORE=True) the elastic agent already hosts a TCPStore on
// MASTER_ADDR:MASTER_PORT, so every rank connects to it as a client, with keys namespaced by restart
// attempt; otherwise (a plain shell launcher) rank 0 hosts the store there and the others connect. This
// is what torch.distributed's env:// rendezvous does (distributed/rendezvous.py _create_c10d_store).
//
// Version notes: LibTorch 1.13 process groups derive from c10d::ProcessGroup, 2.x ones from c10d::Backend;
// CommGroup names whichever this build has. NCCL is compiled only when LibTorch was built with it
// (USE_C10D_NCCL) and CMake found nccl.h (YOLOCACHE_WITH_NCCL); elsewhere asking for it is Unsupported.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/nn/module.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include "base/status.h"

namespace yc::trainer {

#if TORCH_VERSION_MAJOR >= 2
using CommGroup = c10d::Backend;  // ProcessGroupGloo / ProcessGroupNCCL derive from it
#else
using CommGroup = c10d::ProcessGroup;
#endif

enum class DistBackend { kGloo, kNccl };
const char* DistBackendName(DistBackend backend);  // "gloo" | "nccl"
// "gloo" | "nccl" (case-insensitive).
Result<DistBackend> ParseDistBackend(const std::string& name);
// Whether this build can create an NCCL group.
bool NcclAvailable();

// Ultralytics gives DDP 3 hours (first-epoch caching and validation on rank 0 stall the others).
constexpr std::chrono::milliseconds kDefaultDistTimeout = std::chrono::hours(3);

// What the launcher tells each process (torchrun --no-python, or a shell loop exporting the same).
struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // this rank's index among the ranks of its host
  int local_world_size = 1;  // ranks on this host (LOCAL_WORLD_SIZE; unset: WORLD_SIZE, one host)
  // The CUDA device an NCCL rank runs on: -1 is cuda:LOCAL_RANK (torchrun's convention); the trainer sets
  // it when `device=0,1` gives each local rank its device (trainer/runtime/device_list.h).
  int cuda_device = -1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool agent_store = false;  // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent hosts the store
  int restart_count = 0;     // TORCHELASTIC_RESTART_COUNT: namespaces the store keys of one attempt
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_USE_AGENT_STORE and TORCHELASTIC_RESTART_COUNT through `lookup` (null for unset). No
// WORLD_SIZE: a single process. With WORLD_SIZE > 1, RANK, MASTER_ADDR and MASTER_PORT are required;
// LOCAL_RANK defaults to RANK and LOCAL_WORLD_SIZE to WORLD_SIZE (one host). Malformed or out-of-range
// values are an InvalidArgument naming the variable.
Result<DistEnv> DistEnvFromVariables(const std::function<const char*(const char*)>& lookup);
Result<DistEnv> DistEnvFromEnvironment();  // ::getenv

enum class ReduceKind { kSum, kAvg, kMin, kMax };

class DistContext {
 public:
  // world_size 1: no group, every collective returns at once and leaves its tensors alone.
  static std::unique_ptr<DistContext> Local(int local_rank = 0);
  ~DistContext();
  DistContext(const DistContext&) = delete;
  DistContext& operator=(const DistContext&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  bool distributed() const { return world_size_ > 1; }
  // Rank 0: the one that logs, validates, saves checkpoints (Ultralytics' RANK in {-1, 0}).
  bool is_main() const { return rank_ == 0; }
  DistBackend backend() const { return backend_; }
  // Where the group's collectives want their tensors: CPU for Gloo, cuda:local_rank for NCCL.
  at::Device device() const { return device_; }
  // Null when world_size == 1. Hand it to GradReducer.
  const c10::intrusive_ptr<CommGroup>& group() const { return group_; }

  // Copies rank `root`'s parameters and/or buffers into every rank's module of the same structure.
  // Flattened per dtype, so one collective per dtype. A structure mismatch between ranks is found by a
  // small all-reduce first and reported on every rank (no hang, no garbage).
  Status BroadcastModule(torch::nn::Module& module, int root = 0, bool parameters = true, bool buffers = true);
  // Rank `root`'s tensors into every rank's (same shapes and dtypes on all ranks).
  Status Broadcast(std::vector<at::Tensor>& tensors, int root = 0);
  // In place, blocking. Meant for small tensors (found_inf MAX, loss items SUM/AVG, metric counters):
  // a tensor not on device() or not contiguous is staged through a temporary. kAvg needs a floating type.
  Status AllReduce(at::Tensor& tensor, ReduceKind kind);
  // Sum in place, ordered on the CUDA stream instead of blocking the host where the backend allows it: on
  // NCCL the current stream waits for the collective (Work::synchronize(), whatever TORCH_NCCL_BLOCKING_WAIT
  // says), so the host keeps queueing kernels (SyncBatchNorm: two collectives per BatchNorm layer and
  // step). Gloo, or a tensor that is not on device() and contiguous: as AllReduce.
  Status AllReduceSumStreamOrdered(at::Tensor& tensor);
  Status Barrier();

 private:
  friend class DistContextFactory;
  DistContext() = default;
  Status Wrap(const char* what, const std::function<void()>& fn) const;

  int rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  DistBackend backend_ = DistBackend::kGloo;
  at::Device device_ = at::Device(at::kCPU);
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<CommGroup> group_;
};

// Rendezvous and group creation. world_size 1 returns Local(env.local_rank) without touching the
// network. NCCL also makes cuda:env.cuda_device (-1: cuda:local_rank) the current device. Failures (port taken, peer never came,
// timeout, no NCCL in this build) are a Status naming the address and the reason.
Result<std::unique_ptr<DistContext>> InitDistributed(const DistEnv& env, DistBackend backend,
                                                     std::chrono::milliseconds timeout = kDefaultDistTimeout);
// Same on a store the caller made (FileStore, HashStore for threads in one process, ...).
Result<std::unique_ptr<DistContext>> InitDistributedWithStore(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                              int world_size, int local_rank, DistBackend backend,
                                                              std::chrono::milliseconds timeout = kDefaultDistTimeout);

}  // namespace yc::trainer
