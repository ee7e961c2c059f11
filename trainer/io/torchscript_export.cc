#include "trainer/io/torchscript_export.h"

#include <sstream>

#include <c10/core/GradMode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

Result<std::string> ExportTorchScript(DetectionModelImpl& model, const at::Tensor& example,
                                      const std::string& config_json) {
  try {
    // Weights that are not inputs are recorded as constants, which the tracer allows only without grad.
    for (auto& p : model.parameters(true)) p.set_requires_grad(false);
    c10::NoGradGuard no_grad;
    auto traced = torch::jit::tracer::trace(
        {example},
        [&](torch::jit::Stack inputs) -> torch::jit::Stack {
          return {model.forward(inputs.at(0).toTensor()).pred};
        },
        [](const at::Tensor&) { return std::string(); }, /*strict=*/true, /*force_outplace=*/false);
    std::shared_ptr<torch::jit::Graph> graph = traced.first->graph;
    torch::jit::EliminateDeadCode(graph);  // the per-level outputs the loss would use are not returned

    // A module whose forward(self, images) is the traced graph, as torch.jit.trace builds one.
    torch::jit::Module module("__torch__.yolocache.DetectionModel");
    graph->insertInput(0, "self")->setType(module._ivalue()->type());
    auto cu = module._ivalue()->compilation_unit();
    torch::jit::Function* fn = cu->create_function(c10::QualifiedName(*module.type()->name(), "forward"), graph);
    module.type()->addMethod(fn);

    std::ostringstream out;
    module.save(out, {{"config.txt", config_json}});
    return out.str();
  } catch (const std::exception& e) {  // one line: c10::Error's what() carries a 20-frame backtrace
    if (IsOutOfMemory(e)) return ExceptionStatus(e, "TorchScript export");
    return Status::Unsupported("TorchScript export: " + ExceptionLine(e));
  }
}

}  // namespace yc::trainer
