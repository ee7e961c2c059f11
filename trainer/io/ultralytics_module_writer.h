// Our DetectionModel pickled as the `ultralytics.nn.tasks.DetectionModel` object Ultralytics 8.3 builds for
// the same yolov8/yolo11 yaml, so that torch.load gives a module Ultralytics' forward, fuse(), val and export
// run as their own. Each module is NEWOBJ of its class then BUILD with the `__dict__` torch.nn.Module keeps
// (training, _parameters, _buffers, _modules, hook dicts) plus the class's own attributes:
//   every layer: i (index), f (inputs), type (class path), np (parameter count), as parse_model sets them;
//   Conv2d / BatchNorm2d / MaxPool2d / Upsample: their constructor fields; SiLU or Identity as Conv.act;
//   C2f / C3k2 / C2PSA: c; Bottleneck / PSABlock: add; Attention: num_heads, head_dim, key_dim, scale;
//   DFL: c1; Detect: nc, nl, reg_max, no, stride, inplace;
//   the model: yaml (the model yaml as parse_model reads it, which Ultralytics also rebuilds the model
//   from when resuming), save, names ({id: name}), nc, inplace, end2end, stride.
// docs/TRAINER.md ("Checkpoints and resume") lists them; shared/reference/ultralytics-weights-and-export.md describes the
// layout Ultralytics writes.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "trainer/io/torch_save_writer.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

// Pushes the model object. `half`: floating tensors as fp16 (Ultralytics' .half(); integer buffers as
// they are). Parameters are written with requires_grad False (EMA and release weights are frozen).
// `fits_half`: AllFitHalf of `model` where the caller knows it (else computed here when `half`).
void WriteUltralyticsModel(TorchSaveWriter& w, const DetectionModelImpl& model, const std::vector<std::string>& names,
                           bool half, std::optional<bool> fits_half = std::nullopt);

// `t` as release weights store it: floating tensors in fp16, except one beyond fp16's range (|x| > 65504,
// a run about to diverge), which stays as it is rather than turn into infinities; others unchanged.
// `fits_half`: AllFitHalf said so for a set holding `t`, so the test (two host reads) is skipped.
at::Tensor ReleaseHalf(const at::Tensor& t, bool fits_half = false);

// Whether no floating tensor of `tensors` needs ReleaseHalf's exception: one host read for all of them.
bool AllFitHalf(const std::vector<std::pair<std::string, at::Tensor>>& tensors);

// The model yaml dict Ultralytics builds the family from (nc, scales, backbone, head, scale, yaml_file,
// channels), e.g. for train_args-free readers and tests.
nlohmann::ordered_json UltralyticsModelYaml(ModelFamily family, ModelScale scale, int64_t nc);

}  // namespace yc::trainer
