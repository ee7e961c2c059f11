#include "trainer/io/ultralytics_module_writer.h"

#include <array>
#include <set>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/upsampling.h>

#include "trainer/io/named_state.h"
#include "trainer/model/blocks.h"
#include "trainer/model/blocks_yolo11.h"
#include "trainer/model/conv_padding.h"
#include "trainer/model/detect.h"

namespace yc::trainer {

namespace nn = torch::nn;
using OJson = nlohmann::ordered_json;

namespace {

// The family's model yaml as Ultralytics' cfg/models/v8/yolov8.yaml and cfg/models/11/yolo11.yaml load
// (yaml's `None` is the string 'None' there too): the architecture trainer/model/yolov8.cc and yolo11.cc build.
constexpr const char* kYOLOv8Yaml = R"({
 "scales": {"n": [0.33, 0.25, 1024], "s": [0.33, 0.5, 1024], "m": [0.67, 0.75, 768], "l": [1.0, 1.0, 512],
            "x": [1.0, 1.25, 512]},
 "backbone": [[-1, 1, "Conv", [64, 3, 2]], [-1, 1, "Conv", [128, 3, 2]], [-1, 3, "C2f", [128, true]],
              [-1, 1, "Conv", [256, 3, 2]], [-1, 6, "C2f", [256, true]], [-1, 1, "Conv", [512, 3, 2]],
              [-1, 6, "C2f", [512, true]], [-1, 1, "Conv", [1024, 3, 2]], [-1, 3, "C2f", [1024, true]],
              [-1, 1, "SPPF", [1024, 5]]],
 "head": [[-1, 1, "nn.Upsample", ["None", 2, "nearest"]], [[-1, 6], 1, "Concat", [1]], [-1, 3, "C2f", [512]],
          [-1, 1, "nn.Upsample", ["None", 2, "nearest"]], [[-1, 4], 1, "Concat", [1]], [-1, 3, "C2f", [256]],
          [-1, 1, "Conv", [256, 3, 2]], [[-1, 12], 1, "Concat", [1]], [-1, 3, "C2f", [512]],
          [-1, 1, "Conv", [512, 3, 2]], [[-1, 9], 1, "Concat", [1]], [-1, 3, "C2f", [1024]],
          [[15, 18, 21], 1, "Detect", ["nc"]]]})";

constexpr const char* kYOLO11Yaml = R"({
 "scales": {"n": [0.5, 0.25, 1024], "s": [0.5, 0.5, 1024], "m": [0.5, 1.0, 512], "l": [1.0, 1.0, 512],
            "x": [1.0, 1.5, 512]},
 "backbone": [[-1, 1, "Conv", [64, 3, 2]], [-1, 1, "Conv", [128, 3, 2]], [-1, 2, "C3k2", [256, false, 0.25]],
              [-1, 1, "Conv", [256, 3, 2]], [-1, 2, "C3k2", [512, false, 0.25]], [-1, 1, "Conv", [512, 3, 2]],
              [-1, 2, "C3k2", [512, true]], [-1, 1, "Conv", [1024, 3, 2]], [-1, 2, "C3k2", [1024, true]],
              [-1, 1, "SPPF", [1024, 5]], [-1, 2, "C2PSA", [1024]]],
 "head": [[-1, 1, "nn.Upsample", ["None", 2, "nearest"]], [[-1, 6], 1, "Concat", [1]], [-1, 2, "C3k2", [512, false]],
          [-1, 1, "nn.Upsample", ["None", 2, "nearest"]], [[-1, 4], 1, "Concat", [1]], [-1, 2, "C3k2", [256, false]],
          [-1, 1, "Conv", [256, 3, 2]], [[-1, 13], 1, "Concat", [1]], [-1, 2, "C3k2", [512, false]],
          [-1, 1, "Conv", [512, 3, 2]], [[-1, 10], 1, "Concat", [1]], [-1, 2, "C3k2", [1024, true]],
          [[16, 19, 22], 1, "Detect", ["nc"]]]})";

constexpr const char* kConv = "ultralytics.nn.modules.conv";
constexpr const char* kBlock = "ultralytics.nn.modules.block";
constexpr const char* kHead = "ultralytics.nn.modules.head";

// What parse_model sets on each layer of the Sequential.
struct LayerInfo {
  int64_t index = 0;
  OJson from;  // -1 or a list of layer indices
  std::string type;
};

class ModuleWriter {
 public:
  // fits_half: AllFitHalf of every tensor written (ReleaseHalf then checks none).
  ModuleWriter(TorchSaveWriter& w, bool half, bool fits_half) : w_(w), p_(w.pickle()), half_(half), fits_half_(fits_half) {}

  void Model(const DetectionModelImpl& model, const std::vector<std::string>& names) {
    const OJson yaml = UltralyticsModelYaml(model.family(), model.options().scale, model.nc());
    std::vector<LayerInfo> layers;
    std::set<int64_t> save;
    for (const auto* part : {"backbone", "head"}) {
      for (const auto& entry : yaml[part]) {
        LayerInfo info;
        info.index = static_cast<int64_t>(layers.size());
        info.from = entry[0];
        const std::string name = entry[2].get<std::string>();
        info.type = name == "nn.Upsample" ? "torch.nn.modules.upsampling.Upsample" : ClassPath(name) + "." + name;
        for (const auto& f : info.from.is_array() ? info.from : OJson::array({info.from})) {
          if (f.get<int64_t>() != -1) save.insert(f.get<int64_t>());
        }
        layers.push_back(std::move(info));
      }
    }
    TORCH_CHECK(layers.size() == model.model->size(), "Ultralytics layout: ", layers.size(), " yaml layers for ",
                model.model->size(), " model layers");
    Open("ultralytics.nn.tasks", "DetectionModel", {}, {});
    Children([&] {
      p_.Str("model");
      Open("torch.nn.modules.container", "Sequential", {}, {});
      Children([&] {
        for (size_t i = 0; i < layers.size(); ++i) {
          p_.Str(std::to_string(i));
          Module(*model.model->ptr(i), &layers[i]);
        }
      });
      Close();
    });
    p_.Str("yaml");
    PickleJson(p_, yaml);
    p_.Str("save");
    p_.EmptyList();
    p_.Mark();
    for (int64_t s : save) p_.Int(s);
    p_.Appends();
    p_.Str("names");
    p_.EmptyDict();
    p_.Mark();
    for (size_t i = 0; i < names.size(); ++i) {
      p_.Int(static_cast<int64_t>(i));
      p_.Str(names[i]);
    }
    p_.SetItems();
    Attr("nc", model.nc());
    Attr("inplace", true);
    Attr("end2end", false);
    p_.Str("stride");
    w_.Tensor(at::tensor(model.strides(), at::kFloat));
    Close();
  }

 private:
  using Named = std::vector<std::pair<std::string, at::Tensor>>;

  static std::string ClassPath(const std::string& name) {
    if (name == "Conv" || name == "Concat" || name == "DWConv") return kConv;
    if (name == "Detect") return kHead;
    return kBlock;
  }

  void Attr(const char* key, int64_t v) { p_.Str(key); p_.Int(v); }
  void Attr(const char* key, bool v) { p_.Str(key); p_.Bool(v); }
  void Attr(const char* key, double v) { p_.Str(key); p_.Float(v); }
  void Attr(const char* key, const char* v) { p_.Str(key); p_.Str(v); }
  void AttrNone(const char* key) { p_.Str(key); p_.None(); }
  void Pair(const char* key, int64_t a, int64_t b) {
    p_.Str(key);
    p_.Mark();
    p_.Int(a);
    p_.Int(b);
    p_.Tuple();
  }

  void Tensors(const Named& tensors, bool parameters) {
    if (tensors.empty()) {
      w_.EmptyOrderedDict();
      return;
    }
    w_.BeginOrderedDict();
    for (const auto& [name, t] : tensors) {
      p_.Str(name);
      if (!t.defined()) {
        p_.None();
        continue;
      }
      const at::Tensor value = half_ ? ReleaseHalf(t, fits_half_) : t.detach();
      if (parameters) {
        w_.Parameter(value, /*requires_grad=*/false);
      } else {
        w_.Tensor(value);
      }
    }
    w_.EndOrderedDict();
  }

  // NEWOBJ of module.cls, and the start of its __dict__ with nn.Module's own entries.
  void Open(const char* module, const char* cls, const Named& params, const Named& buffers) {
    p_.Global(module, cls);
    p_.EmptyTuple();
    p_.NewObj();
    p_.EmptyDict();
    p_.Mark();
    Attr("training", false);
    p_.Str("_parameters");
    Tensors(params, true);
    p_.Str("_buffers");
    Tensors(buffers, false);
    p_.Str("_non_persistent_buffers_set");
    w_.EmptySet();
    for (const char* hooks : {"_backward_hooks", "_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks",
                              "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"}) {
      p_.Str(hooks);
      w_.EmptyOrderedDict();
    }
    AttrNone("_is_full_backward_hook");
  }
  // The _modules entry: `body` pushes name, module pairs.
  template <typename Body>
  void Children(Body body) {
    p_.Str("_modules");
    w_.BeginOrderedDict();
    body();
    w_.EndOrderedDict();
  }
  void NoChildren() {
    p_.Str("_modules");
    w_.EmptyOrderedDict();
  }
  void Close() {
    p_.SetItems();
    p_.Build();
  }
  void Leaf(const char* module, const char* cls) {
    Open(module, cls, {}, {});
    NoChildren();
  }

  void Layer(const LayerInfo* layer, const nn::Module& m) {
    if (layer == nullptr) return;
    int64_t np = 0;
    for (const auto& t : m.parameters(true)) np += t.numel();
    Attr("np", np);
    Attr("i", layer->index);
    p_.Str("f");
    PickleJson(p_, layer->from);
    Attr("type", layer->type.c_str());
  }

  void Conv2d(const nn::Conv2dImpl& c) {
    const auto& o = c.options;
    const std::array<int64_t, 2> pad = ConvPadding(o);
    Open("torch.nn.modules.conv", "Conv2d", {{"weight", c.weight}, {"bias", c.bias}}, {});
    NoChildren();
    Attr("in_channels", o.in_channels());
    Attr("out_channels", o.out_channels());
    Pair("kernel_size", (*o.kernel_size())[0], (*o.kernel_size())[1]);
    Pair("stride", (*o.stride())[0], (*o.stride())[1]);
    Pair("padding", pad[0], pad[1]);
    Pair("dilation", (*o.dilation())[0], (*o.dilation())[1]);
    Attr("transposed", false);
    Pair("output_padding", 0, 0);
    Attr("groups", o.groups());
    Attr("padding_mode", "zeros");
    p_.Str("_reversed_padding_repeated_twice");
    p_.Mark();
    for (int64_t v : {pad[1], pad[1], pad[0], pad[0]}) p_.Int(v);
    p_.Tuple();
    Close();
  }

  void BatchNorm(const nn::BatchNorm2dImpl& bn) {
    Open("torch.nn.modules.batchnorm", "BatchNorm2d", {{"weight", bn.weight}, {"bias", bn.bias}},
         {{"running_mean", bn.running_mean}, {"running_var", bn.running_var},
          {"num_batches_tracked", bn.num_batches_tracked}});
    NoChildren();
    Attr("num_features", bn.options.num_features());
    Attr("eps", bn.options.eps());
    Attr("momentum", bn.options.momentum().value_or(0.1));
    Attr("affine", true);
    Attr("track_running_stats", true);
    Close();
  }

  void Conv(const ConvImpl& c, const char* cls, const LayerInfo* layer) {
    Open(kConv, cls, {}, {});
    Children([&] {
      p_.Str("conv");
      Conv2d(*c.conv);
      if (!c.fused()) {
        p_.Str("bn");
        BatchNorm(*c.bn);
      }
      p_.Str("act");
      if (c.act()) {
        Leaf("torch.nn.modules.activation", "SiLU");
        Attr("inplace", true);
        Close();
      } else {
        Leaf("torch.nn.modules.linear", "Identity");
        Close();
      }
    });
    Layer(layer, c);
    Close();
  }

  // A container of the children of `m` as torch.nn `cls` (Sequential / ModuleList).
  void Container(const nn::Module& m, const char* cls, const LayerInfo* layer = nullptr) {
    Open("torch.nn.modules.container", cls, {}, {});
    ChildrenOf(m);
    Layer(layer, m);
    Close();
  }

  void ChildrenOf(const nn::Module& m, const char* first_class = nullptr) {
    Children([&] {
      bool first = true;
      for (const auto& child : m.named_children()) {
        p_.Str(child.key());
        if (first && first_class != nullptr) {
          Conv(*child.value()->as<ConvImpl>(), first_class, nullptr);
        } else {
          Module(*child.value(), nullptr);
        }
        first = false;
      }
    });
  }

  // A block of ours whose children map one to one onto the Ultralytics block's.
  void Block(const nn::Module& m, const char* module, const char* cls, const LayerInfo* layer) {
    Open(module, cls, {}, {});
    ChildrenOf(m);
    Layer(layer, m);
  }

  void Module(const nn::Module& m, const LayerInfo* layer) {
    if (const auto* c = m.as<ConvImpl>()) return Conv(*c, "Conv", layer);
    if (const auto* c = m.as<nn::Conv2dImpl>()) return Conv2d(*c);
    if (const auto* b = m.as<nn::BatchNorm2dImpl>()) return BatchNorm(*b);
    if (const auto* b = m.as<BottleneckImpl>()) {
      Block(m, kBlock, "Bottleneck", layer);
      Attr("add", b->residual());
      return Close();
    }
    if (const auto* c = m.as<C2fImpl>()) {
      Block(m, kBlock, "C2f", layer);
      Attr("c", c->cv1->conv->options.out_channels() / 2);
      return Close();
    }
    if (const auto* c = m.as<C3k2Impl>()) {
      Block(m, kBlock, "C3k2", layer);
      Attr("c", c->cv1->conv->options.out_channels() / 2);
      return Close();
    }
    if (m.as<C3kImpl>() != nullptr) {
      Block(m, kBlock, "C3k", layer);
      return Close();
    }
    if (m.as<SPPFImpl>() != nullptr) {
      Block(m, kBlock, "SPPF", layer);
      return Close();
    }
    if (const auto* c = m.as<C2PSAImpl>()) {
      Block(m, kBlock, "C2PSA", layer);
      Attr("c", c->hidden());
      return Close();
    }
    if (const auto* b = m.as<PSABlockImpl>()) {
      Block(m, kBlock, "PSABlock", layer);
      Attr("add", b->shortcut());
      return Close();
    }
    if (const auto* a = m.as<AttentionImpl>()) {
      Block(m, kBlock, "Attention", layer);
      Attr("num_heads", a->num_heads());
      Attr("head_dim", a->head_dim());
      Attr("key_dim", a->key_dim());
      Attr("scale", a->scale());
      return Close();
    }
    if (const auto* d = m.as<DFLImpl>()) {
      Block(m, kBlock, "DFL", layer);
      Attr("c1", d->conv->options.in_channels());
      return Close();
    }
    if (const auto* d = m.as<DetectImpl>()) {
      Block(m, kHead, "Detect", layer);
      Attr("nc", d->nc());
      Attr("nl", static_cast<int64_t>(d->strides().size()));
      Attr("reg_max", d->reg_max());
      Attr("no", d->no());
      p_.Str("stride");
      w_.Tensor(at::tensor(d->strides(), at::kFloat));
      Attr("inplace", true);
      return Close();
    }
    if (m.as<DWConvStageImpl>() != nullptr) {  // nn.Sequential(DWConv, Conv)
      Open("torch.nn.modules.container", "Sequential", {}, {});
      ChildrenOf(m, "DWConv");
      return Close();
    }
    if (m.as<ConcatImpl>() != nullptr) {
      Leaf(kConv, "Concat");
      Attr("d", int64_t{1});
      Layer(layer, m);
      return Close();
    }
    if (const auto* u = m.as<nn::UpsampleImpl>()) {
      Leaf("torch.nn.modules.upsampling", "Upsample");
      Attr("name", "Upsample");
      AttrNone("size");
      const auto& scale = u->options.scale_factor();
      Attr("scale_factor", scale && !scale->empty() ? scale->front() : 2.0);
      Attr("mode", "nearest");
      AttrNone("align_corners");
      AttrNone("recompute_scale_factor");
      Layer(layer, m);
      return Close();
    }
    if (const auto* mp = m.as<nn::MaxPool2dImpl>()) {
      const auto& o = mp->options;
      Leaf("torch.nn.modules.pooling", "MaxPool2d");
      Attr("kernel_size", (*o.kernel_size())[0]);
      Attr("stride", (*o.stride())[0]);
      Attr("padding", (*o.padding())[0]);
      Attr("dilation", (*o.dilation())[0]);
      Attr("return_indices", false);
      Attr("ceil_mode", o.ceil_mode());
      return Close();
    }
    if (m.as<nn::SequentialImpl>() != nullptr) return Container(m, "Sequential", layer);
    if (m.as<nn::ModuleListImpl>() != nullptr) return Container(m, "ModuleList", layer);
    TORCH_CHECK(false, "Ultralytics layout: no Ultralytics class for module ", m.name());
  }

  TorchSaveWriter& w_;
  PickleWriter& p_;
  bool half_;
  bool fits_half_;
};

}  // namespace

at::Tensor ReleaseHalf(const at::Tensor& t, bool fits_half) {
  if (!t.is_floating_point()) return t.detach();
  at::Tensor half = t.detach().to(at::kHalf);
  if (fits_half) return half;
  if (!at::isfinite(half).all().item<bool>() && at::isfinite(t).all().item<bool>()) return t.detach();
  return half;
}

bool AllFitHalf(const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::vector<at::Tensor> flat;
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || !t.is_floating_point() || t.numel() == 0) continue;
    if (t.scalar_type() == at::kDouble) return false;  // float32 below could overflow where double did not
    flat.push_back(t.detach().reshape({-1}).to(at::kFloat));
  }
  if (flat.empty()) return true;
  // Element by element: fp16 keeps it finite, or it was not finite to begin with. Every element passing
  // means every tensor passes ReleaseHalf's own test (a tensor whose values are all finite stays finite).
  const at::Tensor all = at::cat(flat);
  return at::logical_or(at::isfinite(all.to(at::kHalf)), at::logical_not(at::isfinite(all))).all().item<bool>();
}

OJson UltralyticsModelYaml(ModelFamily family, ModelScale scale, int64_t nc) {
  const bool v8 = family == ModelFamily::kV8;
  const OJson arch = OJson::parse(v8 ? kYOLOv8Yaml : kYOLO11Yaml);
  OJson yaml = OJson::object();
  yaml["nc"] = nc;
  yaml["scales"] = arch["scales"];
  yaml["backbone"] = arch["backbone"];
  yaml["head"] = arch["head"];
  yaml["scale"] = ModelScaleName(scale);
  yaml["yaml_file"] = std::string(v8 ? "yolov8" : "yolo11") + ModelScaleName(scale) + ".yaml";
  yaml["channels"] = 3;
  return yaml;
}

void WriteUltralyticsModel(TorchSaveWriter& w, const DetectionModelImpl& model, const std::vector<std::string>& names,
                           bool half, std::optional<bool> fits_half) {
  ModuleWriter(w, half, half && (fits_half ? *fits_half : AllFitHalf(NamedState(model)))).Model(model, names);
}

}  // namespace yc::trainer
