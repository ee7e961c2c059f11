// Starts the data-parallel ranks of one host itself, as Ultralytics does for `device=0,1` (it runs
// `python -m torch.distributed.run --nproc_per_node N --master_port <free port>`: engine/trainer.py
// train(), utils/dist.py generate_ddp_command) and as torchrun then starts a --no-python program:
//
//   RankLaunch l;  l.executable = "/proc/self/exe";  l.argv = {"yolocache-train", "train", ...};  l.world_size = 2;
//   Result<LaunchOutcome> r = LaunchLocalRanks(l, pending_signal, say);   // waits for every rank
//
// Each rank is the same program with the same arguments and the environment torchrun gives a worker
// (torch/distributed/elastic/agent/server/local_elastic_agent.py): RANK = LOCAL_RANK = r, WORLD_SIZE =
// LOCAL_WORLD_SIZE = N, GROUP_RANK 0 of GROUP_WORLD_SIZE 1, ROLE_*, MASTER_ADDR=127.0.0.1 and a free
// MASTER_PORT (rank 0 hosts the TCPStore there: TORCHELASTIC_USE_AGENT_STORE=False), TORCHELASTIC_*
// counters, and OMP_NUM_THREADS=1 unless set (torch/distributed/run.py does that for N > 1). Variables of
// an enclosing launch are replaced. A rank picks its device from them (trainer/runtime/device_list.h).
//
// Like torchrun: a signal to the launcher (pending_signal() returns it) goes to every rank once, and the
// launcher waits for them to stop (they agree on a batch and rank 0 saves last.pt); a rank that fails
// (a non-zero exit, or killed) has the others sent SIGTERM, then SIGKILL after `grace`. The ranks run in
// their own process group, so a Ctrl-C at the terminal reaches them once, through the launcher, and
// they get SIGTERM if the launcher dies (PR_SET_PDEATHSIG): no orphaned rank keeps a GPU.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc::trainer {

struct RankLaunch {
  std::string executable;          // the file each rank runs (a CLI: /proc/self/exe)
  std::vector<std::string> argv;   // its argv, argv[0] included: the same for every rank
  int world_size = 2;
  int master_port = 0;             // 0: a free port on 127.0.0.1, as Ultralytics' find_free_network_port
  std::chrono::milliseconds grace = std::chrono::seconds(30);  // torchrun's wait before SIGKILL
};

struct RankExit {
  int pid = -1;
  int exit_code = -1;  // the shell's convention: 128 + N when killed by signal N
};

struct LaunchOutcome {
  int exit_code = 0;        // 0; 130 when interrupted; else the first failing rank's
  int failed_rank = -1;     // the first rank that failed on its own (not stopped by the launcher)
  bool interrupted = false; // a signal was forwarded
  std::vector<RankExit> ranks;
};

// `pending_signal`: polled while the ranks run; the signal the launcher received (SIGINT, SIGTERM,
// SIGHUP) or 0. `say`: one line each for the start ("DDP: ...", with every rank's pid), a failing rank
// (naming it and how it ended) and the forwarding of a signal. An error only when a rank could not be
// started (the ones started are stopped first).
Result<LaunchOutcome> LaunchLocalRanks(const RankLaunch& launch, const std::function<int()>& pending_signal,
                                       const std::function<void(const std::string&)>& say);

// A port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed), or an error.
Result<int> FreeLoopbackPort();

}  // namespace yc::trainer
