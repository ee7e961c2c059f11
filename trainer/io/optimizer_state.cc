#include "trainer/io/optimizer_state.h"

#include <memory>
#include <set>
#include <sstream>
#include <type_traits>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

namespace yc::trainer {

namespace {

using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;


void PutTensor(SavedParamState* s, const char* name, const at::Tensor& t) {
  if (t.defined()) s->tensors[name] = t;
}

// Options and state of one kind, both ways.
std::map<std::string, double> OptionsOf(const OptimizerOptions& o) {
  if (const auto* s = dynamic_cast<const torch::optim::SGDOptions*>(&o)) {
    return {{"lr", s->lr()}, {"momentum", s->momentum()}, {"dampening", s->dampening()},
            {"weight_decay", s->weight_decay()}, {"nesterov", s->nesterov() ? 1.0 : 0.0}};
  }
  auto adam_like = [](const auto& a) -> std::map<std::string, double> {
    return {{"lr", a.lr()}, {"betas.0", std::get<0>(a.betas())}, {"betas.1", std::get<1>(a.betas())},
            {"eps", a.eps()}, {"weight_decay", a.weight_decay()}, {"amsgrad", a.amsgrad() ? 1.0 : 0.0}};
  };
  if (const auto* a = dynamic_cast<const torch::optim::AdamOptions*>(&o)) return adam_like(*a);
  if (const auto* w = dynamic_cast<const torch::optim::AdamWOptions*>(&o)) return adam_like(*w);
  if (const auto* r = dynamic_cast<const torch::optim::RMSpropOptions*>(&o)) {
    return {{"lr", r->lr()}, {"alpha", r->alpha()}, {"eps", r->eps()}, {"weight_decay", r->weight_decay()},
            {"momentum", r->momentum()}, {"centered", r->centered() ? 1.0 : 0.0}};
  }
  if (const auto* d = dynamic_cast<const DescribedOptions*>(&o)) return d->SavedOptions();
  return {};
}

bool StateOf(const OptimizerParamState& state, SavedParamState* s) {
  if (const auto* g = dynamic_cast<const torch::optim::SGDParamState*>(&state)) {
    PutTensor(s, "momentum_buffer", g->momentum_buffer());
    return true;
  }
  auto adam_like = [s](const auto& a) {
    s->ints["step"] = a.step();
    PutTensor(s, "exp_avg", a.exp_avg());
    PutTensor(s, "exp_avg_sq", a.exp_avg_sq());
    PutTensor(s, "max_exp_avg_sq", a.max_exp_avg_sq());
  };
  if (const auto* a = dynamic_cast<const torch::optim::AdamParamState*>(&state)) {
    adam_like(*a);
    return true;
  }
  if (const auto* w = dynamic_cast<const torch::optim::AdamWParamState*>(&state)) {
    adam_like(*w);
    return true;
  }
  if (const auto* r = dynamic_cast<const torch::optim::RMSpropParamState*>(&state)) {
    s->ints["step"] = r->step();
    PutTensor(s, "square_avg", r->square_avg());
    PutTensor(s, "momentum_buffer", r->momentum_buffer());
    PutTensor(s, "grad_avg", r->grad_avg());
    return true;
  }
  if (const auto* d = dynamic_cast<const DescribedParamState*>(&state)) {
    d->SaveTo(s);
    return true;
  }
  return false;
}

// Reads what `saved` holds into the restoring side's fields; Corruption naming the first missing one.
class Fields {
 public:
  Fields(const std::map<std::string, double>& options, const std::string& where) : options_(options), where_(where) {}
  double Option(const char* name) {
    auto it = options_.find(name);
    if (it == options_.end()) {
      if (missing_.empty()) missing_ = std::string("option ") + name;
      return 0;
    }
    return it->second;
  }
  Status status() const {
    return missing_.empty() ? Status::OK() : Status::Corruption("optimizer state: " + where_ + " lacks its " + missing_);
  }

 private:
  const std::map<std::string, double>& options_;
  std::string where_;
  std::string missing_;
};

Status SetOptions(const std::map<std::string, double>& saved, OptimizerOptions& o, const std::string& where) {
  Fields f(saved, where);
  if (auto* s = dynamic_cast<torch::optim::SGDOptions*>(&o)) {
    s->lr(f.Option("lr")).momentum(f.Option("momentum")).dampening(f.Option("dampening"));
    s->weight_decay(f.Option("weight_decay")).nesterov(f.Option("nesterov") != 0);
    return f.status();
  }
  auto adam_like = [&f](auto& a) {
    a.lr(f.Option("lr")).betas(std::make_tuple(f.Option("betas.0"), f.Option("betas.1"))).eps(f.Option("eps"));
    a.weight_decay(f.Option("weight_decay")).amsgrad(f.Option("amsgrad") != 0);
  };
  if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&o)) {
    adam_like(*a);
    return f.status();
  }
  if (auto* w = dynamic_cast<torch::optim::AdamWOptions*>(&o)) {
    adam_like(*w);
    return f.status();
  }
  if (auto* r = dynamic_cast<torch::optim::RMSpropOptions*>(&o)) {
    r->lr(f.Option("lr")).alpha(f.Option("alpha")).eps(f.Option("eps")).weight_decay(f.Option("weight_decay"));
    r->momentum(f.Option("momentum")).centered(f.Option("centered") != 0);
    return f.status();
  }
  if (auto* d = dynamic_cast<DescribedOptions*>(&o)) return d->RestoreOptions(saved, where);
  return Status::Unsupported("optimizer state: this kind of optimizer cannot be restored");
}

// A state tensor for `param`: its shape and dtype, on its device (the saved strides kept), copied.
Result<at::Tensor> StateTensor(const SavedParamState& s, const char* name, const at::Tensor& param, bool required,
                               const std::string& where) {
  auto it = s.tensors.find(name);
  if (it == s.tensors.end()) {
    if (required) return Status::Corruption("optimizer state: " + where + " lacks its " + name);
    return at::Tensor();
  }
  const at::Tensor& t = it->second;
  // fp16 state (Ultralytics' form) is widened to the parameter's dtype, as its resume casts it.
  const bool widened = t.scalar_type() == at::kHalf && param.is_floating_point();
  if (t.sizes() != param.sizes() || (t.scalar_type() != param.scalar_type() && !widened)) {
    return Status::Corruption("optimizer state: " + where + " " + name + " has shape/dtype " +
                              c10::str(t.sizes(), " ", t.scalar_type()) + ", the parameter " +
                              c10::str(param.sizes(), " ", param.scalar_type()));
  }
  return t.to(param.device(), param.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
}

Result<int64_t> StateStep(const SavedParamState& s, const std::string& where) {
  auto it = s.ints.find("step");
  if (it == s.ints.end()) return Status::Corruption("optimizer state: " + where + " lacks its step");
  if (it->second < 0) return Status::Corruption("optimizer state: " + where + " has a negative step");
  return it->second;
}

Result<std::unique_ptr<OptimizerParamState>> MakeState(const OptimizerOptions& kind, const SavedParamState& s,
                                                       const at::Tensor& p, const std::string& where) {
#define YC_STATE_TENSOR(var, name, required)                        \
  Result<at::Tensor> var = StateTensor(s, name, p, required, where); \
  if (!var.ok()) return var.status()
  if (dynamic_cast<const torch::optim::SGDOptions*>(&kind) != nullptr) {
    YC_STATE_TENSOR(buf, "momentum_buffer", false);
    auto out = std::make_unique<torch::optim::SGDParamState>();
    out->momentum_buffer(*buf);
    return std::unique_ptr<OptimizerParamState>(std::move(out));
  }
  auto adam_like = [&](auto out) -> Result<std::unique_ptr<OptimizerParamState>> {
    YC_ASSIGN_OR_RETURN(int64_t step, StateStep(s, where));
    YC_STATE_TENSOR(m, "exp_avg", true);
    YC_STATE_TENSOR(v, "exp_avg_sq", true);
    YC_STATE_TENSOR(vmax, "max_exp_avg_sq", false);
    out->step(step).exp_avg(*m).exp_avg_sq(*v).max_exp_avg_sq(*vmax);
    return std::unique_ptr<OptimizerParamState>(std::move(out));
  };
  if (dynamic_cast<const torch::optim::AdamOptions*>(&kind) != nullptr) {
    return adam_like(std::make_unique<torch::optim::AdamParamState>());
  }
  if (dynamic_cast<const torch::optim::AdamWOptions*>(&kind) != nullptr) {
    return adam_like(std::make_unique<torch::optim::AdamWParamState>());
  }
  if (dynamic_cast<const torch::optim::RMSpropOptions*>(&kind) != nullptr) {
    YC_ASSIGN_OR_RETURN(int64_t step, StateStep(s, where));
    YC_STATE_TENSOR(sq, "square_avg", true);
    YC_STATE_TENSOR(buf, "momentum_buffer", false);
    YC_STATE_TENSOR(avg, "grad_avg", false);
    auto out = std::make_unique<torch::optim::RMSpropParamState>();
    out->step(step).square_avg(*sq).momentum_buffer(*buf).grad_avg(*avg);
    return std::unique_ptr<OptimizerParamState>(std::move(out));
  }
  if (const auto* d = dynamic_cast<const DescribedOptions*>(&kind)) return d->MakeState(s, p, where);
#undef YC_STATE_TENSOR
  return Status::Unsupported("optimizer state: this kind of optimizer cannot be restored");
}

}  // namespace

Result<at::Tensor> SavedStateTensor(const SavedParamState& s, const char* name, const at::Tensor& param, bool required,
                                    const std::string& where) {
  return StateTensor(s, name, param, required, where);
}

Result<int64_t> SavedStateStep(const SavedParamState& s, const std::string& where) { return StateStep(s, where); }

Result<at::Tensor> SavedStateScalar(const SavedParamState& s, const char* name, const std::string& where) {
  auto it = s.tensors.find(name);
  if (it == s.tensors.end()) return Status::Corruption("optimizer state: " + where + " lacks its " + name);
  const at::Tensor& t = it->second;
  if (t.numel() != 1 || !t.is_floating_point()) {
    return Status::Corruption("optimizer state: " + where + " " + name + " is not one floating-point number (shape " +
                              c10::str(t.sizes(), " ", t.scalar_type()) + ")");
  }
  return t.reshape({}).to(at::kCPU, at::kFloat, /*non_blocking=*/false, /*copy=*/true);
}

Result<double> SavedOption(const std::map<std::string, double>& saved, const char* name, const std::string& where) {
  auto it = saved.find(name);
  if (it == saved.end()) return Status::Corruption("optimizer state: " + where + " lacks its option " + name);
  return it->second;
}

bool IsOptionName(const std::string& name) {
  static const std::set<std::string> kNames = {"lr",      "momentum", "dampening", "weight_decay", "nesterov",      "betas.0",
                                               "betas.1", "eps",      "amsgrad",   "alpha",        "centered", "momentum_decay"};
  return kNames.count(name) > 0;
}

bool IsStateIntName(const std::string& name) { return name == "step"; }

bool IsStateTensorName(const std::string& name) {
  static const std::set<std::string> kNames = {"momentum_buffer", "exp_avg",  "exp_avg_sq", "max_exp_avg_sq",
                                               "square_avg",      "grad_avg", "exp_inf",    "mu_product"};
  return kNames.count(name) > 0;
}

namespace {
// A template, so that only the branch of this LibTorch's key type is compiled.
template <typename Key>
Key StateKeyOf(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << param.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}
}  // namespace

OptimizerStateMap::key_type OptimizerStateKey(const at::Tensor& param) {
  return StateKeyOf<OptimizerStateMap::key_type>(param);
}

Result<SavedOptimizer> CaptureOptimizer(const torch::optim::Optimizer& optimizer) {
  SavedOptimizer out;
  const auto& state = optimizer.state();
  for (const auto& group : optimizer.param_groups()) {
    SavedParamGroup g;
    g.options = OptionsOf(group.options());
    if (g.options.empty()) return Status::Unsupported("optimizer of a kind checkpoints do not know");
    for (const at::Tensor& p : group.params()) {
      auto it = state.find(OptimizerStateKey(p));
      if (it == state.end()) {
        g.params.emplace_back();
        continue;
      }
      SavedParamState s;
      if (!StateOf(*it->second, &s)) return Status::Unsupported("optimizer state of a kind checkpoints do not know");
      g.params.emplace_back(std::move(s));
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

Status RestoreOptimizer(const SavedOptimizer& saved, torch::optim::Optimizer& optimizer) {
  auto& groups = optimizer.param_groups();
  if (saved.groups.size() != groups.size()) {
    return Status::Corruption("optimizer state: " + std::to_string(saved.groups.size()) + " parameter groups, the optimizer has " +
                              std::to_string(groups.size()));
  }
  // Everything is checked and built before the optimizer changes.
  std::vector<std::pair<OptimizerStateMap::key_type, std::unique_ptr<OptimizerParamState>>> states;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string where = "group " + std::to_string(i);
    const std::vector<at::Tensor>& params = groups[i].params();
    if (saved.groups[i].params.size() != params.size()) {
      return Status::Corruption("optimizer state: " + where + " has " + std::to_string(saved.groups[i].params.size()) +
                                " parameters, the optimizer's " + std::to_string(params.size()));
    }
    for (size_t j = 0; j < params.size(); ++j) {
      if (!saved.groups[i].params[j]) continue;
      YC_ASSIGN_OR_RETURN(std::unique_ptr<OptimizerParamState> s,
                          MakeState(groups[i].options(), *saved.groups[i].params[j], params[j],
                                    where + " parameter " + std::to_string(j)));
      states.emplace_back(OptimizerStateKey(params[j]), std::move(s));
    }
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    YC_RETURN_IF_ERROR(SetOptions(saved.groups[i].options, groups[i].options(), "group " + std::to_string(i)));
  }
  for (auto& [key, s] : states) optimizer.state()[key] = std::move(s);
  return Status::OK();
}

void AddToChecksum(const SavedOptimizer& saved, ChecksumInput* in) {
  in->AddInt("optimizer/groups", static_cast<int64_t>(saved.groups.size()));
  for (size_t i = 0; i < saved.groups.size(); ++i) {
    const std::string g = "optimizer/" + std::to_string(i);
    for (const auto& [name, v] : saved.groups[i].options) in->AddReal(g + "/" + name, v);
    in->AddInt(g + "/params", static_cast<int64_t>(saved.groups[i].params.size()));
    for (size_t j = 0; j < saved.groups[i].params.size(); ++j) {
      const auto& s = saved.groups[i].params[j];
      const std::string p = g + "/" + std::to_string(j);
      in->AddInt(p, s.has_value() ? 1 : 0);
      if (!s) continue;
      for (const auto& [name, v] : s->ints) in->AddInt(p + "/" + name, v);
      for (const auto& [name, t] : s->tensors) in->AddTensor(p + "/" + name, t);
    }
  }
}

}  // namespace yc::trainer
