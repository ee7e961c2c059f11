// `yolocache-train train` as two data-parallel processes (Gloo over 127.0.0.1, the environment torchrun
// sets), compared with one process on the same global batch.
//
// Why the single process is a fair reference: EpochSampler gives rank r the global positions
// r, r + W, r + 2W, ... and local batch b is local samples [b*B/W, (b+1)*B/W), so the union of the ranks'
// batch b is the single process's batch b (positions [b*B, (b+1)*B)), and each sample's augmentation is
// keyed by its global position. The train set is a multiple of the global batch (no padding). What still
// differs by default, as in Ultralytics' DDP: BatchNorm statistics are per rank (batch B/W, not B) and the
// loss is normalised per rank (target-score sums), so those runs are only checked to move by the same order
// of magnitude; with --sync-bn both are global and the two ranks must equal the single process. Across
// ranks the parameters must be bit-identical (same start, same averaged gradients, same arithmetic).
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/yolov8.h"

extern char** environ;

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct Proc {
  int exit_code = -1;  // -1: killed at the deadline or not started
  std::string out;
};

// Starts `world` yolocache-train processes (world 0: one plain process without the DDP variables) and
// waits for all, killing them at the deadline so a hang fails instead of blocking CI.
std::vector<Proc> Launch(int world, const std::vector<std::string>& args, const fs::path& dir, int port) {
  const std::string exe = (testing::BinaryDir() / "yolocache-train").string();
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "MASTER_ADDR" || key == "MASTER_PORT" ||
        key.rfind("TORCHELASTIC_", 0) == 0 || key == "OMP_NUM_THREADS") {
      continue;
    }
    base.push_back(kv);
  }
  base.push_back("OMP_NUM_THREADS=1");
  const int n = std::max(world, 1);
  std::vector<pid_t> pids(n, -1);
  std::vector<Proc> procs(n);
  std::vector<fs::path> logs(n);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env = base;
    if (world > 0) {
      env.push_back("RANK=" + std::to_string(r));
      env.push_back("LOCAL_RANK=" + std::to_string(r));
      env.push_back("WORLD_SIZE=" + std::to_string(world));
      env.push_back("MASTER_ADDR=127.0.0.1");
      env.push_back("MASTER_PORT=" + std::to_string(port));
    }
    std::vector<std::string> argv_s{exe};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    logs[r] = dir / ("log" + std::to_string(world) + "_" + std::to_string(r));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logs[r].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pids[r], exe.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) pids[r] = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  int remaining = 0;
  for (pid_t p : pids) remaining += p > 0 ? 1 : 0;
  while (remaining > 0 && std::chrono::steady_clock::now() < end) {
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (pids[r] > 0 && ::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        procs[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = -1;
        --remaining;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < n; ++r) {
    if (pids[r] > 0) {
      ::kill(pids[r], SIGKILL);
      ::waitpid(pids[r], nullptr, 0);
      procs[r].out = "(killed at the deadline)\n";
    }
    procs[r].out += testing::ReadFile(logs[r]);
  }
  return procs;
}

// Two ranks; retried on a new port if another process took the probed one meanwhile.
std::vector<Proc> LaunchWorld2(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<Proc> procs;
  for (int attempt = 0; attempt < 3; ++attempt) {
    procs = Launch(2, args, dir, yc::testing::FreeLoopbackPort());
    bool clash = false;
    for (const Proc& p : procs) clash |= p.out.find("ddress already in use") != std::string::npos;
    if (!clash) break;
  }
  return procs;
}

std::vector<at::Tensor> LoadParams(const fs::path& path) {
  std::vector<at::Tensor> t;
  torch::load(t, path.string());
  return t;
}

double Norm(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>* minus) {
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    at::Tensor d = minus ? a[i] - (*minus)[i] : a[i];
    sq += d.to(at::kDouble).pow(2).sum().item<double>();
  }
  return std::sqrt(sq);
}

// nbs == batch: an optimizer step after every batch (2 per epoch); 2 epochs cross an epoch boundary,
// rank 0 validates after each while rank 1 waits for its stop decision.
std::vector<std::string> TrainArgs(const fs::path& cache, const fs::path& out, uint64_t seed, bool sync_bn = false) {
  std::vector<std::string> a{"train", "--data", cache.string(), "--model", "yolov8n", "--imgsz", "64", "--epochs", "2",
                             "--batch", "4", "--nbs", "4", "--device", "cpu", "--threads", "1", "--torch-threads", "1",
                             "--no-amp", "--mosaic", "0", "--optimizer", "SGD", "--seed", std::to_string(seed),
                             "--log-every", "1", "--out", out.string(), "--save-rank-weights",
                             (out / "rank_weights").string()};
  if (sync_bn) a.push_back("--sync-bn");
  return a;
}

// The weights the runs started from (seeded init, as Train does).
std::vector<at::Tensor> InitialWeights(uint64_t seed, int64_t classes) {
  torch::manual_seed(seed);
  YOLOv8 model(YOLOv8Options(ModelScale::kN, classes));
  std::vector<at::Tensor> init;
  for (const auto& p : model->parameters()) init.push_back(p.detach().clone());
  return init;
}

TEST(TrainDdp, TwoRanksIdenticalAndMoveLikeOneProcess) {
  TempDir tmp;
  // 8 train images, a multiple of the global batch: no sampler padding.
  const testutil::SynthCacheSpec spec = testutil::Images(8, 4);
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const uint64_t seed = 3;
  auto args = [&](const fs::path& out) { return TrainArgs(cache, out, seed); };
  std::vector<Proc> ddp = LaunchWorld2(args(tmp / "ddp"), tmp.path());
  ASSERT_EQ(ddp.size(), 2u);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ddp[r].exit_code, 0) << "rank " << r << ":\n" << ddp[r].out;
  std::vector<Proc> one = Launch(0, args(tmp / "one"), tmp.path(), 0);
  ASSERT_EQ(one[0].exit_code, 0) << one[0].out;

  // Rank 0 alone logs and writes the run directory; rank 1 is silent.
  EXPECT_NE(ddp[0].out.find("distributed: 2 ranks (gloo), global batch 4 = 2 per rank"), std::string::npos) << ddp[0].out;
  EXPECT_NE(ddp[0].out.find("epoch 2:"), std::string::npos) << ddp[0].out;
  EXPECT_EQ(ddp[1].out.find("epoch"), std::string::npos) << ddp[1].out;
  EXPECT_TRUE(fs::exists(tmp / "ddp" / "weights" / "last.pt"));
  EXPECT_TRUE(fs::exists(tmp / "ddp" / "weights" / "best.pt"));
  EXPECT_EQ(testing::ReadFile(tmp / "ddp" / "results.csv").empty(), false);

  const auto w0 = LoadParams(tmp / "ddp" / "rank_weights" / "rank0.pt");
  const auto w1 = LoadParams(tmp / "ddp" / "rank_weights" / "rank1.pt");
  const auto ws = LoadParams(tmp / "one" / "rank_weights" / "rank0.pt");
  ASSERT_EQ(w0.size(), w1.size());
  ASSERT_EQ(w0.size(), ws.size());
  for (size_t i = 0; i < w0.size(); ++i) ASSERT_TRUE(at::equal(w0[i], w1[i])) << "parameter " << i << " differs across ranks";

  const std::vector<at::Tensor> init = InitialWeights(seed, spec.classes);
  ASSERT_EQ(init.size(), ws.size());
  const double moved_one = Norm(ws, &init), moved_ddp = Norm(w0, &init), gap = Norm(w0, &ws);
  ASSERT_GT(moved_one, 0.0);
  ASSERT_GT(moved_ddp, 0.0);
  // Not asserted: closeness to the single process. Measured here (SGD, 2 steps/epoch, 2 epochs, imgsz 64)
  // the 2-rank update norm is ~0.6x the single process's and their gap ~0.57x of it: with 2 images per
  // rank at 64 px, per-rank BatchNorm statistics and per-rank loss normalisation dominate, so only the
  // order of magnitude is checked (a broken reducer or a missing all-reduce shows as ranks differing).
  EXPECT_GT(moved_ddp / moved_one, 0.25) << "moved " << moved_one << " (one) " << moved_ddp << " (ddp), gap " << gap;
  EXPECT_LT(moved_ddp / moved_one, 4.0) << "moved " << moved_one << " (one) " << moved_ddp << " (ddp), gap " << gap;
  std::cout << "update norm: one process " << moved_one << ", 2 ranks " << moved_ddp << ", gap " << gap << "\n";
}

// --sync-bn: BatchNorm statistics and the loss normaliser over the global batch, so two ranks compute what
// one process computes with the same global batch (up to float summation order).
TEST(TrainDdp, SyncBnTwoRanksEqualOneProcess) {
  TempDir tmp;
  const testutil::SynthCacheSpec spec = testutil::Images(8, 4);
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const uint64_t seed = 3;
  std::vector<Proc> ddp = LaunchWorld2(TrainArgs(cache, tmp / "ddp", seed, /*sync_bn=*/true), tmp.path());
  ASSERT_EQ(ddp.size(), 2u);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ddp[r].exit_code, 0) << "rank " << r << ":\n" << ddp[r].out;
  EXPECT_NE(ddp[0].out.find("SyncBatchNorm"), std::string::npos) << ddp[0].out;
  std::vector<Proc> one = Launch(0, TrainArgs(cache, tmp / "one", seed, /*sync_bn=*/true), tmp.path(), 0);
  ASSERT_EQ(one[0].exit_code, 0) << one[0].out;

  const auto w0 = LoadParams(tmp / "ddp" / "rank_weights" / "rank0.pt");
  const auto w1 = LoadParams(tmp / "ddp" / "rank_weights" / "rank1.pt");
  const auto ws = LoadParams(tmp / "one" / "rank_weights" / "rank0.pt");
  ASSERT_EQ(w0.size(), ws.size());
  for (size_t i = 0; i < w0.size(); ++i) ASSERT_TRUE(at::equal(w0[i], w1[i])) << "parameter " << i << " differs across ranks";
  const std::vector<at::Tensor> init = InitialWeights(seed, spec.classes);
  const double moved = Norm(ws, &init), gap = Norm(w0, &ws);
  ASSERT_GT(moved, 0.0);
  std::cout << "sync-bn: update norm " << moved << ", 2 ranks vs one process " << gap << "\n";
  EXPECT_LT(gap / moved, 1e-3) << "update " << moved << ", gap " << gap;
}

TEST(TrainDdp, GlobalBatchMustDivideByWorldSize) {
  TempDir tmp;
  const testutil::SynthCacheSpec spec = testutil::Images(4, 2);
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  std::vector<Proc> ddp = LaunchWorld2({"train", "--data", cache.string(), "--imgsz", "64", "--epochs", "1", "--batch", "3",
                                        "--device", "cpu", "--out", (tmp / "run").string()},
                                       tmp.path());
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ddp[r].exit_code, 2) << ddp[r].out;
    EXPECT_NE(ddp[r].out.find("WORLD_SIZE 2"), std::string::npos) << ddp[r].out;
  }
  EXPECT_FALSE(fs::exists(tmp / "run" / "weights" / "last.pt"));
}

}  // namespace
}  // namespace yc::trainer
