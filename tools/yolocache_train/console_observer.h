// Console output of a training run: log lines on stdout, a progress bar per epoch on stderr (TTY only),
// and one summary line per epoch on stdout (always, so logs of non-interactive runs show progress).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tools/common/interrupt.h"
#include "tools/common/progress_bar.h"
#include "trainer/engine/trainer.h"

namespace yc::cli {

class ConsoleObserver final : public trainer::TrainObserver {
 public:
  void OnMessage(const std::string& line) override;
  void OnEpochStart(int epoch, int epochs, size_t batches) override;
  void OnTrainProgress(const trainer::BatchProgress& p) override;
  void OnValStart(int epoch, size_t batches) override;
  void OnValProgress(size_t done, size_t total) override;
  void OnEpochEnd(const trainer::EpochRecord& r) override;

 private:
  void EndBar();
  std::unique_ptr<ProgressBar> bar_;
  trainer::BatchProgress last_;
  std::optional<InterruptPolling> polling_;
};

}  // namespace yc::cli
