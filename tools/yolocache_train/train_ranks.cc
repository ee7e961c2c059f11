#include "tools/yolocache_train/train_ranks.h"

#include <cstdlib>
#include <iostream>

#include "tools/common/interrupt.h"
#include "tools/common/program.h"
#include "trainer/distributed/rank_launcher.h"
#include "trainer/runtime/device_list.h"

namespace yc::cli {
namespace {

Status Refuse(const std::string& why) { return Status::InvalidArgument(why); }

// Ultralytics' select_device checks (utils/torch_utils.py) for `n` devices, with its hints.
Status CheckBatch(const trainer::TrainOptions& o, int n, const std::string& what) {
  const std::string count = std::to_string(n);
  if (o.autobatch > 0) {
    return Refuse("AutoBatch (batch=-1, --autobatch) is not supported for " + what + ", as in Ultralytics: give a batch "
                  "that is a multiple of the " + count + " ranks, e.g. batch=" + std::to_string(n * 8));
  }
  if (o.batch % n != 0) {
    return Refuse("batch=" + std::to_string(o.batch) + " is the global batch and must be a multiple of the " + count +
                  " ranks of " + what + ": try batch=" + std::to_string(o.batch / n * n) + " or batch=" +
                  std::to_string(o.batch / n * n + n) + ", the nearest that are");
  }
  return Status::OK();
}

}  // namespace

Result<int> RanksToLaunch(const TrainArgs& a, const trainer::TrainOptions& o) {
  if (a.cpu_ranks < 0) return Refuse("--cpu-ranks " + std::to_string(a.cpu_ranks) + ": must be >= 1");
  const bool list = trainer::IsDeviceList(o.device);
  if (a.cpu_ranks > 0 && (list || trainer::DeviceListItems(o.device) != std::vector<std::string>{"cpu"})) {
    return Refuse("--cpu-ranks " + std::to_string(a.cpu_ranks) + " starts CPU ranks (Gloo): give --device cpu, not '" +
                  o.device + "' (device=0,1 starts one rank per GPU)");
  }
  if (std::getenv("LOCAL_RANK") != nullptr) return 0;  // a rank already (ours or torchrun's): train here
  const int n = list ? static_cast<int>(trainer::DeviceListItems(o.device).size()) : a.cpu_ranks;
  if (n <= 1) return 0;
  const std::string what = list ? "device=" + o.device : "--cpu-ranks " + std::to_string(n);
  YC_RETURN_IF_ERROR(CheckBatch(o, n, what));
  if (CurrentProgram().self_executable.empty()) {
    return Refuse(what + " starts one process per rank, which a run inside another program (yolocache.YOLO in "
                  "Python) cannot do: run `yolocache-train train ... device=" + o.device +
                  "`, or one process per device under torchrun (docs/DISTRIBUTED.md)");
  }
  if (list) YC_RETURN_IF_ERROR(trainer::ParseDeviceList(o.device).status());
  return n;
}

int LaunchTrainRanks(int ranks) {
  const RunningProgram& program = CurrentProgram();
  trainer::RankLaunch launch;
  launch.executable = program.self_executable;
  launch.argv = program.args;
  launch.world_size = ranks;
  // A signal sets the flag and is passed on to the ranks (they stop together, rank 0 saves last.pt);
  // a second one ends this process at once, and the ranks with it (they get SIGTERM when it dies).
  InterruptPolling polling;
  Result<trainer::LaunchOutcome> r = trainer::LaunchLocalRanks(
      launch, [] { return InterruptSignal(); },
      [](const std::string& line) { std::cerr << "yolocache-train train: " << line << std::endl; });
  if (!r.ok()) return Fail("train", r.status());
  return r->exit_code;
}

}  // namespace yc::cli
