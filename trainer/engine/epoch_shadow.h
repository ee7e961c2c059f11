// The run's training state at an epoch's end, copied on the device: the model, its EMA and the
// optimizer's state. The epoch's validation and checkpoints are then made from the copy on another thread
// while the next epoch trains (trainer/engine/end_epoch_overlap.cc), and read the same values a validation
// and a snapshot taken at the epoch's end would have.
//
//   EpochShadow shadow;
//   YC_RETURN_IF_ERROR(shadow.Capture(model, ema, optimizer));   // queued on the current stream
//   StreamFence ready = StreamFence::Record(device);             // another thread waits for it, then reads
//
// The first Capture clones the modules (on their device); later ones copy into the clones, and clone again
// only when the modules' tensors changed shape (a prune). Memory: one more model and EMA, and the
// optimizer's state once more.
#pragma once

#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"
#include "trainer/io/checkpoint.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

class EpochShadow {
 public:
  Status Capture(const torch::nn::Module& model, const torch::nn::Module& ema, const torch::optim::Optimizer& optimizer);

  const DetectionModelImpl& model() const { return *model_; }
  DetectionModelImpl& ema() const { return *ema_; }
  const OptimizerCapture& optimizer() const { return optimizer_; }

 private:
  // A clone of `source` kept in `*copy`, its tensors refreshed from `source`'s in place.
  static Status CopyModule(const torch::nn::Module& source, std::shared_ptr<DetectionModelImpl>* copy);

  std::shared_ptr<DetectionModelImpl> model_, ema_;
  OptimizerCapture optimizer_;
};

}  // namespace yc::trainer
