#include "trainer/io/ultralytics_checkpoint_writer.h"

#include <cctype>

#include "trainer/io/ultralytics_module_writer.h"

namespace yc::trainer {

using OJson = nlohmann::ordered_json;

UltralyticsParamOrder UltralyticsParamOrderOf(const torch::nn::Module& model) {
  std::vector<std::vector<const void*>> groups(3);
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    const bool norm = item.value()->name().find("Norm") != std::string::npos;
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      const std::string full = item.key().empty() ? p.key() : item.key() + "." + p.key();
      const size_t g = full.find("bias") != std::string::npos ? 0 : norm ? 2 : 1;
      groups[g].push_back(p.value().unsafeGetTensorImpl());
    }
  }
  UltralyticsParamOrder order;
  int64_t next = 0;
  for (const auto& g : groups) {
    order.group_sizes.push_back(static_cast<int64_t>(g.size()));
    for (const void* p : g) order.id[p] = next++;
  }
  return order;
}

namespace {

void Key(PickleWriter& p, const char* key) { p.Str(key); }

// torch.optim's param_group entries for `kind` (torch/optim/sgd.py, adam.py, adamw.py, rmsprop.py, nadam.py,
// radam.py, adamax.py defaults).
void GroupOptions(TorchSaveWriter& w, const SavedParamGroup& g, const std::string& kind, double initial_lr) {
  PickleWriter& p = w.pickle();
  auto real = [&](const char* name, double fallback) {
    auto it = g.options.find(name);
    Key(p, name);
    p.Float(it == g.options.end() ? fallback : it->second);
  };
  auto flag = [&](const char* name) {
    auto it = g.options.find(name);
    Key(p, name);
    p.Bool(it != g.options.end() && it->second != 0);
  };
  real("lr", 0.001);
  if (kind == "SGD") {
    real("momentum", 0);
    real("dampening", 0);
    real("weight_decay", 0);
    flag("nesterov");
  } else if (kind == "RMSProp") {
    real("alpha", 0.99);
    real("eps", 1e-8);
    real("weight_decay", 0);
    real("momentum", 0);
    flag("centered");
  } else {  // Adam, AdamW, NAdam, RAdam, Adamax
    Key(p, "betas");
    p.Mark();
    p.Float(g.options.count("betas.0") ? g.options.at("betas.0") : 0.9);
    p.Float(g.options.count("betas.1") ? g.options.at("betas.1") : 0.999);
    p.Tuple();
    real("eps", 1e-8);
    real("weight_decay", 0);
    if (kind == "NAdam") real("momentum_decay", 4e-3);
    if (kind == "NAdam" || kind == "RAdam") {
      Key(p, "decoupled_weight_decay");
      p.Bool(false);
    }
    if (kind == "Adam" || kind == "AdamW") flag("amsgrad");
    Key(p, "capturable");
    p.Bool(false);
    if (kind == "Adam" || kind == "AdamW") {
      Key(p, "fused");
      p.None();
    }
  }
  Key(p, "maximize");
  p.Bool(false);
  Key(p, "foreach");
  p.None();
  Key(p, "differentiable");
  p.Bool(false);
  Key(p, "initial_lr");
  p.Float(initial_lr);
}

// optimizer.state_dict() with convert_optimizer_state_dict_to_fp16 applied (ultralytics/utils/torch_utils.py):
// {'state': {id: {name: fp16 tensor, 'step': tensor}}, 'param_groups': [{options..., 'params': [ids]}]}.
void Optimizer(TorchSaveWriter& w, const UltralyticsCheckpointFields& f) {
  PickleWriter& p = w.pickle();
  const SavedOptimizer& s = *f.optimizer;
  p.EmptyDict();
  p.Mark();
  Key(p, "state");
  p.EmptyDict();
  p.Mark();
  for (size_t g = 0; g < s.groups.size(); ++g) {
    for (size_t j = 0; j < s.groups[g].params.size(); ++j) {
      const auto& state = s.groups[g].params[j];
      if (!state) continue;
      p.Int(f.optimizer_ids[g][j]);
      p.EmptyDict();
      p.Mark();
      for (const auto& [name, step] : state->ints) {
        p.Str(name);
        w.Tensor(at::scalar_tensor(static_cast<double>(step), at::kFloat));  // torch >= 1.12 keeps step as a tensor
      }
      for (const auto& [name, t] : state->tensors) {
        p.Str(name);
        w.Tensor(f.half_optimizer && t.is_floating_point() ? t.to(at::kHalf) : t);
      }
      p.SetItems();
    }
  }
  p.SetItems();
  Key(p, "param_groups");
  p.EmptyList();
  p.Mark();
  int64_t offset = 0;
  for (size_t g = 0; g < f.optimizer_group_sizes.size(); ++g) {
    p.EmptyDict();
    p.Mark();
    static const SavedParamGroup kNone;
    GroupOptions(w, g < s.groups.size() ? s.groups[g] : kNone, f.optimizer_kind, f.initial_lr);
    Key(p, "params");
    p.EmptyList();
    p.Mark();
    for (int64_t i = 0; i < f.optimizer_group_sizes[g]; ++i) p.Int(offset + i);
    p.Appends();
    offset += f.optimizer_group_sizes[g];
    p.SetItems();
  }
  p.Appends();
  p.SetItems();
}

// date, version, license, docs: last in a training checkpoint (BaseTrainer.save_model), first in released
// weights (strip_optimizer saves {**updates, **x}), so that both key orders are Ultralytics'.
void Stamp(PickleWriter& p, const std::string& date) {
  Key(p, "date");
  p.Str(date);
  Key(p, "version");
  p.Str(kUltralyticsVersion);
  Key(p, "license");
  p.Str("AGPL-3.0 (https://ultralytics.com/license)");
  Key(p, "docs");
  p.Str("https://docs.ultralytics.com");
}

}  // namespace

void WriteUltralyticsCheckpointItems(TorchSaveWriter& w, const UltralyticsCheckpointFields& f) {
  PickleWriter& p = w.pickle();
  const bool released = f.epoch < 0;
  if (released) Stamp(p, f.date);
  Key(p, "epoch");
  p.Int(f.epoch);
  Key(p, "best_fitness");
  if (f.best_fitness) {
    p.Float(*f.best_fitness);
  } else {
    p.None();
  }
  Key(p, "model");
  if (f.model != nullptr) {
    WriteUltralyticsModel(w, *f.model, f.names, /*half=*/true, f.model_fits_half);
  } else {
    p.None();
  }
  Key(p, "ema");
  if (f.ema != nullptr) {
    WriteUltralyticsModel(w, *f.ema, f.names, f.half_ema, f.ema_fits_half);
  } else {
    p.None();
  }
  Key(p, "updates");
  if (f.updates) {
    p.Int(*f.updates);
  } else {
    p.None();
  }
  Key(p, "optimizer");
  if (f.optimizer != nullptr && f.optimizer_ids.size() == f.optimizer->groups.size()) {
    Optimizer(w, f);
  } else {
    p.None();
  }
  Key(p, "train_args");
  PickleJson(p, f.train_args);
  Key(p, "train_metrics");
  PickleJson(p, f.train_metrics);
  Key(p, "train_results");
  PickleJson(p, f.train_results);
  if (!released) Stamp(p, f.date);
}

OJson UltralyticsTrainMetrics(const nlohmann::json& m) {
  OJson out = OJson::object();
  const std::pair<const char*, const char*> keys[] = {{"precision", "metrics/precision(B)"},
                                                      {"recall", "metrics/recall(B)"},
                                                      {"mAP50", "metrics/mAP50(B)"},
                                                      {"mAP50-95", "metrics/mAP50-95(B)"},
                                                      {"fitness", "fitness"}};
  for (const auto& [ours, theirs] : keys) {
    if (auto it = m.find(ours); it != m.end() && it->is_number()) out[theirs] = it->get<double>();
  }
  return out;
}

}  // namespace yc::trainer
