// The launcher of device=0,1 (trainer/distributed/rank_launcher.h) with /bin/sh as the ranks' program:
// the environment each rank gets, the first failing rank's exit code with the others stopped, SIGKILL
// after the grace period, and a signal forwarded to every rank.
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "trainer/distributed/rank_launcher.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct Launched {
  LaunchOutcome outcome;
  std::string said;
  double seconds = 0;
};

// `script` run by `world` ranks of /bin/sh; `pending_signal` as the launcher polls it.
Launched Launch(const std::string& script, int world, std::function<int()> pending_signal = {},
                std::chrono::milliseconds grace = std::chrono::seconds(30)) {
  RankLaunch l;
  l.executable = "/bin/sh";
  l.argv = {"sh", "-c", script};
  l.world_size = world;
  l.grace = grace;
  Launched out;
  const auto start = std::chrono::steady_clock::now();
  Result<LaunchOutcome> r = LaunchLocalRanks(l, pending_signal, [&](const std::string& line) { out.said += line + "\n"; });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) out.outcome = *r;
  return out;
}

TEST(RankLauncher, EveryRankGetsTorchrunsEnvironment) {
  TempDir tmp;
  // An enclosing launch's variables are replaced, the user's own are kept.
  ::setenv("RANK", "7", 1);
  ::setenv("YC_LAUNCHER_TEST", "kept", 1);
  const Launched l = Launch("echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT "
                            "$TORCHELASTIC_USE_AGENT_STORE $OMP_NUM_THREADS $YC_LAUNCHER_TEST > " +
                                tmp.path().string() + "/env$RANK",
                            3);
  ::unsetenv("RANK");
  ::unsetenv("YC_LAUNCHER_TEST");
  EXPECT_EQ(l.outcome.exit_code, 0) << l.said;
  EXPECT_EQ(l.outcome.failed_rank, -1);
  ASSERT_EQ(l.outcome.ranks.size(), 3u);
  std::set<std::string> ports;
  for (int r = 0; r < 3; ++r) {
    std::istringstream in(testing::ReadFile(tmp / ("env" + std::to_string(r))));
    std::string rank, local, world, local_world, addr, port, agent, omp, kept;
    in >> rank >> local >> world >> local_world >> addr >> port >> agent >> omp >> kept;
    EXPECT_EQ(rank, std::to_string(r));
    EXPECT_EQ(local, std::to_string(r));
    EXPECT_EQ(world, "3");
    EXPECT_EQ(local_world, "3");
    EXPECT_EQ(addr, "127.0.0.1");
    EXPECT_EQ(agent, "False");  // rank 0 hosts the store
    EXPECT_EQ(kept, "kept");
    const char* omp_given = std::getenv("OMP_NUM_THREADS");
    EXPECT_EQ(omp, omp_given != nullptr ? omp_given : "1");  // torchrun's default for N > 1, else the user's
    EXPECT_GT(std::atoi(port.c_str()), 0);
    ports.insert(port);
    EXPECT_GT(l.outcome.ranks[static_cast<size_t>(r)].pid, 0);
    EXPECT_NE(l.said.find("rank " + std::to_string(r) + " pid " + std::to_string(l.outcome.ranks[static_cast<size_t>(r)].pid)),
              std::string::npos)
        << l.said;
  }
  EXPECT_EQ(ports.size(), 1u) << "one MASTER_PORT for all ranks";
  EXPECT_NE(l.said.find("MASTER_PORT=" + *ports.begin()), std::string::npos) << l.said;
}

TEST(RankLauncher, FirstFailingRankStopsTheOthers) {
  const Launched l = Launch("[ $RANK = 1 ] && exit 3; exec sleep 30", 3);
  EXPECT_EQ(l.outcome.exit_code, 3);
  EXPECT_EQ(l.outcome.failed_rank, 1);
  EXPECT_NE(l.said.find("rank 1 failed (exit 3); stopping the other ranks"), std::string::npos) << l.said;
  EXPECT_EQ(l.outcome.ranks[0].exit_code, 128 + SIGTERM);
  EXPECT_EQ(l.outcome.ranks[2].exit_code, 128 + SIGTERM);
  EXPECT_LT(l.seconds, 10.0);
}

TEST(RankLauncher, RanksIgnoringSigtermAreKilledAfterTheGrace) {
  // Rank 0 dies once rank 1 had the time to ignore SIGTERM.
  const Launched l = Launch("trap '' TERM; [ $RANK = 0 ] && { sleep 0.5; kill -9 $$; }; exec sleep 30", 2, {},
                            std::chrono::milliseconds(300));
  EXPECT_EQ(l.outcome.exit_code, 128 + SIGKILL);
  EXPECT_EQ(l.outcome.failed_rank, 0);
  EXPECT_NE(l.said.find("rank 0 failed (killed by SIGKILL, exit 137)"), std::string::npos) << l.said;
  EXPECT_EQ(l.outcome.ranks[1].exit_code, 128 + SIGKILL);
  EXPECT_NE(l.said.find("still running 300 ms after SIGTERM: killed"), std::string::npos) << l.said;
  EXPECT_LT(l.seconds, 10.0);
}

TEST(RankLauncher, ASignalIsForwardedAndTheRunIsInterrupted) {
  int polls = 0;
  // The launcher's signal arrives once the ranks run; each rank ends on it (SIGINT's default action).
  const Launched l = Launch("exec sleep 30", 2, [&polls] { return ++polls > 5 ? SIGINT : 0; });
  EXPECT_TRUE(l.outcome.interrupted);
  EXPECT_EQ(l.outcome.exit_code, 130);
  EXPECT_EQ(l.outcome.failed_rank, -1) << "ranks stopped by the forwarded signal did not fail";
  for (const RankExit& r : l.outcome.ranks) EXPECT_EQ(r.exit_code, 128 + SIGINT);
  EXPECT_NE(l.said.find("SIGINT forwarded to the ranks"), std::string::npos) << l.said;
  EXPECT_LT(l.seconds, 10.0);
}

TEST(RankLauncher, AProgramThatCannotRunIsTheRanksFailure) {
  RankLaunch l;
  l.executable = "/nonexistent/yolocache-train";
  l.argv = {"yolocache-train", "train"};
  Result<LaunchOutcome> r = LaunchLocalRanks(l, {}, [](const std::string&) {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_EQ(r->failed_rank >= 0, true);
}

}  // namespace
}  // namespace yc::trainer
