#include "trainer/model/prune/sparsity.h"

#include <c10/core/GradMode.h>

#include "trainer/model/prune/channel_widths.h"

namespace yc::trainer {

std::vector<std::string> SparsityTargetNames(DetectionModelImpl& model) {
  std::vector<std::string> names;
  for (const ConvNode& n : GraphOf(model).convs) {
    if (n.prunable && n.has_bn) names.push_back(n.path + ".bn.weight");
  }
  return names;
}

std::vector<at::Tensor> SparsityTargets(DetectionModelImpl& model) {
  const auto params = model.named_parameters(/*recurse=*/true);
  std::vector<at::Tensor> gammas;
  for (const std::string& name : SparsityTargetNames(model)) {
    const at::Tensor* p = params.find(name);
    if (p != nullptr && p->requires_grad()) gammas.push_back(*p);
  }
  return gammas;
}

void AddSparsityGradient(const std::vector<at::Tensor>& gammas, double s) {
  if (s == 0) return;
  c10::NoGradGuard no_grad;
  for (const at::Tensor& g : gammas) {
    const at::Tensor& grad = g.grad();
    if (grad.defined()) grad.add_(g.detach().sign(), s);
  }
}

}  // namespace yc::trainer
