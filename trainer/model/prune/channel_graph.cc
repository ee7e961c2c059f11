#include "trainer/model/prune/channel_graph.h"

#include <stdexcept>

namespace yc::trainer {

namespace {

// The layer sequences of cfg/models/v8/yolov8.yaml and cfg/models/11/yolo11.yaml: type, sources (-1: the
// previous layer) and output stride.
enum class Layer { kConv, kC2f, kC3k2, kSPPF, kC2PSA, kUpsample, kConcat, kDetect };
struct LayerSpec {
  Layer type;
  std::vector<int> from;
  int stride;
};

const std::vector<LayerSpec>& YOLOv8Layers() {
  using L = Layer;
  static const std::vector<LayerSpec> layers = {
      {L::kConv, {-1}, 2},      {L::kConv, {-1}, 4},       {L::kC2f, {-1}, 4},       {L::kConv, {-1}, 8},
      {L::kC2f, {-1}, 8},       {L::kConv, {-1}, 16},      {L::kC2f, {-1}, 16},      {L::kConv, {-1}, 32},
      {L::kC2f, {-1}, 32},      {L::kSPPF, {-1}, 32},      {L::kUpsample, {-1}, 16}, {L::kConcat, {-1, 6}, 16},
      {L::kC2f, {-1}, 16},      {L::kUpsample, {-1}, 8},   {L::kConcat, {-1, 4}, 8}, {L::kC2f, {-1}, 8},
      {L::kConv, {-1}, 16},     {L::kConcat, {-1, 12}, 16}, {L::kC2f, {-1}, 16},     {L::kConv, {-1}, 32},
      {L::kConcat, {-1, 9}, 32}, {L::kC2f, {-1}, 32},      {L::kDetect, {15, 18, 21}, 0},
  };
  return layers;
}

const std::vector<LayerSpec>& YOLO11Layers() {
  using L = Layer;
  static const std::vector<LayerSpec> layers = {
      {L::kConv, {-1}, 2},       {L::kConv, {-1}, 4},        {L::kC3k2, {-1}, 4},       {L::kConv, {-1}, 8},
      {L::kC3k2, {-1}, 8},       {L::kConv, {-1}, 16},       {L::kC3k2, {-1}, 16},      {L::kConv, {-1}, 32},
      {L::kC3k2, {-1}, 32},      {L::kSPPF, {-1}, 32},       {L::kC2PSA, {-1}, 32},     {L::kUpsample, {-1}, 16},
      {L::kConcat, {-1, 6}, 16}, {L::kC3k2, {-1}, 16},       {L::kUpsample, {-1}, 8},   {L::kConcat, {-1, 4}, 8},
      {L::kC3k2, {-1}, 8},       {L::kConv, {-1}, 16},       {L::kConcat, {-1, 13}, 16}, {L::kC3k2, {-1}, 16},
      {L::kConv, {-1}, 32},      {L::kConcat, {-1, 10}, 32}, {L::kC3k2, {-1}, 32},      {L::kDetect, {16, 19, 22}, 0},
  };
  return layers;
}

constexpr const char* kShortcut = "added to its input by a Bottleneck shortcut";
constexpr const char* kShortcutSplit =
    "its second half starts a chain of Bottleneck shortcut additions (the halves are pruned together, as "
    "Ultralytics' C2f.forward chunks them equally)";
constexpr const char* kC3kChain = "starts a chain of Bottleneck shortcut additions inside C3k";
constexpr const char* kAttention = "C2PSA attention: split per head, or added to its input";
constexpr const char* kPsaSplit = "C2PSA's cv1 is split at a fixed width into the attention's input";
constexpr const char* kDepthwise = "depthwise: follows its input's channels";

class Builder {
 public:
  Builder(bool yolo11, const std::map<std::string, int64_t>& widths) : yolo11_(yolo11), widths_(widths) {}

  ChannelGraph Build() {
    const std::vector<LayerSpec>& layers = yolo11_ ? YOLO11Layers() : YOLOv8Layers();
    std::vector<ChannelLayout> outs;
    outs.reserve(layers.size());
    ChannelLayout image{{"", 0, 3}};
    for (size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& l = layers[i];
      layer_ = static_cast<int>(i);
      stride_ = l.stride;
      const std::string p = "model." + std::to_string(i);
      const auto from = [&](int f) -> const ChannelLayout& {
        return f < 0 ? (i == 0 ? image : outs.back()) : outs.at(static_cast<size_t>(f));
      };
      switch (l.type) {
        case Layer::kConv: outs.push_back(Conv(p, from(-1), true, "")); break;
        case Layer::kC2f: outs.push_back(CspBlock(p, from(-1), /*shortcut=*/i <= 8)); break;
        case Layer::kC3k2: outs.push_back(CspBlock(p, from(-1), /*shortcut=*/true)); break;
        case Layer::kSPPF: outs.push_back(Sppf(p, from(-1))); break;
        case Layer::kC2PSA: outs.push_back(C2psa(p, from(-1))); break;
        case Layer::kUpsample: outs.push_back(from(-1)); break;
        case Layer::kConcat: {
          ChannelLayout cat = from(l.from[0]);
          const ChannelLayout& b = from(l.from[1]);
          cat.insert(cat.end(), b.begin(), b.end());
          outs.push_back(std::move(cat));
          break;
        }
        case Layer::kDetect: {
          std::vector<ChannelLayout> levels;
          for (int f : l.from) levels.push_back(from(f));
          Detect(p, levels);
          outs.emplace_back();
          break;
        }
      }
    }
    return std::move(graph_);
  }

 private:
  int64_t Width(const std::string& path) const {
    auto it = widths_.find(path);
    if (it == widths_.end()) {
      throw std::invalid_argument("not a " + std::string(yolo11_ ? "YOLO11" : "YOLOv8") +
                                  " detection model: it has no convolution " + path);
    }
    return it->second;
  }
  bool Has(const std::string& path) const { return widths_.count(path) != 0; }

  static ChannelLayout Whole(const std::string& path, int64_t width) { return {{path, 0, width}}; }

  // A Conv (conv + bn) reading `in`; returns its output's layout.
  ChannelLayout Conv(const std::string& path, const ChannelLayout& in, bool prunable, const std::string& exempt,
                     bool halves = false) {
    ConvNode n;
    n.path = path;
    n.out = Width(path);
    n.prunable = prunable;
    n.halves = halves;
    n.exempt = prunable ? std::string() : exempt;
    n.inputs = in;
    n.stride = stride_;
    n.layer = layer_;
    graph_.convs.push_back(n);
    return Whole(path, n.out);
  }

  // A depthwise Conv: as many outputs as inputs, each from its own input channel, so its output keeps
  // its input's layout (removing an input channel removes that output channel with it).
  ChannelLayout Depthwise(const std::string& path, const ChannelLayout& in) {
    ConvNode n;
    n.path = path;
    n.out = Width(path);
    n.depthwise = true;
    n.exempt = kDepthwise;
    n.inputs = in;
    n.stride = stride_;
    n.layer = layer_;
    if (n.out != LayoutWidth(in)) throw std::invalid_argument(path + " is not depthwise");
    graph_.convs.push_back(n);
    return in;
  }

  void Plain(const std::string& path, const ChannelLayout& in) {
    ConvNode n;
    n.path = path;
    n.has_bn = false;
    n.out = Width(path);
    n.inputs = in;
    n.stride = stride_;
    n.layer = layer_;
    graph_.convs.push_back(n);
  }

  // Bottleneck: cv1 (hidden, always prunable) then cv2, added to the input when `add`.
  ChannelLayout Bottleneck(const std::string& p, const ChannelLayout& in, bool add) {
    ChannelLayout hidden = Conv(p + ".cv1", in, true, "");
    ChannelLayout y = Conv(p + ".cv2", hidden, !add, kShortcut);
    return add ? in : y;  // x + y: the channels are x's (cv2 was kept whole to match them)
  }

  // C3k: cv1 -> Bottlenecks with shortcuts (a chain tied to cv1), cv2 beside it, cv3 fuses both.
  ChannelLayout C3k(const std::string& p, const ChannelLayout& in) {
    ChannelLayout chain = Conv(p + ".cv1", in, false, kC3kChain);
    for (int j = 0; Has(p + ".m." + std::to_string(j) + ".cv1"); ++j) {
      chain = Bottleneck(p + ".m." + std::to_string(j), chain, /*add=*/true);
    }
    ChannelLayout side = Conv(p + ".cv2", in, true, "");
    chain.insert(chain.end(), side.begin(), side.end());
    return Conv(p + ".cv3", chain, true, "");
  }

  // C2f / C3k2: cv1 split in halves, n blocks chained on the second half, cv2 over every intermediate.
  // `shortcut`: the blocks are Bottlenecks with x + y (C2f of the backbone, every C3k2); C3k2's C3k
  // blocks have no addition around them, so their input half is prunable.
  ChannelLayout CspBlock(const std::string& p, const ChannelLayout& in, bool shortcut) {
    const bool c3k = Has(p + ".m.0.cv3");
    const bool tied = shortcut && !c3k;
    const std::string cv1 = p + ".cv1";
    const int64_t w = Width(cv1), c = w / 2;
    Conv(cv1, in, !tied, kShortcutSplit, /*halves=*/true);
    std::vector<ChannelLayout> ys{{{cv1, 0, c}}, {{cv1, c, c}}};
    for (int j = 0; Has(p + ".m." + std::to_string(j) + ".cv1"); ++j) {
      const std::string m = p + ".m." + std::to_string(j);
      ys.push_back(c3k ? C3k(m, ys.back()) : Bottleneck(m, ys.back(), shortcut));
    }
    ChannelLayout cat;
    for (const ChannelLayout& y : ys) cat.insert(cat.end(), y.begin(), y.end());
    return Conv(p + ".cv2", cat, true, "");
  }

  // SPPF: cv1, three max-pools of it (per channel), cv2 over the four.
  ChannelLayout Sppf(const std::string& p, const ChannelLayout& in) {
    ChannelLayout y = Conv(p + ".cv1", in, true, "");
    ChannelLayout cat;
    for (int k = 0; k < 4; ++k) cat.insert(cat.end(), y.begin(), y.end());
    return Conv(p + ".cv2", cat, true, "");
  }

  // C2PSA: cv1 split into a and b at a fixed width; PSABlocks on b (attention, then ffn.0 -> ffn.1, each
  // added to its input); cv2 over [a, b].
  ChannelLayout C2psa(const std::string& p, const ChannelLayout& in) {
    const std::string cv1 = p + ".cv1";
    const int64_t c = Width(cv1) / 2;
    Conv(cv1, in, false, kPsaSplit);
    const ChannelLayout a{{cv1, 0, c}};
    ChannelLayout b{{cv1, c, c}};
    for (int j = 0; Has(p + ".m." + std::to_string(j) + ".attn.qkv"); ++j) {
      const std::string m = p + ".m." + std::to_string(j);
      const std::string qkv = m + ".attn.qkv";
      Conv(qkv, b, false, kAttention);
      // pe and proj read v, interleaved per head in qkv's output; qkv is never pruned, so v is described
      // by its width alone (qkv's first channels).
      const ChannelLayout v{{qkv, 0, LayoutWidth(b)}};
      Depthwise(m + ".attn.pe", v);
      graph_.convs.back().exempt = kAttention;
      Conv(m + ".attn.proj", v, false, kAttention);
      ChannelLayout hidden = Conv(m + ".ffn.0", b, true, "");
      Conv(m + ".ffn.1", hidden, false, kAttention);
    }
    ChannelLayout cat = a;
    cat.insert(cat.end(), b.begin(), b.end());
    return Conv(p + ".cv2", cat, true, "");
  }

  // Detect: per level a box branch (Conv, Conv, Conv2d) and a class branch (YOLOv8: Conv, Conv, Conv2d;
  // YOLO11: [DWConv, Conv], [DWConv, Conv], Conv2d), each reading the level's input.
  void Detect(const std::string& p, const std::vector<ChannelLayout>& levels) {
    for (size_t l = 0; l < levels.size(); ++l) {
      stride_ = 8 << l;
      const std::string box = p + ".cv2." + std::to_string(l), cls = p + ".cv3." + std::to_string(l);
      Plain(box + ".2", Conv(box + ".1", Conv(box + ".0", levels[l], true, ""), true, ""));
      if (yolo11_) {
        ChannelLayout y = Conv(cls + ".0.1", Depthwise(cls + ".0.0", levels[l]), true, "");
        graph_.convs.back().after_depthwise = cls + ".0.0";
        Plain(cls + ".2", Conv(cls + ".1.1", Depthwise(cls + ".1.0", y), true, ""));
        graph_.convs[graph_.convs.size() - 2].after_depthwise = cls + ".1.0";
      } else {
        Plain(cls + ".2", Conv(cls + ".1", Conv(cls + ".0", levels[l], true, ""), true, ""));
      }
    }
  }

  bool yolo11_;
  const std::map<std::string, int64_t>& widths_;
  ChannelGraph graph_;
  int layer_ = 0;
  int stride_ = 1;
};

}  // namespace

const ConvNode* ChannelGraph::Find(const std::string& path) const {
  for (const ConvNode& n : convs) {
    if (n.path == path) return &n;
  }
  return nullptr;
}

int64_t LayoutWidth(const ChannelLayout& layout) {
  int64_t w = 0;
  for (const ChannelSegment& s : layout) w += s.count;
  return w;
}

ChannelGraph BuildChannelGraph(bool yolo11, const std::map<std::string, int64_t>& widths) {
  return Builder(yolo11, widths).Build();
}

}  // namespace yc::trainer
