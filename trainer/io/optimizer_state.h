// An optimizer's state as a checkpoint holds it, independent of how it is stored: per parameter group
// its options, and per parameter its state (step counts and tensors), under the names LibTorch's
// torch::optim serialisation uses (SGD: momentum_buffer; Adam/AdamW: step, exp_avg, exp_avg_sq,
// max_exp_avg_sq; RMSprop: step, square_avg, momentum_buffer, grad_avg; options lr, momentum, betas.0/1,
// ...), and for the kinds torch::optim lacks (trainer/engine/adam_variants.h: NAdam, RAdam, Adamax) the
// names of torch.optim's Python state_dict (step, exp_avg, exp_avg_sq, mu_product, exp_inf; momentum_decay),
// which those kinds describe themselves (DescribedOptions below, as this layer cannot see them). The checkpoint writer captures it from the live optimizer (for the checksum), the reader parses
// it from the file (trainer/io/checkpoint_reader.cc) and restores it without LibTorch's InputArchive, which
// would compile and run the file's TorchScript.
//
//   Result<SavedOptimizer> s = CaptureOptimizer(sgd);   // tensors shared, not copied
//   Status st = RestoreOptimizer(*s, fresh_sgd);         // same groups and parameter counts
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"
#include "trainer/io/checkpoint_checksum.h"

namespace yc::trainer {

struct SavedParamState {
  std::map<std::string, int64_t> ints;        // "step"
  std::map<std::string, at::Tensor> tensors;  // defined ones only
};

struct SavedParamGroup {
  std::map<std::string, double> options;           // bools as 0/1, Adam's betas as "betas.0", "betas.1"
  std::vector<std::optional<SavedParamState>> params;  // per parameter of the group, its state if it has one
};

struct SavedOptimizer {
  std::vector<SavedParamGroup> groups;
};

// Group options of an optimizer kind defined above this layer: it names its kind, lists its options and
// makes a parameter's state from saved fields (with SavedStateTensor etc. below).
class DescribedOptions {
 public:
  virtual ~DescribedOptions() = default;
  virtual const char* kind_name() const = 0;  // Ultralytics' spelling ("NAdam")
  virtual std::map<std::string, double> SavedOptions() const = 0;
  // Sets every option from `saved`; Corruption naming `where` and the first missing one.
  virtual Status RestoreOptions(const std::map<std::string, double>& saved, const std::string& where) = 0;
  virtual Result<std::unique_ptr<torch::optim::OptimizerParamState>> MakeState(const SavedParamState& saved,
                                                                              const at::Tensor& param,
                                                                              const std::string& where) const = 0;
};
// Its per-parameter state lists its own fields.
class DescribedParamState {
 public:
  virtual ~DescribedParamState() = default;
  virtual void SaveTo(SavedParamState* out) const = 0;
};

// The saved fields of one parameter's state, checked against `param` (`where` names it in errors):
// a tensor of the parameter's shape copied onto its device and dtype (fp16 widened; absent and not
// `required`: undefined), the step count, and a 0-dim float32 scalar on the CPU (NAdam's mu_product).
Result<at::Tensor> SavedStateTensor(const SavedParamState& s, const char* name, const at::Tensor& param, bool required,
                                    const std::string& where);
Result<int64_t> SavedStateStep(const SavedParamState& s, const std::string& where);
Result<at::Tensor> SavedStateScalar(const SavedParamState& s, const char* name, const std::string& where);
// A saved option, Corruption naming `where` when it is missing.
Result<double> SavedOption(const std::map<std::string, double>& saved, const char* name, const std::string& where);

// Whether LibTorch's serialisation of the optimizers yolocache builds writes `name` as a group option,
// a per-parameter integer or a per-parameter tensor; other names in a file are ignored.
bool IsOptionName(const std::string& name);
bool IsStateIntName(const std::string& name);
bool IsStateTensorName(const std::string& name);

// The key torch::optim keeps a parameter's state under: its TensorImpl, a pointer since PyTorch 2.0 and
// the pointer printed as a string before, so one source builds against LibTorch 1.13 and 2.x.
using OptimizerStateMap = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;
OptimizerStateMap::key_type OptimizerStateKey(const at::Tensor& param);

// SGD, Adam, AdamW, RMSprop and the DescribedOptions kinds; Unsupported for another kind.
Result<SavedOptimizer> CaptureOptimizer(const torch::optim::Optimizer& optimizer);

// Sets every group's options and every saved parameter state of `optimizer` (state tensors copied onto
// their parameter's device and dtype, keeping the saved layout; fp16 state is widened). Corruption naming
// what does not fit: the group or parameter counts, a missing option or state tensor, a shape other than
// the parameter's, a dtype other than its own or fp16.
Status RestoreOptimizer(const SavedOptimizer& saved, torch::optim::Optimizer& optimizer);

// The optimizer's part of a checkpoint's checksum, in group, parameter and name order.
void AddToChecksum(const SavedOptimizer& saved, ChecksumInput* in);

}  // namespace yc::trainer
