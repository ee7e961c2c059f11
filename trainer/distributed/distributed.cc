#include "trainer/distributed/distributed.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <exception>
#include <map>
#include <utility>

#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
// The pip wheels of LibTorch ship ProcessGroupGloo.hpp without the gloo/ headers it includes: such a
// build (the GPU host's) has the NCCL backend only; Debian's (CI) has Gloo.
#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define YC_DIST_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#else
#define YC_DIST_GLOO 0
#endif
#include <torch/csrc/distributed/c10d/Types.hpp>

#if defined(USE_C10D_NCCL) && defined(YOLOCACHE_WITH_NCCL)
#define YC_DIST_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#else
#define YC_DIST_NCCL 0
#endif

#include "base/ascii.h"

namespace yc::trainer {
namespace {

// Strict integer parse: the whole string, in [lo, hi].
Result<int> ParseIntVar(const char* name, const char* value, int lo, int hi) {
  const std::string s(value);
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return Status::InvalidArgument(std::string(name) + ": not an integer: '" + s + "'");
  }
  if (v < lo || v > hi) {
    return Status::InvalidArgument(std::string(name) + ": " + s + " out of range [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "]");
  }
  return v;
}

// c10d reports everything (refused connection, timeout, peer gone, bad tensor) by throwing.
std::string What(const std::exception& e) {
  std::string msg = e.what();
  // c10::Error appends a C++ backtrace after the first line; the first line is the reason.
  const size_t nl = msg.find('\n');
  if (nl != std::string::npos) msg.resize(nl);
  return msg;
}

c10d::ReduceOp ToReduceOp(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kMin:
      return c10d::ReduceOp(c10d::ReduceOp::MIN);
    case ReduceKind::kMax:
      return c10d::ReduceOp(c10d::ReduceOp::MAX);
    case ReduceKind::kSum:
    case ReduceKind::kAvg:  // Gloo has no AVG: SUM, then divide
      break;
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

#if YC_DIST_GLOO
bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

// Gloo binds one TCP device per process. GLOO_SOCKET_IFNAME (comma-separated) wins, as in PyTorch;
// a loopback master means a one-host run, where binding 127.0.0.1 avoids a hostname that may resolve
// to an unreachable address; otherwise Gloo resolves this host's name.
Result<std::vector<std::shared_ptr<::gloo::transport::Device>>> GlooDevices(const std::string& master_addr) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  try {
    const char* ifnames = std::getenv("GLOO_SOCKET_IFNAME");
    if (ifnames != nullptr && *ifnames != '\0') {
      std::string list(ifnames);
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string name = list.substr(start, comma - start);
        if (!name.empty()) devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
        start = comma + 1;
      }
    } else if (IsLoopback(master_addr)) {
      devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
  } catch (const std::exception& e) {
    return Status::IOError("gloo device: " + What(e));
  }
  if (devices.empty()) return Status::InvalidArgument("GLOO_SOCKET_IFNAME: no interface named");
  return devices;
}
#endif  // YC_DIST_GLOO

}  // namespace

// Builds contexts; a friend so the context's fields stay private.
class DistContextFactory {
 public:
  static std::unique_ptr<DistContext> Local(int local_rank) {
    std::unique_ptr<DistContext> ctx(new DistContext());
    ctx->local_rank_ = local_rank;
    return ctx;
  }

  static Result<std::unique_ptr<DistContext>> Create(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                     int local_rank, int cuda_device, DistBackend backend,
                                                     std::chrono::milliseconds timeout,
                                                     const std::string& gloo_host) {
    if (world_size < 1 || rank < 0 || rank >= world_size || local_rank < 0) {
      return Status::InvalidArgument("distributed: rank " + std::to_string(rank) + " of world size " +
                                     std::to_string(world_size) + " (local rank " + std::to_string(local_rank) +
                                     ") is not valid");
    }
    if (world_size == 1) return Local(local_rank);
    if (!store) return Status::InvalidArgument("distributed: no store");
    std::unique_ptr<DistContext> ctx(new DistContext());
    ctx->rank_ = rank;
    ctx->world_size_ = world_size;
    ctx->local_rank_ = local_rank;
    ctx->backend_ = backend;
    ctx->store_ = store;
    const std::string where = "distributed (" + std::string(DistBackendName(backend)) + ", rank " +
                              std::to_string(rank) + "/" + std::to_string(world_size) + ")";
    if (backend == DistBackend::kGloo) {
#if YC_DIST_GLOO
      YC_ASSIGN_OR_RETURN(auto devices, GlooDevices(gloo_host));
      try {
        auto options = c10d::ProcessGroupGloo::Options::create(timeout);
        options->devices = std::move(devices);
        // The constructor connects the full mesh through the store: it returns once every rank is in.
        ctx->group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
      } catch (const std::exception& e) {
        return Status::IOError(where + ": " + What(e));
      }
      return ctx;
#else
      return Status::Unsupported(where + ": this LibTorch has no Gloo headers (pip wheels); use --backend nccl");
#endif
    }
#if YC_DIST_NCCL
    try {
      // Ultralytics sets this: a dead peer becomes an exception in wait() after the timeout rather
      // than a hang. Kept when the user set it either way.
      ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
      const auto index = static_cast<c10::DeviceIndex>(cuda_device >= 0 ? cuda_device : local_rank);
      c10::cuda::set_device(index);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      ctx->group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
      ctx->device_ = at::Device(at::kCUDA, index);
    } catch (const std::exception& e) {
      return Status::IOError(where + ": " + What(e));
    }
    return ctx;
#else
    return Status::Unsupported(where + ": this build has no NCCL (LibTorch without USE_C10D_NCCL, or nccl.h not "
                                       "found at configure time)");
#endif
  }

  static void Shutdown(DistContext& ctx) {
#if YC_DIST_NCCL && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3))
    // 2.x warns when an NCCL group is destroyed without shutdown (communicators would be leaked).
    if (ctx.backend_ == DistBackend::kNccl && ctx.group_) {
      try {
        static_cast<c10d::ProcessGroupNCCL*>(ctx.group_.get())->shutdown();
      } catch (const std::exception&) {
        // Tearing down after a failure: nothing left to report to.
      }
    }
#endif
    ctx.group_.reset();
    ctx.store_.reset();
  }
};

const char* DistBackendName(DistBackend backend) { return backend == DistBackend::kNccl ? "nccl" : "gloo"; }

Result<DistBackend> ParseDistBackend(const std::string& name) {
  const std::string n = AsciiLower(name);
  if (n == "gloo") return DistBackend::kGloo;
  if (n == "nccl") return DistBackend::kNccl;
  return Status::InvalidArgument("distributed backend: '" + name + "' is not gloo or nccl");
}

bool NcclAvailable() { return YC_DIST_NCCL != 0; }

Result<DistEnv> DistEnvFromVariables(const std::function<const char*(const char*)>& lookup) {
  DistEnv env;
  const char* world = lookup("WORLD_SIZE");
  if (world == nullptr || *world == '\0') return env;  // not launched distributed
  YC_ASSIGN_OR_RETURN(auto w, ParseIntVar("WORLD_SIZE", world, 1, 1 << 20));
  env.world_size = w;
  const char* rank = lookup("RANK");
  if (rank == nullptr || *rank == '\0') {
    if (env.world_size > 1) return Status::InvalidArgument("RANK: not set while WORLD_SIZE=" + std::string(world));
  } else {
    YC_ASSIGN_OR_RETURN(auto r, ParseIntVar("RANK", rank, 0, env.world_size - 1));
    env.rank = r;
  }
  env.local_rank = env.rank;
  if (const char* local = lookup("LOCAL_RANK"); local != nullptr && *local != '\0') {
    YC_ASSIGN_OR_RETURN(auto l, ParseIntVar("LOCAL_RANK", local, 0, env.world_size - 1));
    env.local_rank = l;
  }
  env.local_world_size = env.world_size;
  if (const char* local_world = lookup("LOCAL_WORLD_SIZE"); local_world != nullptr && *local_world != '\0') {
    YC_ASSIGN_OR_RETURN(auto lw, ParseIntVar("LOCAL_WORLD_SIZE", local_world, 1, env.world_size));
    if (env.local_rank >= lw) {
      return Status::InvalidArgument("LOCAL_RANK " + std::to_string(env.local_rank) + " is not below LOCAL_WORLD_SIZE " +
                                     std::to_string(lw));
    }
    env.local_world_size = lw;
  }
  if (const char* restart = lookup("TORCHELASTIC_RESTART_COUNT"); restart != nullptr && *restart != '\0') {
    YC_ASSIGN_OR_RETURN(auto c, ParseIntVar("TORCHELASTIC_RESTART_COUNT", restart, 0, 1 << 30));
    env.restart_count = c;
  }
  if (const char* agent = lookup("TORCHELASTIC_USE_AGENT_STORE"); agent != nullptr) {
    env.agent_store = AsciiLower(agent) == "true";  // torchrun writes str(bool)
  }
  if (env.world_size == 1) return env;
  const char* addr = lookup("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    return Status::InvalidArgument("MASTER_ADDR: not set while WORLD_SIZE=" + std::string(world));
  }
  env.master_addr = addr;
  const char* port = lookup("MASTER_PORT");
  if (port == nullptr || *port == '\0') {
    return Status::InvalidArgument("MASTER_PORT: not set while WORLD_SIZE=" + std::string(world));
  }
  YC_ASSIGN_OR_RETURN(auto p, ParseIntVar("MASTER_PORT", port, 1, 65535));
  env.master_port = p;
  return env;
}

Result<DistEnv> DistEnvFromEnvironment() {
  return DistEnvFromVariables([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

std::unique_ptr<DistContext> DistContext::Local(int local_rank) { return DistContextFactory::Local(local_rank); }

DistContext::~DistContext() { DistContextFactory::Shutdown(*this); }

Result<std::unique_ptr<DistContext>> InitDistributed(const DistEnv& env, DistBackend backend,
                                                     std::chrono::milliseconds timeout) {
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    return Status::InvalidArgument("distributed: rank " + std::to_string(env.rank) + " not in world of size " +
                                   std::to_string(env.world_size));
  }
  if (env.world_size == 1) return DistContext::Local(env.local_rank);
  if (backend == DistBackend::kNccl && !NcclAvailable()) {
    return Status::Unsupported("distributed: this build has no NCCL (LibTorch without USE_C10D_NCCL, or nccl.h not "
                               "found at configure time)");
  }
  if (env.master_port < 1 || env.master_port > 65535 || env.master_addr.empty()) {
    return Status::InvalidArgument("distributed: bad master address " + env.master_addr + ":" +
                                   std::to_string(env.master_port));
  }
  const std::string endpoint = "tcp://" + env.master_addr + ":" + std::to_string(env.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env.master_port);
    options.timeout = timeout;
    std::string prefix;
    if (env.agent_store) {
      // torchrun's agent serves this port already: everyone is a client. Keys of an earlier attempt
      // (after an elastic restart) stay in that store, hence the attempt in the prefix.
      options.isServer = false;
      options.waitWorkers = false;
      prefix = "yolocache/attempt_" + std::to_string(env.restart_count) + "/";
    } else {
      options.isServer = env.rank == 0;
      options.numWorkers = static_cast<std::size_t>(env.world_size);
      options.waitWorkers = true;  // the server returns once every rank has connected
      prefix = "yolocache/";
    }
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    store = c10::make_intrusive<c10d::PrefixStore>(prefix, tcp);
  } catch (const std::exception& e) {
    return Status::IOError(endpoint + ": " + What(e));
  }
  auto ctx = DistContextFactory::Create(store, env.rank, env.world_size, env.local_rank, env.cuda_device, backend,
                                        timeout, env.master_addr);
  if (!ctx.ok()) return ctx.status().WithContext(endpoint);
  return ctx;
}

Result<std::unique_ptr<DistContext>> InitDistributedWithStore(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                              int world_size, int local_rank, DistBackend backend,
                                                              std::chrono::milliseconds timeout) {
  return DistContextFactory::Create(std::move(store), rank, world_size, local_rank, /*cuda_device=*/-1, backend, timeout,
                                    "127.0.0.1");
}

Status DistContext::Wrap(const char* what, const std::function<void()>& fn) const {
  try {
    fn();
  } catch (const std::exception& e) {
    return Status::IOError(std::string("distributed ") + what + " (rank " + std::to_string(rank_) + "/" +
                           std::to_string(world_size_) + "): " + What(e));
  }
  return Status::OK();
}

Status DistContext::Broadcast(std::vector<at::Tensor>& tensors, int root) {
  if (!distributed()) return Status::OK();
  if (root < 0 || root >= world_size_) return Status::InvalidArgument("broadcast: root rank out of range");
  return Wrap("broadcast", [&] {
    at::NoGradGuard no_grad;
    c10d::BroadcastOptions options;
    options.rootRank = root;
    for (at::Tensor& t : tensors) {
      // One tensor per call (Gloo and NCCL both take one per process), staged when it does not live
      // where the backend wants it.
      const bool direct = t.device() == device_ && t.is_contiguous();
      std::vector<at::Tensor> io{direct ? t : t.to(device_).contiguous()};
      group_->broadcast(io, options)->wait();
      if (!direct) t.copy_(io[0]);
    }
  });
}

Status DistContext::BroadcastModule(torch::nn::Module& module, int root, bool parameters, bool buffers) {
  if (!distributed()) return Status::OK();
  if (root < 0 || root >= world_size_) return Status::InvalidArgument("broadcast module: root rank out of range");
  std::vector<at::Tensor> tensors;
  if (parameters) {
    for (const at::Tensor& p : module.parameters(/*recurse=*/true)) tensors.push_back(p);
  }
  if (buffers) {
    for (const at::Tensor& b : module.buffers(/*recurse=*/true)) {
      if (b.defined()) tensors.push_back(b);
    }
  }
  // Structure check: the same (count, total elements, fingerprint of shapes) everywhere, or nobody
  // broadcasts. MIN and MAX of the same triple differ exactly when some rank differs.
  int64_t numel = 0, fingerprint = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    numel += tensors[i].numel();
    fingerprint = (fingerprint * 1000003 + tensors[i].numel() * 31 + static_cast<int64_t>(tensors[i].scalar_type()) +
                   static_cast<int64_t>(i)) %
                  1000000007;
  }
  at::Tensor lo = at::tensor({static_cast<int64_t>(tensors.size()), numel, fingerprint}, at::kLong);
  at::Tensor hi = lo.clone();
  YC_RETURN_IF_ERROR(AllReduce(lo, ReduceKind::kMin));
  YC_RETURN_IF_ERROR(AllReduce(hi, ReduceKind::kMax));
  if (!at::equal(lo, hi)) {
    return Status::InvalidArgument("broadcast module: ranks hold models of different structure (" +
                                   std::to_string(tensors.size()) + " tensors, " + std::to_string(numel) +
                                   " elements on rank " + std::to_string(rank_) + ")");
  }
  // One flat buffer per dtype: a few large collectives instead of hundreds of tiny ones.
  std::map<at::ScalarType, std::vector<at::Tensor>> by_type;
  for (const at::Tensor& t : tensors) by_type[t.scalar_type()].push_back(t);
  return Wrap("broadcast module", [&] {
    at::NoGradGuard no_grad;
    c10d::BroadcastOptions options;
    options.rootRank = root;
    for (auto& [type, list] : by_type) {
      std::vector<at::Tensor> flat_parts;
      flat_parts.reserve(list.size());
      for (const at::Tensor& t : list) flat_parts.push_back(t.reshape({-1}).to(device_));
      std::vector<at::Tensor> io{at::cat(flat_parts)};
      group_->broadcast(io, options)->wait();
      int64_t offset = 0;
      for (at::Tensor& t : list) {
        const int64_t n = t.numel();
        // copy_ honours t's own strides (channels_last weights keep their layout).
        t.copy_(io[0].narrow(0, offset, n).view(t.sizes()));
        offset += n;
      }
    }
  });
}

Status DistContext::AllReduce(at::Tensor& tensor, ReduceKind kind) {
  if (kind == ReduceKind::kAvg && !at::isFloatingType(tensor.scalar_type())) {
    return Status::InvalidArgument("all-reduce: AVG of a non-floating tensor");
  }
  if (!distributed() || !tensor.defined()) return Status::OK();
  return Wrap("all-reduce", [&] {
    at::NoGradGuard no_grad;
    const bool direct = tensor.device() == device_ && tensor.is_contiguous();
    std::vector<at::Tensor> io{direct ? tensor : tensor.to(device_).contiguous()};
    c10d::AllreduceOptions options;
    options.reduceOp = ToReduceOp(kind);
    group_->allreduce(io, options)->wait();
    if (kind == ReduceKind::kAvg) io[0].div_(static_cast<double>(world_size_));
    if (!direct) tensor.copy_(io[0]);
  });
}

Status DistContext::AllReduceSumStreamOrdered(at::Tensor& tensor) {
  if (!distributed() || !tensor.defined()) return Status::OK();
  if (backend_ != DistBackend::kNccl || tensor.device() != device_ || !tensor.is_contiguous()) {
    return AllReduce(tensor, ReduceKind::kSum);
  }
  return Wrap("all-reduce", [&] {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> io{tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = ToReduceOp(ReduceKind::kSum);
    group_->allreduce(io, options)->synchronize();
  });
}

Status DistContext::Barrier() {
  if (!distributed()) return Status::OK();
  return Wrap("barrier", [&] {
    c10d::BarrierOptions options;
    // NCCL's barrier is an all-reduce on a device; naming ours avoids its "guessing the GPU" fallback.
    if (backend_ == DistBackend::kNccl) options.device_ids = {device_.index()};
    group_->barrier(options)->wait();
  });
}

}  // namespace yc::trainer
