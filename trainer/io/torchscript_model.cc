#include "trainer/io/torchscript_model.h"

#include <algorithm>
#include <system_error>

#include <nlohmann/json.hpp>
#include <torch/script.h>

#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

namespace fs = std::filesystem;

bool IsTorchScriptPath(const fs::path& path) { return path.extension() == ".torchscript"; }
bool IsOnnxPath(const fs::path& path) { return path.extension() == ".onnx"; }

Status CheckTracedSize(const TorchScriptModel& model, const std::filesystem::path& path, int imgsz,
                       const std::string& command) {
  const auto [h, w] = model.imgsz;
  if (h != w) {
    return Status::InvalidArgument(path.string() + ": exported at " + std::to_string(h) + "x" + std::to_string(w) +
                                   "; " + command + " takes a square export");
  }
  if (imgsz != 0 && imgsz != h) {
    return Status::InvalidArgument("--imgsz " + std::to_string(imgsz) + ": " + path.string() + " was traced at " +
                                   std::to_string(h) + " and runs at that size only");
  }
  return Status::OK();
}

Status OnnxNotRunnable(const fs::path& path, const std::string& command) {
  return Status::Unsupported(path.string() + ": an ONNX file; " + command +
                             " runs .pt weights (Ultralytics' or ours) and .torchscript exports, not ONNX (yolocache "
                             "has no ONNX runtime): give the .pt it was exported from, or export --format torchscript "
                             "and give that");
}

at::Tensor TorchScriptModel::Forward(const at::Tensor& images) const {
  // The graph takes `batch` images: a batch is run in chunks of that size, the last one padded with
  // zeros (whose rows are dropped).
  const int64_t n = images.size(0);
  std::vector<at::Tensor> preds;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t take = std::min<int64_t>(batch, n - start);
    at::Tensor x = images.narrow(0, start, take).to(half ? at::kHalf : at::kFloat);
    if (take < batch) {
      at::Tensor padded = at::zeros({batch, x.size(1), x.size(2), x.size(3)}, x.options());
      padded.narrow(0, 0, take).copy_(x);
      x = padded;
    }
    std::vector<torch::jit::IValue> in{x};
    torch::jit::IValue out = module->forward(in);
    // Ultralytics' own export returns the tensor; a tuple's or a list's first element is the prediction.
    at::Tensor pred = out.isTuple() ? out.toTupleRef().elements().at(0).toTensor()
                      : out.isTensorList() ? out.toTensorVector().at(0)
                                           : out.toTensor();
    preds.push_back(pred.narrow(0, 0, take).to(at::kFloat));
  }
  return preds.size() == 1 ? preds[0] : at::cat(preds, 0);
}

namespace {

// config.txt: {"stride": 32, "task": "detect", "batch": 1, "imgsz": [h, w], "names": {"0": ...}, "args": {"half": ...}}
Status ReadMetadata(const fs::path& path, const std::string& text, TorchScriptModel* m) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return Status::IOError(path.string() + ": not a detection export (" + why + ")");
  };
  if (!j.is_object()) return bad("its config.txt metadata is not a JSON object");
  if (auto t = j.find("task"); t != j.end() && (!t->is_string() || *t != "detect")) return bad("task is not detect");
  auto names = j.find("names");
  if (names == j.end() || !names->is_object() || names->empty()) return bad("no class names in its metadata");
  m->names.assign(names->size(), "");
  for (auto it = names->begin(); it != names->end(); ++it) {
    size_t id = 0;
    try {
      id = std::stoul(it.key());
    } catch (const std::exception&) {
      return bad("class id '" + it.key() + "' is not a number");
    }
    if (id >= m->names.size() || !it->is_string()) return bad("class ids are not 0..nc-1 with names");
    m->names[id] = it->get<std::string>();
  }
  auto imgsz = j.find("imgsz");
  if (imgsz == j.end() || !imgsz->is_array() || imgsz->size() != 2 || !(*imgsz)[0].is_number_integer() ||
      !(*imgsz)[1].is_number_integer()) {
    return bad("no [h, w] imgsz in its metadata");
  }
  m->imgsz = {(*imgsz)[0].get<int>(), (*imgsz)[1].get<int>()};
  if (m->imgsz[0] < 32 || m->imgsz[1] < 32 || m->imgsz[0] > 8192 || m->imgsz[1] > 8192) return bad("imgsz out of range");
  if (auto b = j.find("batch"); b != j.end() && b->is_number_integer()) m->batch = std::max(1, b->get<int>());
  if (auto s = j.find("stride"); s != j.end() && s->is_number_integer()) m->stride = s->get<int>();
  if (auto a = j.find("args"); a != j.end() && a->is_object()) {
    if (auto h = a->find("half"); h != a->end() && h->is_boolean()) m->half = h->get<bool>();
    if (auto n = a->find("nms"); n != a->end() && n->is_boolean()) m->end2end = n->get<bool>();
  }
  std::string what = "TorchScript export";
  if (auto d = j.find("description"); d != j.end() && d->is_string()) what += " (" + d->get<std::string>() + ")";
  m->description = what + ", " + std::to_string(m->names.size()) + " classes";
  return Status::OK();
}

}  // namespace

Result<TorchScriptModel> LoadTorchScriptModel(const fs::path& path, const at::Device& device) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::IOError(Status::At(path.string(), "not a file"));
  TorchScriptModel m;
  torch::jit::ExtraFilesMap extra{{"config.txt", ""}};
  try {
    // map_location: every tensor of the file (its weights are graph constants) onto `device`.
    m.module = std::make_shared<torch::jit::Module>(torch::jit::load(path.string(), device, extra));
  } catch (const std::exception& e) {
    return Status::IOError(path.string() + ": not a TorchScript file torch.jit.load reads (" + ExceptionLine(e) +
                           "); give .pt weights or a .torchscript written by export");
  }
  if (!m.module->find_method("forward")) {
    return Status::IOError(path.string() + ": a TorchScript archive without forward (a checkpoint renamed "
                                           ".torchscript?); give .pt weights or a .torchscript written by export");
  }
  if (extra["config.txt"].empty()) {
    return Status::IOError(path.string() + ": no config.txt metadata (class names, imgsz): not written by "
                                           "yolocache-train export or Ultralytics' export; give .pt weights instead");
  }
  YC_RETURN_IF_ERROR(ReadMetadata(path, extra["config.txt"], &m));
  m.module->eval();
  return m;
}

}  // namespace yc::trainer
