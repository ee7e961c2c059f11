#include "trainer/io/torchscript_export.h"

#include <sstream>

#include <c10/core/GradMode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "trainer/io/torchscript_nms.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

Result<std::string> ExportTorchScript(DetectionModelImpl& model, const at::Tensor& example,
                                      const std::string& config_json, const std::optional<TorchScriptNms>& nms) {
  // NMSModel takes corners: Ultralytics' exporter sets Detect.xyxy for an nms export.
  struct XyxyScope {
    DetectImpl& detect;
    bool before;
    ~XyxyScope() { detect.set_xyxy(before); }
  } xyxy{model.detect(), model.detect().xyxy()};
  model.detect().set_xyxy(nms.has_value());
  try {
    // Weights that are not inputs are recorded as constants, which the tracer allows only without grad.
    for (auto& p : model.parameters(true)) p.set_requires_grad(false);
    c10::NoGradGuard no_grad;
    // The portable conv op for depthwise convs too: PyTorch's depthwise kernel has no CPU implementation,
    // and a file traced on CUDA must load and run anywhere.
    const DepthwiseKernelScope depthwise(DepthwiseKernel::kConvolution);
    auto traced = torch::jit::tracer::trace(
        {example},
        [&](torch::jit::Stack inputs) -> torch::jit::Stack {
          return {model.forward(inputs.at(0).toTensor()).pred};
        },
        [](const at::Tensor&) { return std::string(); }, /*strict=*/true, /*force_outplace=*/false);
    std::shared_ptr<torch::jit::Graph> graph = traced.first->graph;
    torch::jit::EliminateDeadCode(graph);  // the per-level outputs the loss would use are not returned

    // A module whose forward(self, images) is the traced graph, as torch.jit.trace builds one; with nms
    // the graph is `detect` and forward the NMS code that calls it.
    torch::jit::Module module("__torch__.yolocache.DetectionModel");
    graph->insertInput(0, "self")->setType(module._ivalue()->type());
    auto cu = module._ivalue()->compilation_unit();
    const char* traced_name = nms ? "detect" : "forward";
    torch::jit::Function* fn = cu->create_function(c10::QualifiedName(*module.type()->name(), traced_name), graph);
    module.type()->addMethod(fn);
    if (nms) module.define(TorchScriptNmsSource(*nms));

    std::ostringstream out;
    module.save(out, {{"config.txt", config_json}});
    return out.str();
  } catch (const std::exception& e) {  // one line: c10::Error's what() carries a 20-frame backtrace
    if (IsOutOfMemory(e)) return ExceptionStatus(e, "TorchScript export");
    return Status::Unsupported("TorchScript export: " + ExceptionLine(e));
  }
}

}  // namespace yc::trainer
