#include "trainer/io/pretrained.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <c10/core/GradMode.h>
#include <caffe2/serialize/inline_container.h>

#include "libcache/source/decode.h"  // kMaxImgsz
#include "trainer/io/checkpoint.h"
#include "trainer/io/torch_archive.h"
#include "trainer/io/ultralytics_checkpoint.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

// A yolocache checkpoint: a torch.save archive whose pickle has our `yolocache` entry (trainer/io/checkpoint.h),
// or one of the previous format, a LibTorch archive (constants.pkl beside data.pkl; torch.save's pickles
// have none). Either is read as data; a file that cannot be opened is left to the Ultralytics reader,
// whose error names it.
bool IsYolocacheCheckpoint(const fs::path& path) {
  if (!LooksLikeZip(path)) return false;
  try {
    caffe2::serialize::PyTorchStreamReader zip(path.string());
    if (zip.hasRecord("constants.pkl")) return true;
  } catch (const std::exception&) {
    return false;
  }
  Result<std::unique_ptr<TorchArchive>> archive = TorchArchive::Open(path);
  if (!archive.ok()) return false;
  const PickleTree& t = (*archive)->tree();
  return t.Find(t.root(), kYolocacheEntry) != kNoValue;
}

Result<ModelWeights> ReadYolocache(const fs::path& path) {
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(path, at::Device(at::kCPU));
  if (!r.ok()) return Status::IOError(r.status().message());  // damaged weights: exit 3 like any unreadable file
  const CheckpointMeta& meta = (*r)->meta();
  Result<DetectionModel> model = (*r)->BuildInferenceModel(at::Device(at::kCPU));
  if (!model.ok()) {  // non-finite weights stay Corruption (exit 1: a diverged run's file); the rest is unreadable
    if (model.status().code() == Status::Code::kCorruption) return model.status();
    return Status::IOError(model.status().message());
  }
  ModelWeights w;
  w.format = "yolocache";
  w.name = (*model)->options().name();
  w.nc = meta.nc;
  w.names = meta.names;
  w.imgsz = meta.options.imgsz;
  w.single_cls = meta.options.single_cls;
  w.loss_gains = {meta.options.box, meta.options.cls, meta.options.dfl};
  w.channels = meta.options.channels;
  w.description = "yolocache checkpoint " + ModelNameString(w.name) + " (" + ((*r)->is_release() ? "release, fp16 EMA" : (*r)->has_ema() ? "ema" : "model") + ", " +
                  std::to_string(meta.nc) + " classes)";
  for (const auto& p : (*model)->named_parameters(true)) w.tensors.emplace_back(p.key(), p.value().detach());
  for (const auto& b : (*model)->named_buffers(true)) w.tensors.emplace_back(b.key(), b.value().detach());
  return w;
}

// The training image size a file records becomes predict's and val's default --imgsz: bounded as that.
Result<ModelWeights> CheckImgsz(const fs::path& path, Result<ModelWeights> w) {
  if (w.ok() && (w->imgsz < 0 || w->imgsz > kMaxImgsz)) {
    return Status::IOError(path.string() + ": the recorded training imgsz " + std::to_string(w->imgsz) + " is outside 0.." +
                           std::to_string(kMaxImgsz));
  }
  return w;
}

}  // namespace

Result<ModelWeights> ReadModelWeights(const fs::path& path) {
  // A TorchScript file's forward is a program, run by loading the file; nothing here runs a file's code.
  if (path.extension() == ".torchscript") {
    return Status::Unsupported(path.string() + ": a TorchScript file carries code, and yolocache runs it only as the "
                               "model of val and predict (trainer/io/torchscript_model.h): give the .pt weights");
  }
  if (IsYolocacheCheckpoint(path)) return CheckImgsz(path, ReadYolocache(path));
  YC_ASSIGN_OR_RETURN(UltralyticsCheckpoint ck, ReadUltralyticsCheckpoint(path));
  ModelWeights w;
  w.format = "ultralytics";
  Result<ModelName> name = ParseModelName(ck.family + ck.scale);
  if (!name.ok()) return Status::Unsupported(Status::At(path.string(), name.status().message()));
  w.name = *name;
  w.nc = ck.nc;
  w.names = ck.names;
  w.imgsz = ck.imgsz;
  w.single_cls = ck.single_cls;
  w.description = "Ultralytics" + (ck.version.empty() ? std::string() : " " + ck.version) + " " + ck.family +
                  ck.scale + " (" + ck.source + ", " + std::to_string(ck.nc) + " classes)";
  w.tensors = std::move(ck.state_dict);
  return w;
}

TransferReport TransferWeights(const ModelWeights& weights, torch::nn::Module& model) {
  std::map<std::string, const at::Tensor*> src;
  for (const auto& [name, t] : weights.tensors) src[name] = &t;
  TransferReport r;
  c10::NoGradGuard no_grad;
  auto visit = [&](const std::string& name, at::Tensor dst) {
    ++r.total;
    auto it = src.find(name);
    if (it == src.end() || it->second->sizes() != dst.sizes()) {
      r.not_transferred.push_back(name);
      return;
    }
    dst.copy_(*it->second);  // to the model's device, dtype and memory format
    ++r.transferred;
  };
  for (const auto& p : model.named_parameters(true)) visit(p.key(), p.value());
  for (const auto& b : model.named_buffers(true)) visit(b.key(), b.value());
  return r;
}

std::string CompactNames(const std::vector<std::string>& names, size_t max_items) {
  // Names deeper than 4 components are grouped by their first 4 ("model.22.cv3.0.1.bn.weight" ->
  // "model.22.cv3.0.*"), in order of first appearance, with counts: a head's class branches read as three
  // entries instead of 108 names.
  std::vector<std::pair<std::string, int64_t>> groups;
  std::map<std::string, size_t> index;
  for (const std::string& n : names) {
    std::string key = n;
    size_t pos = 0;
    int dots = 0;
    while ((pos = n.find('.', pos)) != std::string::npos) {
      if (++dots == 4) {
        if (n.find('.', pos + 1) != std::string::npos) key = n.substr(0, pos) + ".*";
        break;
      }
      ++pos;
    }
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) groups.emplace_back(key, 0);
    ++groups[it->second].second;
  }
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i == max_items) {
      out += ", ... (" + std::to_string(groups.size() - i) + " more)";
      break;
    }
    if (i > 0) out += ", ";
    out += groups[i].first;
    if (groups[i].second > 1) out += " (" + std::to_string(groups[i].second) + ")";
  }
  return out;
}

bool IsFrozenName(const std::string& name, const std::vector<int>& layers) {
  if (name.find(".dfl") != std::string::npos) return true;  // always_freeze_names
  // Ultralytics tests `f"model.{x}." in name`: a substring, not a prefix.
  for (int i : layers) {
    if (name.find("model." + std::to_string(i) + ".") != std::string::npos) return true;
  }
  return false;
}

int64_t FreezeLayers(torch::nn::Module& model, const std::vector<int>& layers) {
  int64_t frozen = 0;
  for (auto& p : model.named_parameters(true)) {
    if (IsFrozenName(p.key(), layers)) {
      p.value().set_requires_grad(false);
      ++frozen;
    }
  }
  return frozen;
}

Result<InferenceModel> LoadInferenceModel(const fs::path& path, const at::Device& device) {
  YC_ASSIGN_OR_RETURN(ModelWeights w, ReadModelWeights(path));
  ModelOptions options(w.name, w.nc);
  options.channels = w.channels;
  DetectionModel model{nullptr};
  try {
    model = DetectionModel(options);
  } catch (const std::exception& e) {  // a recorded pruned architecture that does not fit the model
    return Status::IOError(Status::At(path.string(), e.what()));
  }
  TransferReport r = TransferWeights(w, *model);
  if (r.transferred != r.total) {
    return Status::IOError(path.string() + ": " + std::to_string(r.total - r.transferred) + " of the " +
                           ModelNameString(w.name) + " model's " + std::to_string(r.total) + " tensors are missing or differ in shape: " +
                           CompactNames(r.not_transferred));
  }
  // A diverged run's weights (or a damaged file's) would print garbage detections.
  if (const std::string bad = FirstNonFiniteTensor(*model); !bad.empty())
    return Status::Corruption(Status::At(path.string(), "the weights hold NaN or inf values (first: " + bad + ")"));
  InferenceModel m;
  m.model = model;
  m.model->to(device);
  m.model->eval();
  for (auto& p : m.model->parameters(true)) p.set_requires_grad(false);
  m.info = std::move(w);
  m.info.tensors.clear();
  return m;
}

}  // namespace yc::trainer
