// CheckpointReader (trainer/io/checkpoint.h): our checkpoints read as data. Current files are torch.save
// archives whose root is a dict (ReadSaved: the `yolocache` entry; release weights from Ultralytics' `model`
// through trainer/io/ultralytics_checkpoint.h). Files of the previous format (ReadLegacy) are the zip of a
// TorchScript module (torch::serialize::OutputArchive); its data.pkl is the module object pickled by
// LibTorch's jit pickler: GLOBAL '__torch__...' 'Module', EMPTY_TUPLE, NEWOBJ, then BUILD with a dict of
// its attributes (meta: str, model/ema/grads: torch.jit._pickle.build_tensorlist([...]), optimizer: a
// nested module object, checksum: str). TorchArchive (trainer/io/torch_archive.h) unpickles it into a
// tree without importing or calling anything and rebuilds tensors from data/<key>, CRC-checked.
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "trainer/io/checkpoint.h"
#include "trainer/io/checkpoint_checksum.h"
#include "trainer/io/named_state.h"
#include "trainer/io/optimizer_state.h"
#include "trainer/io/torch_archive.h"
#include "trainer/io/ultralytics_checkpoint.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Kind = PyValue::Kind;

namespace {

constexpr const char* kSections[] = {"model", "ema", "grads"};
constexpr uint64_t kMaxCodeEntryBytes = 1 << 20;  // our writer's are a few hundred bytes
constexpr int64_t kMaxListSize = 1 << 24;

// Whether a line of TorchScript source defines something (a method, a function): anything but the
// attribute declarations our writer's classes consist of.
bool DefinesCode(const std::string& source) {
  size_t pos = 0;
  while (pos < source.size()) {
    size_t end = source.find('\n', pos);
    if (end == std::string::npos) end = source.size();
    const size_t first = source.find_first_not_of(" \t", pos);
    if (first < end && source.compare(first, 4, "def ") == 0) return true;
    pos = end + 1;
  }
  return source.find("__setstate__") != std::string::npos;
}

// Reading the jit pickle's tree: every accessor checks kinds, so a crafted tree is an error, not a crash.
class ScriptTree {
 public:
  ScriptTree(TorchArchive& archive, const std::string& where) : a_(archive), t_(archive.tree()), where_(where) {}

  Status Bad(const std::string& why) const { return Status::Corruption(where_ + ": " + why); }

  // The attributes of a module object: its BUILD state dict (kNoValue when `id` is no such object).
  ValueId Attributes(ValueId id) const {
    if (id == kNoValue || t_.at(id).kind != Kind::kObject) return kNoValue;
    const ValueId state = t_.at(id).state;
    return state != kNoValue && t_.at(state).kind == Kind::kDict ? state : kNoValue;
  }
  ValueId Attr(ValueId object, const std::string& name) const { return t_.Find(Attributes(object), name); }
  bool IsObject(ValueId id) const { return Attributes(id) != kNoValue; }

  // torch.jit._pickle.restore_type_tag(value, type) and build_*list(list) wrap plain values.
  ValueId Unwrap(ValueId id) const {
    for (int depth = 0; depth < 4 && id != kNoValue && t_.at(id).kind == Kind::kObject; ++depth) {
      const std::string cls = t_.ClassName(id);
      if (cls.rfind("torch.jit._pickle.", 0) != 0) break;
      const ValueId args = t_.at(id).args;
      if (args == kNoValue || t_.at(args).kind != Kind::kTuple || t_.at(args).items.empty()) break;
      id = t_.at(args).items[0];
    }
    return id;
  }

  Result<std::string> String(ValueId id, const std::string& what) const {
    id = Unwrap(id);
    if (id == kNoValue || t_.at(id).kind != Kind::kStr) return Bad(what + " is not a string");
    return t_.at(id).text;
  }

  Result<std::vector<at::Tensor>> TensorList(ValueId id, const std::string& what) {
    id = Unwrap(id);
    if (id == kNoValue || (t_.at(id).kind != Kind::kList && t_.at(id).kind != Kind::kTuple)) {
      return Bad("'" + what + "' record is missing or not a tensor list");
    }
    std::vector<at::Tensor> out;
    for (ValueId item : t_.at(id).items) {
      Result<at::Tensor> tensor = a_.Tensor(item);
      if (!tensor.ok()) return Bad("'" + what + "': " + tensor.status().message());
      out.push_back(*tensor);
    }
    return out;
  }

  // A number: an int, float or bool, or a one-element tensor (torch::optim writes sizes as tensors).
  Result<double> Number(ValueId id, const std::string& what) {
    id = Unwrap(id);
    if (id != kNoValue) {
      const PyValue& v = t_.at(id);
      if (v.kind == Kind::kInt) return static_cast<double>(v.integer);
      if (v.kind == Kind::kFloat) return v.real;
      if (v.kind == Kind::kBool) return v.boolean ? 1.0 : 0.0;
      if (a_.IsTensor(id)) {
        Result<at::Tensor> t = a_.Tensor(id);
        if (t.ok() && t->numel() == 1) return t->to(at::kDouble).item<double>();
      }
    }
    return Bad(what + " is not a number");
  }

  Result<int64_t> Count(ValueId id, const std::string& what) {
    YC_ASSIGN_OR_RETURN(double n, Number(id, what));
    if (!(n >= 0 && n <= kMaxListSize) || n != static_cast<double>(static_cast<int64_t>(n))) {
      return Bad(what + " is not a plausible count");
    }
    return static_cast<int64_t>(n);
  }

  // LibTorch's optimizer archive (torch/optim/serialize.h): pytorch_version "1.5.0"; state: one module per
  // parameter key with its step and tensors; param_groups: "param_groups/size" and per group "params/size",
  // "params/<j>" (the parameter keys) and "options".
  Result<SavedOptimizer> Optimizer(ValueId opt) {
    YC_ASSIGN_OR_RETURN(std::string version, String(Attr(opt, "pytorch_version"), "optimizer pytorch_version"));
    if (version != "1.5.0") return Bad("optimizer state of an unknown layout (pytorch_version " + version + ")");
    const ValueId state = Attr(opt, "state"), groups = Attr(opt, "param_groups");
    if (!IsObject(state) || !IsObject(groups)) return Bad("optimizer state without state or param_groups");
    std::map<std::string, SavedParamState> states;
    for (const auto& [key, value] : t_.at(Attributes(state)).entries) {
      if (!IsObject(value) || t_.at(key).kind != Kind::kStr) continue;  // `training` and other plain attributes
      SavedParamState s;
      for (const auto& [k, v] : t_.at(Attributes(value)).entries) {
        if (t_.at(k).kind != Kind::kStr) continue;
        const std::string& name = t_.at(k).text;
        if (IsStateIntName(name)) {
          const ValueId n = Unwrap(v);
          if (n == kNoValue || t_.at(n).kind != Kind::kInt) return Bad("optimizer state " + name + " is not an integer");
          s.ints[name] = t_.at(n).integer;
        } else if (IsStateTensorName(name)) {
          Result<at::Tensor> tensor = a_.Tensor(v);
          if (!tensor.ok()) return Bad("optimizer state " + name + ": " + tensor.status().message());
          s.tensors[name] = *tensor;
        }
      }
      states[t_.at(key).text] = std::move(s);
    }
    SavedOptimizer out;
    YC_ASSIGN_OR_RETURN(int64_t ngroups, Count(Attr(groups, "param_groups/size"), "optimizer param_groups/size"));
    for (int64_t i = 0; i < ngroups; ++i) {
      const std::string gname = "param_groups/" + std::to_string(i);
      const ValueId group = Attr(groups, gname);
      if (!IsObject(group)) return Bad("optimizer " + gname + " is missing");
      SavedParamGroup g;
      const ValueId options = Attr(group, "options");
      if (!IsObject(options)) return Bad("optimizer " + gname + " has no options");
      for (const auto& [k, v] : t_.at(Attributes(options)).entries) {
        if (t_.at(k).kind != Kind::kStr) continue;
        const std::string& name = t_.at(k).text;
        const ValueId value = Unwrap(v);
        if (name == "betas" && value != kNoValue && t_.at(value).kind == Kind::kTuple && t_.at(value).items.size() == 2) {
          for (int b = 0; b < 2; ++b) {
            YC_ASSIGN_OR_RETURN(double beta, Number(t_.at(value).items[static_cast<size_t>(b)], "optimizer option betas"));
            g.options["betas." + std::to_string(b)] = beta;
          }
        } else if (IsOptionName(name)) {
          YC_ASSIGN_OR_RETURN(double x, Number(value, "optimizer option " + name));
          g.options[name] = x;
        }
      }
      YC_ASSIGN_OR_RETURN(int64_t nparams, Count(Attr(group, "params/size"), "optimizer " + gname + " params/size"));
      if (nparams > static_cast<int64_t>(t_.size())) return Bad("optimizer " + gname + " lists more parameters than the file holds");
      for (int64_t j = 0; j < nparams; ++j) {
        YC_ASSIGN_OR_RETURN(std::string key,
                            String(Attr(group, "params/" + std::to_string(j)), "optimizer " + gname + " parameter key"));
        auto it = states.find(key);
        if (it == states.end()) {
          g.params.emplace_back();
        } else {
          g.params.emplace_back(it->second);
        }
      }
      out.groups.push_back(std::move(g));
    }
    return out;
  }

 private:
  TorchArchive& a_;
  const PickleTree& t_;
  std::string where_;
};

// Our writer's code/ entries declare the module classes' attributes and nothing else; a file whose code
// defines anything was not written by us, and it is refused (even though nothing of it would run here).
Status RefuseCode(TorchArchive& archive, const std::string& where) {
  for (const std::string& name : archive.RecordsUnder("code/")) {
    if (name.size() < 3 || name.compare(name.size() - 3, 3, ".py") != 0) continue;  // .debug_pkl: source ranges
    Result<std::string> source = archive.Record(name, kMaxCodeEntryBytes);
    if (!source.ok()) return Status::Corruption(source.status().message());
    if (DefinesCode(*source)) {
      return Status::Corruption(where + ": carries TorchScript code (" + name +
                                " defines methods); yolocache never runs code from a weights file");
    }
  }
  return Status::OK();
}

}  // namespace

struct CheckpointReader::Impl {
  Json tensor_names = Json::object();
  std::map<std::string, std::vector<at::Tensor>> sections;  // model, ema, grads (CPU, as stored)
  std::optional<SavedOptimizer> optimizer;
};

CheckpointReader::~CheckpointReader() = default;

namespace {

// Our optimizer entry of a torch.save-format checkpoint (checkpoint.cc PickleOptimizer writes it).
Result<SavedOptimizer> ParseOptimizer(TorchArchive& a, ValueId id, const ScriptTree& tree) {
  const PickleTree& t = a.tree();
  auto dict = [&](ValueId v) { return v != kNoValue && t.at(v).kind == Kind::kDict; };
  auto list = [&](ValueId v) { return v != kNoValue && t.at(v).kind == Kind::kList; };
  const ValueId groups = t.Find(id, "groups");
  if (!dict(id) || !list(groups)) return tree.Bad("the optimizer entry has no groups list");
  SavedOptimizer out;
  for (ValueId gid : t.at(groups).items) {
    const ValueId options = t.Find(gid, "options"), params = t.Find(gid, "params");
    if (!dict(gid) || !dict(options) || !list(params)) return tree.Bad("an optimizer group lacks options or params");
    SavedParamGroup g;
    for (const auto& [k, v] : t.at(options).entries) {
      if (t.at(k).kind != Kind::kStr || t.at(v).kind != Kind::kFloat) return tree.Bad("an optimizer option is not a number");
      g.options[t.at(k).text] = t.at(v).real;
    }
    for (ValueId pid : t.at(params).items) {
      if (t.IsNone(pid)) {
        g.params.emplace_back();
        continue;
      }
      const ValueId ints = t.Find(pid, "ints"), tensors = t.Find(pid, "tensors");
      if (!dict(pid) || !dict(ints) || !dict(tensors)) return tree.Bad("an optimizer parameter state is malformed");
      SavedParamState s;
      for (const auto& [k, v] : t.at(ints).entries) {
        if (t.at(k).kind != Kind::kStr || t.at(v).kind != Kind::kInt) return tree.Bad("an optimizer state count is not an integer");
        s.ints[t.at(k).text] = t.at(v).integer;
      }
      for (const auto& [k, v] : t.at(tensors).entries) {
        if (t.at(k).kind != Kind::kStr) return tree.Bad("an optimizer state name is not a string");
        Result<at::Tensor> tensor = a.Tensor(v);
        if (!tensor.ok()) return tree.Bad("optimizer state " + t.at(k).text + ": " + tensor.status().message());
        s.tensors[t.at(k).text] = *tensor;
      }
      g.params.emplace_back(std::move(s));
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

// A section stored only as Ultralytics' DetectionModel (release weights: its `model`; the compact training
// form's EMA: its `ema`), read as Ultralytics' own files are, in the order meta.tensors lists them.
Result<std::vector<at::Tensor>> UltralyticsWeights(const fs::path& path, const Json& names, const std::string& where) {
  YC_ASSIGN_OR_RETURN(UltralyticsCheckpoint ck, ReadUltralyticsCheckpoint(path));
  std::map<std::string, at::Tensor> by_name(ck.state_dict.begin(), ck.state_dict.end());
  std::vector<at::Tensor> out;
  for (const auto& n : names) {
    if (!n.is_string()) return Status::Corruption(Status::At(where, "'model' names are not strings"));
    auto it = by_name.find(n.get<std::string>());
    if (it == by_name.end()) return Status::Corruption(Status::At(where, "the Ultralytics model lacks " + n.get<std::string>()));
    out.push_back(it->second);
  }
  return out;
}

// A checkpoint's meta JSON (`what`: the meta entry or the legacy meta record) and its tensor names.
struct ParsedMeta {
  CheckpointMeta meta;
  Json tensor_names = Json::object();
};

Result<ParsedMeta> ParseMeta(const std::string& text, const std::string& where, const std::string& what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(Status::At(where, what + " is not valid JSON"));
  Result<CheckpointMeta> m = MetaFromJson(j);
  if (!m.ok()) return Status(m.status()).WithContext(where);
  ParsedMeta parsed;
  parsed.meta = std::move(*m);
  if (auto it = j.find("tensors"); it != j.end() && it->is_object()) parsed.tensor_names = *it;
  return parsed;
}

}  // namespace

// A torch.save-format checkpoint (checkpoint.h): the `yolocache` entry of the root dict.
Status CheckpointReader::ReadSaved(TorchArchive& archive, ChecksumInput* checksum, std::string* stored) {
  Impl& impl = *impl_;
  const std::string where = path_.string();
  YC_RETURN_IF_ERROR(RefuseCode(archive, where));  // torch.save writes no code/; refused as in the old format
  ScriptTree tree(archive, where);
  const PickleTree& t = archive.tree();
  const ValueId ours = t.Find(t.root(), kYolocacheEntry);
  if (ours == kNoValue || t.at(ours).kind != Kind::kDict) {
    return Status::Corruption(Status::At(where, "not a yolocache checkpoint (a torch.save file without a '" +
                                                    std::string(kYolocacheEntry) + "' entry)"));
  }
  YC_ASSIGN_OR_RETURN(std::string meta_text, tree.String(t.Find(ours, "meta"), "meta entry"));
  YC_ASSIGN_OR_RETURN(ParsedMeta parsed, ParseMeta(meta_text, where, "meta entry"));
  meta_ = std::move(parsed.meta);
  impl.tensor_names = std::move(parsed.tensor_names);
  checksum->AddText("meta", meta_text);
  for (const char* section : kSections) {
    if (!impl.tensor_names.contains(section)) continue;
    std::vector<at::Tensor> tensors;
    const bool ultralytics_only = (std::string(section) == "model" && is_release()) || std::string(section) == "ema";
    if (t.Find(ours, section) == kNoValue && ultralytics_only) {
      YC_ASSIGN_OR_RETURN(tensors, UltralyticsWeights(path_, impl.tensor_names[section], where));
    } else {
      YC_ASSIGN_OR_RETURN(tensors, tree.TensorList(t.Find(ours, section), section));
    }
    for (size_t i = 0; i < tensors.size(); ++i) checksum->AddTensor(std::string(section) + "/" + std::to_string(i), tensors[i]);
    impl.sections[section] = std::move(tensors);
  }
  if (const ValueId optimizer = t.Find(ours, "optimizer"); optimizer != kNoValue) {
    YC_ASSIGN_OR_RETURN(SavedOptimizer saved, ParseOptimizer(archive, optimizer, tree));
    AddToChecksum(saved, checksum);
    impl.optimizer = std::move(saved);
  }
  if (const ValueId sum = t.Find(ours, kChecksumRecord); sum != kNoValue) {
    YC_ASSIGN_OR_RETURN(*stored, tree.String(sum, "checksum entry"));
  }
  return Status::OK();
}

// A LibTorch-archive checkpoint (the format before torch.save files): the jit pickle's module attributes.
Status CheckpointReader::ReadLegacy(TorchArchive& archive, ChecksumInput* checksum, std::string* stored) {
  Impl& impl = *impl_;
  const std::string where = path_.string();
  YC_RETURN_IF_ERROR(RefuseCode(archive, where));
  ScriptTree tree(archive, where);
  const ValueId root = archive.tree().root();
  const ValueId meta_id = tree.Attr(root, "meta");
  if (meta_id == kNoValue) return Status::Corruption(Status::At(where, "not a yolocache checkpoint (no meta record)"));
  YC_ASSIGN_OR_RETURN(std::string meta_text, tree.String(meta_id, "meta record"));
  YC_ASSIGN_OR_RETURN(ParsedMeta parsed, ParseMeta(meta_text, where, "meta record"));
  meta_ = std::move(parsed.meta);
  impl.tensor_names = std::move(parsed.tensor_names);

  // Everything is read (and so CRC-checked) now, and hashed in the writer's order when the file has a checksum.
  checksum->AddText("meta", meta_text);
  for (const char* section : kSections) {
    if (!impl.tensor_names.contains(section)) continue;
    YC_ASSIGN_OR_RETURN(std::vector<at::Tensor> tensors, tree.TensorList(tree.Attr(root, section), section));
    for (size_t i = 0; i < tensors.size(); ++i) checksum->AddTensor(std::string(section) + "/" + std::to_string(i), tensors[i]);
    impl.sections[section] = std::move(tensors);
  }
  const ValueId optimizer = tree.Attr(root, "optimizer");
  if (optimizer != kNoValue) {
    if (!tree.IsObject(optimizer)) return tree.Bad("the optimizer record is not an archive");
    YC_ASSIGN_OR_RETURN(SavedOptimizer saved, tree.Optimizer(optimizer));
    AddToChecksum(saved, checksum);
    impl.optimizer = std::move(saved);
  }
  if (const ValueId sum = tree.Attr(root, kChecksumRecord); sum != kNoValue) {
    YC_ASSIGN_OR_RETURN(*stored, tree.String(sum, "checksum record"));
  }
  return Status::OK();
}

Result<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const fs::path& path, const at::Device& /*device*/) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::NotFound(Status::At(path.string(), "no such checkpoint file"));
  const std::string where = path.string();
  std::unique_ptr<CheckpointReader> r(new CheckpointReader());
  r->path_ = path;
  r->impl_ = std::make_unique<Impl>();
  try {
    Result<std::unique_ptr<TorchArchive>> archive = TorchArchive::Open(path);
    if (!archive.ok()) return Status::Corruption("cannot read checkpoint: " + archive.status().message());
    ChecksumInput checksum;
    std::string want;
    if ((*archive)->tree().at((*archive)->tree().root()).kind == Kind::kDict) {
      YC_RETURN_IF_ERROR(r->ReadSaved(**archive, &checksum, &want));
    } else {
      YC_RETURN_IF_ERROR(r->ReadLegacy(**archive, &checksum, &want));
    }
    if (!want.empty()) {
      const std::string got = checksum.Digest();
      if (got != want) {
        return Status::Corruption(Status::At(where, "checksum mismatch (stored " + want + ", contents " + got +
                                                        "): the file was changed or damaged after it was written"));
      }
    }
  } catch (const std::exception& e) {
    std::string why = e.what();
    return Status::Corruption(Status::At(where, "cannot read checkpoint: " + why.substr(0, why.find('\n'))));
  }
  if (static_cast<int64_t>(r->meta_.names.size()) != r->meta_.nc) {
    return Status::Corruption(Status::At(where, "meta: names has " + std::to_string(r->meta_.names.size()) +
                                                    " entries for nc " + std::to_string(r->meta_.nc)));
  }
  return r;
}

bool CheckpointReader::has_ema() const { return impl_->tensor_names.contains("ema"); }
bool CheckpointReader::has_grads() const { return impl_->tensor_names.contains("grads"); }
bool CheckpointReader::has_optimizer() const { return impl_->optimizer.has_value(); }

namespace {

Result<std::map<std::string, at::Tensor>> NamedSection(const CheckpointReader::Impl& impl, const std::string& section,
                                                       const std::string& where) {
  auto it = impl.tensor_names.find(section);
  auto saved = impl.sections.find(section);
  if (it == impl.tensor_names.end() || !it->is_array() || saved == impl.sections.end()) {
    return Status::Corruption(Status::At(where, "no '" + section + "' tensors"));
  }
  const std::vector<at::Tensor>& tensors = saved->second;
  if (tensors.size() != it->size()) {
    return Status::Corruption(Status::At(where, "'" + section + "' has " + std::to_string(tensors.size()) +
                                                    " tensors for " + std::to_string(it->size()) + " names"));
  }
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!(*it)[i].is_string()) return Status::Corruption(Status::At(where, "'" + section + "' names are not strings"));
    out[(*it)[i].get<std::string>()] = tensors[i];
  }
  return out;
}

}  // namespace

Status CheckpointReader::LoadModule(const std::string& wanted, torch::nn::Module& module) const {
  // The compact training form keeps no model tensors: the model resumes from the EMA, as Ultralytics' does.
  const std::string section = wanted == "model" && !impl_->tensor_names.contains("model") && has_ema() ? "ema" : wanted;
  try {
    YC_ASSIGN_OR_RETURN(auto saved, NamedSection(*impl_, section, path_.string()));
    c10::NoGradGuard no_grad;
    auto state = NamedState(module);
    if (state.size() != saved.size()) {
      return Status::Corruption(Status::At(path_.string(), "'" + section + "' has " + std::to_string(saved.size()) +
                                                               " tensors, the model " + std::to_string(state.size())));
    }
    for (auto& [name, dst] : state) {
      auto it = saved.find(name);
      if (it == saved.end()) return Status::Corruption(Status::At(path_.string(), "'" + section + "' lacks " + name));
      // fp16 release weights load into an fp32 model; any other dtype change means another model.
      const bool widened = it->second.scalar_type() == at::kHalf && dst.is_floating_point();
      if (it->second.sizes() != dst.sizes() || (it->second.scalar_type() != dst.scalar_type() && !widened)) {
        return Status::Corruption(Status::At(path_.string(), "'" + section + "' tensor " + name + " has shape/dtype " +
                                                                 c10::str(it->second.sizes(), " ", it->second.scalar_type()) +
                                                                 ", the model " + c10::str(dst.sizes(), " ", dst.scalar_type())));
      }
      dst.copy_(it->second);
    }
  } catch (const std::exception& e) {
    return Status::Corruption(Status::At(path_.string(), "loading '" + section + "': " + ExceptionLine(e)));
  }
  return Status::OK();
}

Status CheckpointReader::LoadOptimizer(torch::optim::Optimizer& optimizer) const {
  if (!impl_->optimizer) return Status::Corruption(Status::At(path_.string(), "no optimizer state (cannot resume from it)"));
  try {
    Status st = RestoreOptimizer(*impl_->optimizer, optimizer);
    if (!st.ok()) return Status::Corruption(Status::At(path_.string(), "optimizer state does not fit: " + st.message()));
  } catch (const std::exception& e) {
    return Status::Corruption(Status::At(path_.string(), std::string("optimizer state does not fit: ") + ExceptionLine(e)));
  }
  return Status::OK();
}

Status CheckpointReader::LoadGrads(torch::nn::Module& module) const {
  if (!has_grads()) return Status::OK();
  try {
    YC_ASSIGN_OR_RETURN(auto saved, NamedSection(*impl_, "grads", path_.string()));
    std::set<std::string> used;
    for (auto& p : module.named_parameters(true)) {
      auto it = saved.find(p.key());
      if (it == saved.end()) continue;
      if (it->second.sizes() != p.value().sizes()) {
        return Status::Corruption(Status::At(path_.string(), "gradient of " + p.key() + " has the wrong shape"));
      }
      // Same layout as the parameter (channels_last weights get channels_last gradients).
      auto g = at::empty_like(p.value());
      g.copy_(it->second);
      p.value().mutable_grad() = g;
      used.insert(p.key());
    }
    if (used.size() != saved.size()) {
      return Status::Corruption(Status::At(path_.string(), "gradients saved for parameters the model does not have"));
    }
  } catch (const std::exception& e) {
    return Status::Corruption(Status::At(path_.string(), std::string("loading gradients: ") + ExceptionLine(e)));
  }
  return Status::OK();
}

Result<DetectionModel> CheckpointReader::BuildInferenceModel(const at::Device& device) const {
  Result<ModelScale> scale = ParseModelScale(meta_.model_scale);
  if (!scale.ok()) return Status::Corruption(Status::At(path_.string(), scale.status().message()));
  Result<ModelFamily> family = ParseModelFamily(meta_.model_family);
  if (!family.ok()) return Status::Corruption(Status::At(path_.string(), family.status().message()));
  try {
    ModelOptions options(*family, *scale, meta_.nc);
    options.channels = meta_.options.channels;  // a pruned architecture (yolocache-train prune)
    DetectionModel model(options);
    model->to(device);
    const char* section = has_ema() ? "ema" : "model";
    YC_RETURN_IF_ERROR(LoadModule(section, *model));
    const std::string bad = FirstNonFiniteTensor(*model);
    if (!bad.empty()) {
      return Status::Corruption(Status::At(path_.string(), std::string("the ") + section + " weights hold NaN or infinite "
                                           "values (first: " + bad + "); the run that saved them diverged"));
    }
    model->eval();
    for (auto& p : model->parameters(true)) p.set_requires_grad(false);
    return model;
  } catch (const std::exception& e) {
    return Status::Corruption(Status::At(path_.string(), std::string("building the model: ") + ExceptionLine(e)));
  }
}

}  // namespace yc::trainer
