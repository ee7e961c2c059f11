// `train device=0,1` (and device=[0,1], --device 0,1,2,3): this process starts one data-parallel rank
// per device instead of training, as Ultralytics' trainer does (engine/trainer.py train(): world size =
// the number of devices, a subprocess launch unless LOCAL_RANK is set), through
// trainer/distributed/rank_launcher.h; each rank runs this same command line and picks its device by
// LOCAL_RANK. `--cpu-ranks N` (ours: Ultralytics has no CPU data-parallel training) starts N Gloo ranks
// on the CPU the same way.
#pragma once

#include "base/status.h"
#include "tools/yolocache_train/train_cli.h"

namespace yc::cli {

// How many ranks this `train` starts; 0: it trains itself (one device, or it is a rank already).
// Checked before any work, as select_device checks: every device of the list exists, the batch
// divides by their number, no AutoBatch (batch=-1), and a program to start (not an in-process run).
Result<int> RanksToLaunch(const TrainArgs& a, const trainer::TrainOptions& o);

// Starts `ranks` ranks of this program with its command line and waits for them: 0, the first failing
// rank's exit code (that rank named on stderr), or 130 when a signal was forwarded to them.
int LaunchTrainRanks(int ranks);

}  // namespace yc::cli
