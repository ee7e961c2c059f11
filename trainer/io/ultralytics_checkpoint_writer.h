// The dictionary Ultralytics 8.3's trainer pickles into last.pt / best.pt (ultralytics/engine/trainer.py
// save_model; the release form of ultralytics/utils/torch_utils.py strip_optimizer), written from our state:
//   epoch, best_fitness, model, ema, updates, optimizer, train_args, train_metrics, train_results, date,
//   version, license, docs
// Training form: ema = the EMA as a DetectionModel (trainer/io/ultralytics_module_writer.h), model None,
// optimizer = torch.optim's state_dict of an optimizer built as Ultralytics' build_optimizer builds it
// (three groups: biases, decayed weights, norm weights; parameter ids in its order). Ultralytics writes
// both in fp16; with half_ema / half_optimizer off they are written in fp32, which torch.load and
// Ultralytics' resume take as well (it calls .float() and casts optimizer state to the parameters'
// dtype), and whose storages are then shared with the full-precision copies yolocache keeps for exact
// resume (TorchSaveWriter stores a tensor once). Release form: model = the fp16 EMA, epoch -1,
// ema/optimizer/best_fitness/updates None.
// train_args has Ultralytics' argument names (cfg/default.yaml), so its resume and its val read them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "trainer/io/optimizer_state.h"
#include "trainer/io/torch_save_writer.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

inline constexpr const char* kUltralyticsVersion = "8.3.166";

// Where each parameter of `model` sits in the optimizer Ultralytics builds for it (build_optimizer walks
// named_modules: "bias" in the name -> group 0, a norm layer's weight -> group 2, else group 1; frozen
// parameters included). Our optimizer leaves frozen ones out, so ids are looked up by tensor.
struct UltralyticsParamOrder {
  std::vector<int64_t> group_sizes;                  // 3 groups
  std::map<const void*, int64_t> id;                 // TensorImpl* -> id (group offset + index)
};
UltralyticsParamOrder UltralyticsParamOrderOf(const torch::nn::Module& model);

struct UltralyticsCheckpointFields {
  const DetectionModelImpl* model = nullptr;  // release form
  const DetectionModelImpl* ema = nullptr;    // training form
  std::vector<std::string> names;
  int64_t epoch = -1;                         // last completed epoch, 0-based (-1: released)
  std::optional<double> best_fitness;
  std::optional<int64_t> updates;
  // Optimizer state (host copies) and, per group and parameter, its Ultralytics id; null: None.
  const SavedOptimizer* optimizer = nullptr;
  std::vector<std::vector<int64_t>> optimizer_ids;
  std::vector<int64_t> optimizer_group_sizes;
  // "SGD", "Adam", "AdamW", "RMSProp", "NAdam", "RAdam", "Adamax" (the option names written per group)
  std::string optimizer_kind;
  bool half_ema = true;        // the training form's `ema` in fp16, as Ultralytics
  // AllFitHalf of `model` / `ema` where the caller has it already (one host read saved); else computed.
  std::optional<bool> model_fits_half, ema_fits_half;
  bool half_optimizer = true;  // the optimizer's state tensors in fp16 (convert_optimizer_state_dict_to_fp16)
  double initial_lr = 0;
  nlohmann::ordered_json train_args = nlohmann::ordered_json::object();
  nlohmann::ordered_json train_metrics = nlohmann::ordered_json::object();
  nlohmann::ordered_json train_results = nlohmann::ordered_json::object();
  std::string date;  // ISO 8601
};

// Pushes the dictionary's key, value pairs (the caller opens the dict, may add keys of its own, closes it).
void WriteUltralyticsCheckpointItems(TorchSaveWriter& w, const UltralyticsCheckpointFields& f);

// Our validation summary (precision, recall, mAP50, mAP50-95, fitness) under Ultralytics' metric keys.
nlohmann::ordered_json UltralyticsTrainMetrics(const nlohmann::json& metrics);

}  // namespace yc::trainer
