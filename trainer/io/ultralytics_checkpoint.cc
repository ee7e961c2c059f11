#include "trainer/io/ultralytics_checkpoint.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "libcache/source/decode.h"  // kMaxImgsz
#include "trainer/io/torch_archive.h"

namespace yc::trainer {

namespace fs = std::filesystem;
using Kind = PyValue::Kind;

namespace {

// Bounds for the module walk: Ultralytics models are ~5 levels deep with < 1000 tensors; a crafted file
// sharing one module many times must not make the walk explode.
constexpr int kMaxDepth = 32;
constexpr size_t kMaxTensors = 100000;

class Reader {
 public:
  Reader(TorchArchive& a) : a_(a), t_(a.tree()) {}

  Status Bad(const std::string& why) const { return Status::IOError(a_.path().string() + ": " + why); }
  Status NotDetect(const std::string& what) const {
    return Status::Unsupported(a_.path().string() + ": not a detection checkpoint: " + what);
  }

  // The module's __dict__ (its BUILD state).
  ValueId Dict(ValueId module) const {
    if (module == kNoValue || t_.at(module).kind != Kind::kObject) return kNoValue;
    const ValueId s = t_.at(module).state;
    if (s != kNoValue && t_.at(s).kind == Kind::kDict) return s;
    // (state, slotstate) pairs: the first item is the __dict__.
    if (s != kNoValue && t_.at(s).kind == Kind::kTuple && !t_.at(s).items.empty() &&
        t_.at(t_.at(s).items[0]).kind == Kind::kDict) {
      return t_.at(s).items[0];
    }
    return kNoValue;
  }

  // The (name, tensor value) pairs a module contributes itself: non-None _parameters, then persistent
  // _buffers, as state_dict lists them.
  Status OwnTensors(ValueId dict, const std::string& prefix, std::vector<std::pair<std::string, ValueId>>* out) const {
    std::set<std::string> non_persistent;
    const ValueId np = t_.Find(dict, "_non_persistent_buffers_set");
    if (np != kNoValue && (t_.at(np).kind == Kind::kSet || t_.at(np).kind == Kind::kList)) {
      for (ValueId v : t_.at(np).items) {
        if (t_.at(v).kind == Kind::kStr) non_persistent.insert(t_.at(v).text);
      }
    }
    for (const char* section : {"_parameters", "_buffers"}) {
      const ValueId d = t_.Find(dict, section);
      if (d == kNoValue) continue;
      if (t_.at(d).kind != Kind::kDict) return Bad("module '" + prefix + "': " + section + " is not a dict");
      for (const auto& [k, v] : t_.at(d).entries) {
        if (t_.at(k).kind != Kind::kStr) return Bad("module '" + prefix + "': a tensor name is not a string");
        if (t_.IsNone(v)) continue;
        const std::string& name = t_.at(k).text;
        if (std::string(section) == "_buffers" && non_persistent.count(name)) continue;
        out->emplace_back(name, v);
      }
    }
    return Status::OK();
  }

  // The module's children (name, module), None children left out.
  Status Children(ValueId dict, const std::string& prefix, std::vector<std::pair<std::string, ValueId>>* out) const {
    const ValueId mods = t_.Find(dict, "_modules");
    if (mods == kNoValue) return Status::OK();
    if (t_.at(mods).kind != Kind::kDict) return Bad("module '" + prefix + "': _modules is not a dict");
    for (const auto& [k, v] : t_.at(mods).entries) {
      if (t_.at(k).kind != Kind::kStr) return Bad("module '" + prefix + "': a child name is not a string");
      if (!t_.IsNone(v)) out->emplace_back(t_.at(k).text, v);
    }
    return Status::OK();
  }

  // How many tensors the state_dict lists under `module` (a module shared by several parents counts
  // under each, as state_dict lists it), saturating above kMaxTensors. Memoised per module object, so a
  // pickle sharing one module 16 ways at each of 20 levels (memo GETs: a 16^20-path DAG of a few KB)
  // costs one visit per object; a cycle or a tree deeper than kMaxDepth (on any path) is refused.
  Result<size_t> CountTensors(ValueId module, const std::string& prefix, int depth) {
    const auto deep = [&] { return Bad("module tree deeper than " + std::to_string(kMaxDepth) + " levels"); };
    if (depth > kMaxDepth) return deep();
    if (auto it = counted_.find(module); it != counted_.end()) {
      if (it->second == kCounting) return Bad("module '" + prefix + "' contains itself (a cycle in the module tree)");
      if (depth + height_.at(module) > kMaxDepth) return deep();
      return it->second;
    }
    counted_[module] = kCounting;
    int height = 0;
    const ValueId dict = Dict(module);
    if (dict == kNoValue) return Bad("module '" + prefix + "' (" + t_.Describe(module) + ") has no state");
    std::vector<std::pair<std::string, ValueId>> own, children;
    YC_RETURN_IF_ERROR(OwnTensors(dict, prefix, &own));
    YC_RETURN_IF_ERROR(Children(dict, prefix, &children));
    size_t n = own.size();
    for (const auto& [name, child] : children) {
      YC_ASSIGN_OR_RETURN(size_t c, CountTensors(child, prefix + name + ".", depth + 1));
      n = std::min(n + c, kMaxTensors + 1);
      height = std::max(height, height_.at(child) + 1);
    }
    counted_[module] = n;
    height_[module] = height;
    return n;
  }

  // Appends the module's state_dict entries (names under `prefix`). CountTensors(module) ran first and
  // was <= kMaxTensors: subtrees without tensors (the SiLU every Conv shares) are skipped, so the walk
  // visits at most kMaxTensors x kMaxDepth paths; tensors are made once per object (TorchArchive::Materialize).
  Status Walk(ValueId module, const std::string& prefix, std::vector<std::pair<std::string, at::Tensor>>* out) {
    const ValueId dict = Dict(module);
    std::vector<std::pair<std::string, ValueId>> own, children;
    YC_RETURN_IF_ERROR(OwnTensors(dict, prefix, &own));
    YC_RETURN_IF_ERROR(Children(dict, prefix, &children));
    for (const auto& [name, v] : own) {
      Result<at::Tensor> tensor = a_.Materialize(v);
      if (!tensor.ok()) return Status(tensor.status()).WithContext("tensor " + prefix + name);
      out->emplace_back(prefix + name, *tensor);
    }
    for (const auto& [name, child] : children) {
      if (counted_.at(child) == 0) continue;
      YC_RETURN_IF_ERROR(Walk(child, prefix + name + ".", out));
    }
    return Status::OK();
  }

  // The last layer of model.model (the head), its class name.
  std::string HeadClass(ValueId model_dict) const {
    const ValueId mods = t_.Find(model_dict, "_modules");
    const ValueId seq = t_.Find(mods, "model");
    const ValueId seq_mods = t_.Find(Dict(seq), "_modules");
    if (seq_mods == kNoValue || t_.at(seq_mods).kind != Kind::kDict || t_.at(seq_mods).entries.empty()) return "";
    return t_.at(t_.at(seq_mods).entries.back().second).name;
  }

  std::string Str(ValueId dict, const char* key) const {
    const ValueId v = t_.Find(dict, key);
    return v != kNoValue && t_.at(v).kind == Kind::kStr ? t_.at(v).text : "";
  }

  Result<UltralyticsCheckpoint> Read();

 private:
  static constexpr size_t kCounting = ~size_t{0};  // counted_ while the module's subtree is being counted
  TorchArchive& a_;
  const PickleTree& t_;
  std::map<ValueId, size_t> counted_;  // module -> CountTensors
  std::map<ValueId, int> height_;      // module -> levels below it
};

Result<UltralyticsCheckpoint> Reader::Read() {
  UltralyticsCheckpoint ck;
  const ValueId root = t_.root();
  if (t_.at(root).kind != Kind::kDict) {
    return Status::Unsupported(a_.path().string() + ": not an Ultralytics checkpoint: the pickle holds " + t_.Describe(root) +
                               ", not a dict");
  }
  ValueId model = t_.Find(root, "ema");
  ck.source = "ema";
  if (t_.IsNone(model)) {
    model = t_.Find(root, "model");
    ck.source = "model";
  }
  if (t_.IsNone(model)) {
    return Status::Unsupported(a_.path().string() + ": not an Ultralytics checkpoint: no 'model' or 'ema' entry");
  }
  if (t_.at(model).kind != Kind::kObject) return NotDetect("'" + ck.source + "' holds " + t_.Describe(model));
  const std::string cls = t_.at(model).name;
  if (cls != "DetectionModel") return NotDetect(t_.ClassName(model) + " (a " + cls + ", not a DetectionModel)");
  const ValueId dict = Dict(model);
  if (dict == kNoValue) return Bad("the DetectionModel has no state");
  const std::string head = HeadClass(dict);
  if (head != "Detect") {
    return NotDetect("its head is " + (head.empty() ? std::string("missing") : head) + ", not Detect");
  }

  // Architecture: yaml_file names it ("yolov8n.yaml", "yolo11s.yaml", maybe with a directory).
  const ValueId yaml = t_.Find(dict, "yaml");
  if (yaml == kNoValue || t_.at(yaml).kind != Kind::kDict) return Bad("the model has no 'yaml' dict");
  ck.yaml_file = Str(yaml, "yaml_file");
  const std::string base = fs::path(ck.yaml_file).filename().string();
  static const std::regex kArch(R"((yolov8|yolo11)([nsmlx]?)\.ya?ml)");
  std::smatch m;
  if (!std::regex_match(base, m, kArch)) {
    return Status::Unsupported(a_.path().string() + ": unknown architecture '" +
                               (ck.yaml_file.empty() ? std::string("(no yaml_file)") : ck.yaml_file) +
                               "': this build reads yolov8 and yolo11 detection models");
  }
  ck.family = m[1].str();
  ck.scale = Str(yaml, "scale");
  if (ck.scale.empty()) ck.scale = m[2].str();
  if (ck.scale.size() != 1 || std::string("nsmlx").find(ck.scale) == std::string::npos) {
    return Bad("model scale '" + ck.scale + "' is not one of n, s, m, l, x");
  }
  const ValueId nc = t_.Find(yaml, "nc");
  if (nc == kNoValue || t_.at(nc).kind != Kind::kInt || t_.at(nc).integer < 1 || t_.at(nc).integer > 100000) {
    return Bad("the model's yaml has no valid 'nc'");
  }
  ck.nc = t_.at(nc).integer;

  // names: {int: str} (or a list); classes without a name get their number, as Ultralytics' default.
  ck.names.resize(static_cast<size_t>(ck.nc));
  for (int64_t i = 0; i < ck.nc; ++i) ck.names[static_cast<size_t>(i)] = std::to_string(i);
  const ValueId names = t_.Find(dict, "names");
  if (names != kNoValue && t_.at(names).kind == Kind::kDict) {
    for (const auto& [k, v] : t_.at(names).entries) {
      if (t_.at(k).kind == Kind::kInt && t_.at(v).kind == Kind::kStr && t_.at(k).integer >= 0 && t_.at(k).integer < ck.nc) {
        ck.names[static_cast<size_t>(t_.at(k).integer)] = t_.at(v).text;
      }
    }
  } else if (names != kNoValue && t_.at(names).kind == Kind::kList) {
    const auto& items = t_.at(names).items;
    for (size_t i = 0; i < items.size() && i < ck.names.size(); ++i) {
      if (t_.at(items[i]).kind == Kind::kStr) ck.names[i] = t_.at(items[i]).text;
    }
  }
  const ValueId stride = t_.Find(dict, "stride");
  if (stride != kNoValue && a_.IsTensor(stride)) {
    YC_ASSIGN_OR_RETURN(at::Tensor s, a_.Tensor(stride));
    at::Tensor f = s.to(at::kDouble).reshape({-1});
    for (int64_t i = 0; i < f.numel() && i < 8; ++i) ck.stride.push_back(f[i].item<double>());
  }
  const ValueId train_args = t_.Find(root, "train_args");
  const ValueId imgsz = t_.Find(train_args, "imgsz");
  if (imgsz != kNoValue && t_.at(imgsz).kind == Kind::kInt && t_.at(imgsz).integer > 0) {
    // predict and val would letterbox to it: as --imgsz, at most kMaxImgsz.
    if (t_.at(imgsz).integer > kMaxImgsz) {
      return Bad("train_args.imgsz " + std::to_string(t_.at(imgsz).integer) + " is above " + std::to_string(kMaxImgsz));
    }
    ck.imgsz = static_cast<int>(t_.at(imgsz).integer);
  }
  const ValueId single_cls = t_.Find(train_args, "single_cls");
  ck.single_cls = single_cls != kNoValue && t_.at(single_cls).kind == Kind::kBool && t_.at(single_cls).boolean;
  ck.version = Str(root, "version");
  ck.date = Str(root, "date");

  YC_ASSIGN_OR_RETURN(size_t tensors, CountTensors(model, "", 0));
  if (tensors > kMaxTensors) {
    return Bad("the module tree lists more than " + std::to_string(kMaxTensors) +
               " tensors (modules shared many times over?): refused");
  }
  YC_RETURN_IF_ERROR(Walk(model, "", &ck.state_dict));
  if (ck.state_dict.empty()) return Bad("the model holds no tensors");
  return ck;
}

}  // namespace

Result<UltralyticsCheckpoint> ReadUltralyticsCheckpoint(const fs::path& path) {
  try {
    YC_ASSIGN_OR_RETURN(std::unique_ptr<TorchArchive> a, TorchArchive::Open(path));
    Reader reader(*a);
    return reader.Read();
  } catch (const std::exception& e) {  // LibTorch errors (allocation of a huge storage, ...) stay Status
    std::string why = e.what();
    return Status::IOError(path.string() + ": " + why.substr(0, why.find('\n')));
  }
}

}  // namespace yc::trainer
