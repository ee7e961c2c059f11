// The teacher of a distillation run (train --teacher; trainer/loss/distill_loss.h): a trained checkpoint
// of any kind this trainer reads (a run's best.pt/last.pt, an Ultralytics .pt, a pruned checkpoint),
// loaded once onto the run's device, frozen (eval-mode BatchNorm, no gradients), and run on each batch's
// own input tensor inside the train step, under the step's autocast.
//
//   YC_RETURN_IF_ERROR(CheckTeacherClasses(weights, path, nc));       // before any work (exit 2)
//   YC_ASSIGN_OR_RETURN(std::unique_ptr<Teacher> t, Teacher::Load(path, nc, device, channels_last));
//   YC_RETURN_IF_ERROR(t->CheckPairsWith(*student));                  // same reg_max and strides
//   std::vector<at::Tensor> feats = t->Forward(images);               // (B, 4 * reg_max + nc, H_i, W_i)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/io/pretrained.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

// InvalidArgument naming the file and both class counts when the teacher's `nc` is not the run's.
Status CheckTeacherClasses(const ModelWeights& teacher, const std::filesystem::path& path, int64_t run_nc);

class Teacher {
 public:
  // Reads `path` (errors as LoadInferenceModel: IOError for a missing or damaged file, naming it) and
  // checks its class count against the run's (CheckTeacherClasses). Building the model draws from the
  // default generator (its initialisation, then overwritten): load before the run seeds its own model.
  static Result<std::unique_ptr<Teacher>> Load(const std::filesystem::path& path, int64_t run_nc,
                                               const at::Device& device, bool channels_last);
  // Whether the two heads pair up anchor for anchor: the same reg_max and strides (InvalidArgument naming
  // the file and both values otherwise).
  Status CheckPairsWith(const DetectionModelImpl& student) const;

  // The head's raw per-level outputs for `images` (what DetectionLoss reads), without gradients and
  // without the inference decode. Runs under whatever autocast the caller has set.
  std::vector<at::Tensor> Forward(const at::Tensor& images);

  // "yolov8s (yolocache checkpoint ..., 11,136,374 parameters)" for the run's log.
  std::string Describe() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  Teacher() = default;
  std::filesystem::path path_;
  DetectionModel model_{nullptr};
  ModelWeights info_;  // metadata only (tensors released)
};

}  // namespace yc::trainer
