// Data-parallel building blocks: environment parsing, the world-1 no-op context, bucket assignment, the
// gradient reducer inside one process (two threads, two Gloo groups over an in-memory store), and real
// two-process runs of yolocache_ddp_driver (posix_spawn, TCPStore on 127.0.0.1) compared with a
// single-process run on the same global batch.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/serialize.h>

#include "tests/test_support.h"
#include "trainer/distributed/distributed.h"
#include "trainer/distributed/grad_reducer.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------------
// Environment

Result<DistEnv> FromMap(const std::map<std::string, std::string>& vars) {
  return DistEnvFromVariables([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(DistEnvTest, NoWorldSizeMeansOneProcess) {
  auto env = FromMap({});
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->rank, 0);
  EXPECT_FALSE(env->agent_store);
}

TEST(DistEnvTest, ReadsTorchrunVariables) {
  auto env = FromMap({{"RANK", "3"},
                      {"WORLD_SIZE", "4"},
                      {"LOCAL_RANK", "1"},
                      {"MASTER_ADDR", "10.0.0.2"},
                      {"MASTER_PORT", "29511"},
                      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                      {"TORCHELASTIC_RESTART_COUNT", "2"}});
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "10.0.0.2");
  EXPECT_EQ(env->master_port, 29511);
  EXPECT_TRUE(env->agent_store);
  EXPECT_EQ(env->restart_count, 2);
  EXPECT_EQ(env->local_world_size, 4);  // no LOCAL_WORLD_SIZE: one host
  EXPECT_EQ(env->cuda_device, -1);      // cuda:LOCAL_RANK unless the trainer picks a device=0,1 item
  auto plain = FromMap({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                        {"TORCHELASTIC_USE_AGENT_STORE", "False"}});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->agent_store);
  EXPECT_EQ(plain->local_rank, 1);  // defaults to RANK
}

TEST(DistEnvTest, RejectsBadValuesNamingTheVariable) {
  const std::map<std::string, std::string> good = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  struct Case {
    std::string var, value;
  };
  for (const Case& c : {Case{"RANK", "2"}, Case{"RANK", "-1"}, Case{"RANK", "x"}, Case{"WORLD_SIZE", "0"},
                        Case{"WORLD_SIZE", "2.5"}, Case{"MASTER_PORT", "70000"}, Case{"MASTER_PORT", ""},
                        Case{"MASTER_ADDR", ""}, Case{"LOCAL_RANK", "9"}, Case{"TORCHELASTIC_RESTART_COUNT", "a"},
                        Case{"LOCAL_WORLD_SIZE", "3"}, Case{"LOCAL_WORLD_SIZE", "0"}}) {
    auto vars = good;
    vars[c.var] = c.value;
    auto env = FromMap(vars);
    ASSERT_FALSE(env.ok()) << c.var << "=" << c.value;
    EXPECT_EQ(env.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(env.status().message().find(c.var), std::string::npos) << env.status().message();
  }
  auto missing = good;
  missing.erase("RANK");
  EXPECT_FALSE(FromMap(missing).ok());
}

TEST(DistEnvTest, Backends) {
  EXPECT_EQ(*ParseDistBackend("GLOO"), DistBackend::kGloo);
  EXPECT_EQ(*ParseDistBackend("nccl"), DistBackend::kNccl);
  EXPECT_FALSE(ParseDistBackend("mpi").ok());
  if (!NcclAvailable()) {
    DistEnv env;
    env.world_size = 2;
    env.master_port = 1;  // never reached: refused before any socket
    auto ctx = InitDistributed(env, DistBackend::kNccl, std::chrono::seconds(1));
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), Status::Code::kUnsupported);
  }
}

// ---------------------------------------------------------------------------------------------------
// World size 1

TEST(DistContextTest, WorldOneIsANoOp) {
  DistEnv env;  // world 1
  auto ctx = InitDistributed(env, DistBackend::kGloo);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  DistContext& c = *ctx.value();
  EXPECT_FALSE(c.distributed());
  EXPECT_TRUE(c.is_main());
  EXPECT_FALSE(c.group());
  at::Tensor t = at::tensor({1.5, -2.0});
  ASSERT_TRUE(c.AllReduce(t, ReduceKind::kSum).ok());
  ASSERT_TRUE(c.AllReduce(t, ReduceKind::kAvg).ok());
  EXPECT_TRUE(at::equal(t, at::tensor({1.5, -2.0})));
  at::Tensor i = at::ones({1}, at::kInt);
  EXPECT_FALSE(c.AllReduce(i, ReduceKind::kAvg).ok());  // refused even alone: the same code runs in DDP
  torch::nn::Linear lin(3, 2);
  const at::Tensor before = lin->weight.detach().clone();
  EXPECT_TRUE(c.BroadcastModule(*lin).ok());
  EXPECT_TRUE(at::equal(before, lin->weight));
  EXPECT_TRUE(c.Barrier().ok());
  // A reducer on no group does nothing at all: gradients are left as backward made them.
  GradReducer reducer(*lin, c.group());
  EXPECT_FALSE(reducer.active());
  lin->forward(at::ones({4, 3})).sum().backward();
  const at::Tensor g = lin->weight.grad().clone();
  EXPECT_TRUE(reducer.Finish().ok());
  EXPECT_TRUE(at::equal(g, lin->weight.grad()));
}

TEST(DistContextTest, RendezvousFailureIsAStatus) {
  // Rank 1 of 2 with nobody serving the port: the TCPStore client gives up after the timeout.
  DistEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.master_port = 1;  // privileged, nothing listens
  const auto t0 = std::chrono::steady_clock::now();
  auto ctx = InitDistributed(env, DistBackend::kGloo, std::chrono::milliseconds(1500));
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find("127.0.0.1:1"), std::string::npos) << ctx.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

// ---------------------------------------------------------------------------------------------------
// Bucket assignment

TEST(AssignBucketsTest, ReverseOrderCapsAndDtypes) {
  std::vector<at::Tensor> params = {
      at::zeros({64}),             // 0: 256 B
      at::zeros({64}),             // 1: 256 B
      at::zeros({16}, at::kDouble),  // 2: 128 B, its own dtype
      at::zeros({300}),            // 3: 1200 B, larger than a cap
      at::zeros({32}),             // 4: 128 B
      at::zeros({32}),             // 5: 128 B
  };
  // first cap 200 B, then 512 B.
  const auto buckets = AssignBuckets(params, 200, 512);
  // float32, reverse: {5,4} reaches 256 >= 200 (first bucket); {3} 1200 >= 512; {1,0} = 512.
  // float64: {2} alone (never reaches its cap; closed at the end).
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0], (std::vector<size_t>{5, 4}));
  EXPECT_EQ(buckets[1], (std::vector<size_t>{3}));
  EXPECT_EQ(buckets[2], (std::vector<size_t>{2}));
  EXPECT_EQ(buckets[3], (std::vector<size_t>{1, 0}));
  // Defaults put a small model in few buckets, every parameter exactly once.
  const auto one = AssignBuckets(params, 1 << 20, 25 << 20);
  size_t count = 0;
  for (const auto& b : one) count += b.size();
  EXPECT_EQ(count, params.size());
  EXPECT_EQ(one.size(), 2u);  // float32 and float64
}

// ---------------------------------------------------------------------------------------------------
// Reducer inside one process: two threads, two Gloo groups over one HashStore.

struct TwoLayer : torch::nn::Module {
  TwoLayer() {
    a = register_module("a", torch::nn::Linear(5, 7));
    b = register_module("b", torch::nn::Linear(7, 3));
    side = register_module("side", torch::nn::Linear(5, 3));
  }
  at::Tensor forward(const at::Tensor& x, bool use_side) {
    at::Tensor y = b->forward(at::tanh(a->forward(x)));
    return use_side ? y + side->forward(x) : y;
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, side{nullptr};
};

at::Tensor Input(int rank, int micro) {
  return at::arange(20, at::kFloat).view({4, 5}).sin() * (rank + 1) + micro * 0.25;
}

// Runs fn(rank, ctx) on two threads, each with its own DistContext over a shared in-memory store.
// (Models are built before: the global CPU generator is shared, so seeding on two threads would race.)
void TwoRanks(const std::function<void(int, DistContext&)>& fn) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto ctx = InitDistributedWithStore(store, r, 2, r, DistBackend::kGloo, std::chrono::seconds(30));
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      fn(r, *ctx.value());
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<std::shared_ptr<TwoLayer>> TwoNets() {
  std::vector<std::shared_ptr<TwoLayer>> nets;
  for (int r = 0; r < 2; ++r) {
    torch::manual_seed(7);
    nets.push_back(std::make_shared<TwoLayer>());
  }
  return nets;
}

// Per-rank gradients computed without any communication, for the expected averages.
std::vector<at::Tensor> LocalGrads(int rank, int micro_batches, bool side_on_rank1) {
  torch::manual_seed(7);
  TwoLayer net;
  for (int m = 0; m < micro_batches; ++m) {
    net.forward(Input(rank, m), side_on_rank1 && rank == 1).pow(2).mean().backward();
  }
  std::vector<at::Tensor> grads;
  for (const auto& p : net.parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
  return grads;
}

TEST(GradReducerTest, AveragesAcrossRanksWithOverlapAndAccumulation) {
  const int micro = 2;
  std::vector<at::Tensor> g0 = LocalGrads(0, micro, true), g1 = LocalGrads(1, micro, true);
  std::vector<std::vector<at::Tensor>> result(2);
  std::vector<int64_t> launched(2), in_backward(2), buckets(2);
  std::vector<std::shared_ptr<TwoLayer>> nets = TwoNets();
  TwoRanks([&](int rank, DistContext& ctx) {
    TwoLayer& net = *nets[rank];
    GradReducerOptions options;
    options.first_bucket_bytes = 16;  // 4 buckets: {side.b, side.w} {b.b, b.w} {a.b} {a.w}
    options.bucket_bytes = 16;
    GradReducer reducer(net, ctx.group(), options);
    for (int m = 0; m < micro; ++m) {
      reducer.set_require_sync(m + 1 == micro);
      // "side" is used on rank 1 only: rank 0 never fires its hooks and must not hang rank 1.
      net.forward(Input(rank, m), rank == 1).pow(2).mean().backward();
    }
    Status st = reducer.Finish();
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (const auto& p : net.parameters()) result[rank].push_back(p.grad().clone());
    launched[rank] = reducer.collectives_launched();
    in_backward[rank] = reducer.launched_during_backward();
    buckets[rank] = static_cast<int64_t>(reducer.num_buckets());
  });
  ASSERT_EQ(result[0].size(), g0.size());
  for (size_t i = 0; i < g0.size(); ++i) {
    const at::Tensor expected = (g0[i] + g1[i]) / 2;
    EXPECT_TRUE(at::allclose(result[0][i], expected, 1e-6, 1e-7)) << "param " << i;
    EXPECT_TRUE(at::equal(result[0][i], result[1][i])) << "param " << i;
  }
  EXPECT_GE(buckets[0], 4);
  // Only the synced micro-batch communicates: one launch per bucket in all.
  EXPECT_EQ(launched[0], buckets[0]);
  EXPECT_EQ(launched[1], buckets[1]);
  // Rank 1 used everything, so every bucket left from a hook, while backward ran.
  EXPECT_EQ(in_backward[1], buckets[1]);
  // Rank 0 never used "side" (registered last: its buckets launch first), so nothing could go early.
  EXPECT_EQ(in_backward[0], 0);
}

TEST(GradReducerTest, FindUnusedLeavesGloballyUnusedGradsUndefined) {
  std::vector<std::vector<uint8_t>> defined(2);
  std::vector<std::shared_ptr<TwoLayer>> nets = TwoNets();
  TwoRanks([&](int rank, DistContext& ctx) {
    TwoLayer& net = *nets[rank];
    GradReducerOptions options;
    options.find_unused_parameters = true;
    GradReducer reducer(net, ctx.group(), options);
    net.forward(Input(rank, 0), /*use_side=*/false).sum().backward();  // nobody uses "side"
    Status st = reducer.Finish();
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (const auto& p : net.parameters()) defined[rank].push_back(p.grad().defined() ? 1 : 0);
  });
  // a.weight, a.bias, b.weight, b.bias defined; side.weight, side.bias untouched (undefined).
  const std::vector<uint8_t> expected = {1, 1, 1, 1, 0, 0};
  EXPECT_EQ(defined[0], expected);
  EXPECT_EQ(defined[1], expected);
}

TEST(GradReducerTest, MisuseIsReportedNotHung) {
  std::vector<Status> no_sync(2), twice(2), recovered(2);
  std::vector<std::shared_ptr<TwoLayer>> nets = TwoNets();
  TwoRanks([&](int rank, DistContext& ctx) {
    TwoLayer& net = *nets[rank];
    GradReducer reducer(net, ctx.group());
    reducer.set_require_sync(false);
    net.forward(Input(rank, 0), true).sum().backward();
    no_sync[rank] = reducer.Finish();  // Finish after a no-sync backward
    reducer.set_require_sync(true);
    net.forward(Input(rank, 0), true).sum().backward();
    net.forward(Input(rank, 1), true).sum().backward();  // second synced backward before Finish
    twice[rank] = reducer.Finish();
    net.forward(Input(rank, 0), true).sum().backward();
    recovered[rank] = reducer.Finish();  // the window was reset: usable again
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(no_sync[r].code(), Status::Code::kInvalidArgument) << no_sync[r].ToString();
    EXPECT_EQ(twice[r].code(), Status::Code::kInvalidArgument) << twice[r].ToString();
    EXPECT_NE(twice[r].message().find("twice"), std::string::npos);
    EXPECT_TRUE(recovered[r].ok()) << recovered[r].ToString();
  }
}

// ---------------------------------------------------------------------------------------------------
// Two processes over TCP: yolocache_ddp_driver.

#ifdef YOLOCACHE_DDP_DRIVER
const char* kDriver = YOLOCACHE_DDP_DRIVER;
#else
const char* kDriver = nullptr;
#endif

using testing::RankRun;

std::vector<RankRun> RunWorld(int world, const std::vector<std::string>& args, const fs::path& dir) {
  // The driver expands {rank} in --out.
  return testing::LaunchRanksOnFreePort(kDriver, world, args, dir, std::chrono::seconds(180));
}

std::vector<at::Tensor> Load(const fs::path& path) {
  std::vector<at::Tensor> tensors;
  torch::load(tensors, path.string());
  return tensors;
}

#define YC_REQUIRE_DRIVER()                                                                          \
  if (kDriver == nullptr || !fs::exists(kDriver))                                                   \
  GTEST_SKIP() << "yolocache_ddp_driver not built (tests/CMakeLists.txt: add_subdirectory(distributed))"

#define EXPECT_RUNS_OK(runs)                                                                   \
  for (size_t _r = 0; _r < (runs).size(); ++_r)                                                \
  ASSERT_EQ((runs)[_r].exit_code, 0) << "rank " << _r << " of " << (runs).size() << ":\n" << (runs)[_r].log

// Output layout (ddp_driver Save): parameters..., buffers..., grad-defined flags, stats
// [collectives, launched during backward, buckets, total |change| of the parameters].
struct Output {
  std::vector<at::Tensor> state;
  at::Tensor defined, stats;
};
Output Split(std::vector<at::Tensor> t) {
  Output o;
  o.stats = t.back();
  t.pop_back();
  o.defined = t.back();
  t.pop_back();
  o.state = std::move(t);
  return o;
}

void ExpectIdentical(const Output& a, const Output& b) {
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t i = 0; i < a.state.size(); ++i) EXPECT_TRUE(at::equal(a.state[i], b.state[i])) << "tensor " << i;
}

void ExpectClose(const Output& a, const Output& b, double rtol, double atol) {
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t i = 0; i < a.state.size(); ++i) {
    EXPECT_TRUE(at::allclose(a.state[i], b.state[i], rtol, atol))
        << "tensor " << i << " max diff " << (a.state[i] - b.state[i]).abs().max().item<double>();
  }
}

class DistributedRunTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  fs::path Out(const std::string& name) const { return dir_ / name; }
};

TEST_F(DistributedRunTest, CollectivesAcrossTwoProcesses) {
  YC_REQUIRE_DRIVER();
  auto runs = RunWorld(2, {"--scenario=collectives"}, dir_.path());
  EXPECT_RUNS_OK(runs);
}

TEST_F(DistributedRunTest, TwoRanksMatchOneProcessOnTheGlobalBatch) {
  YC_REQUIRE_DRIVER();
  auto ddp = RunWorld(2, {"--scenario=toy", "--steps=4", "--out=" + Out("ddp{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ddp);
  auto ref = RunWorld(1, {"--scenario=toy", "--steps=4", "--out=" + Out("ref{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ref);
  const Output r0 = Split(Load(Out("ddp0.pt"))), r1 = Split(Load(Out("ddp1.pt"))), single = Split(Load(Out("ref0.pt")));
  ExpectIdentical(r0, r1);  // same bits on both ranks, not merely close
  ExpectClose(r0, single, 1e-4, 1e-6);
  EXPECT_GT(r0.stats[3].item<double>(), 1e-2) << "training did not move the weights";
}

TEST_F(DistributedRunTest, SmallBucketsEqualPlainPerParameterAllReduce) {
  YC_REQUIRE_DRIVER();
  auto bucketed = RunWorld(2,
                           {"--scenario=toy", "--bucket-bytes=512", "--first-bucket-bytes=64",
                            "--out=" + Out("b{rank}.pt").string()},
                           dir_.path());
  EXPECT_RUNS_OK(bucketed);
  auto plain = RunWorld(2, {"--scenario=plain", "--out=" + Out("p{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(plain);
  const Output b0 = Split(Load(Out("b0.pt"))), b1 = Split(Load(Out("b1.pt")));
  const Output p0 = Split(Load(Out("p0.pt")));
  // Two ranks: each element is one fp32 addition either way, so bucketing changes no bit.
  ExpectIdentical(b0, p0);
  ExpectIdentical(b0, b1);
  const double buckets = b0.stats[2].item<double>();
  EXPECT_GE(buckets, 4);
  EXPECT_EQ(b0.stats[0].item<double>(), 3 * buckets);  // 3 steps, each bucket once
  EXPECT_EQ(b1.stats[0].item<double>(), 3 * buckets);
  // Rank 1 uses all but "unused" (last bucket): the others leave while backward runs. Rank 0 skips
  // "extra", whose bucket is first in launch order, so all of its launches wait for Finish.
  EXPECT_GE(b1.stats[1].item<double>(), 3 * (buckets - 2));
  EXPECT_LT(b1.stats[1].item<double>(), 3 * buckets);
  EXPECT_EQ(b0.stats[1].item<double>(), 0);
}

TEST_F(DistributedRunTest, NoSyncAccumulationMatchesOneProcess) {
  YC_REQUIRE_DRIVER();
  auto ddp = RunWorld(2, {"--scenario=toy", "--micro=3", "--out=" + Out("a{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ddp);
  auto ref = RunWorld(1, {"--scenario=toy", "--micro=3", "--out=" + Out("r{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ref);
  const Output a0 = Split(Load(Out("a0.pt"))), a1 = Split(Load(Out("a1.pt"))), single = Split(Load(Out("r0.pt")));
  ExpectIdentical(a0, a1);
  ExpectClose(a0, single, 1e-4, 1e-6);
  // 3 steps x 3 micro-batches, but only the last micro-batch of each step communicates.
  EXPECT_EQ(a0.stats[0].item<double>(), 3 * a0.stats[2].item<double>());
}

TEST_F(DistributedRunTest, FindUnusedMatchesOneProcessAndKeepsUnusedGradsUndefined) {
  YC_REQUIRE_DRIVER();
  auto ddp = RunWorld(2, {"--scenario=toy", "--find-unused", "--out=" + Out("u{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ddp);
  auto ref = RunWorld(1, {"--scenario=toy", "--find-unused", "--out=" + Out("s{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ref);
  const Output u0 = Split(Load(Out("u0.pt"))), u1 = Split(Load(Out("u1.pt"))), single = Split(Load(Out("s0.pt")));
  ExpectIdentical(u0, u1);
  ExpectClose(u0, single, 1e-4, 1e-6);
  // unused w/b (nobody ran it: left undefined, as in the single process), conv1 w/b, conv2 w/b, head w/b,
  // extra w/b (rank 0 never ran "extra" yet receives the average).
  const at::Tensor expected = at::tensor({0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, at::kDouble);
  EXPECT_TRUE(at::equal(u0.defined, expected)) << u0.defined;
  EXPECT_TRUE(at::equal(u1.defined, expected)) << u1.defined;
  EXPECT_TRUE(at::equal(single.defined, expected)) << single.defined;
}

TEST_F(DistributedRunTest, Yolov8nWithDetectionLossStaysIdenticalAcrossRanks) {
  YC_REQUIRE_DRIVER();
  auto runs = RunWorld(2, {"--scenario=yolo", "--steps=2", "--slice=1", "--out=" + Out("y{rank}.pt").string()},
                       dir_.path());
  EXPECT_RUNS_OK(runs);
  const Output y0 = Split(Load(Out("y0.pt"))), y1 = Split(Load(Out("y1.pt")));
  ExpectIdentical(y0, y1);  // parameters after 2 steps, and BN statistics after the buffer broadcast
  EXPECT_GT(y0.stats[3].item<double>(), 1e-3);
  // yolov8n's ~12 MB of fp32 gradients: a 1 MiB first bucket and a second, both launched from hooks.
  EXPECT_EQ(y0.stats[2].item<double>(), 2);
  EXPECT_EQ(y0.stats[1].item<double>(), 2 * 2);
}

// GPU hosts only (two CUDA devices and a LibTorch with NCCL): the same toy and YOLOv8n runs over NCCL.
TEST_F(DistributedRunTest, NcclTwoGpusMatchOneProcess) {
  YC_REQUIRE_DRIVER();
  if (!NcclAvailable() || torch::cuda::device_count() < 2) GTEST_SKIP() << "needs NCCL and two CUDA devices";
  auto ddp = RunWorld(2, {"--scenario=toy", "--backend=nccl", "--steps=4", "--out=" + Out("n{rank}.pt").string()},
                      dir_.path());
  EXPECT_RUNS_OK(ddp);
  auto ref = RunWorld(1, {"--scenario=toy", "--steps=4", "--out=" + Out("c{rank}.pt").string()}, dir_.path());
  EXPECT_RUNS_OK(ref);
  const Output n0 = Split(Load(Out("n0.pt"))), n1 = Split(Load(Out("n1.pt"))), cpu = Split(Load(Out("c0.pt")));
  ExpectIdentical(n0, n1);
  ExpectClose(n0, cpu, 1e-2, 1e-4);  // cuDNN (TF32 convolutions) against the CPU reference
  auto yolo = RunWorld(2, {"--scenario=yolo", "--backend=nccl", "--steps=3", "--slice=2", "--imgsz=128",
                           "--out=" + Out("ny{rank}.pt").string()},
                       dir_.path());
  EXPECT_RUNS_OK(yolo);
  ExpectIdentical(Split(Load(Out("ny0.pt"))), Split(Load(Out("ny1.pt"))));
}

TEST_F(DistributedRunTest, DepartedPeerGivesAnErrorNotAHang) {
  YC_REQUIRE_DRIVER();
  auto runs = RunWorld(2, {"--scenario=peer_exit", "--timeout-ms=20000"}, dir_.path());
  EXPECT_RUNS_OK(runs);
  EXPECT_NE(runs[0].log.find("expected failure"), std::string::npos) << runs[0].log;
}

}  // namespace
}  // namespace yc::trainer
