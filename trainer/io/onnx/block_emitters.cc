#if YOLOCACHE_WITH_ONNX
#include "trainer/io/onnx/block_emitters.h"

#include <torch/nn/modules/container/sequential.h>

namespace yc::trainer::onnx_export {

namespace nn = torch::nn;

namespace {

std::string P(const std::string& path, const std::string& child) { return path + "." + child; }
// torch.onnx's node names keep the dots of ModuleList indices ("/model.0/conv/Conv"); so do ours.
std::string NodeName(const std::string& path, const std::string& op) {
  std::string n = "/" + path + "/" + op;
  return n;
}

// Splits `x` along the channels into the given widths.
std::vector<std::string> SplitChannels(GraphBuilder& g, const std::string& path, const std::string& x,
                                       const std::vector<int64_t>& widths) {
  return g.NodeN("Split", NodeName(path, "Split"), {x, g.Ints(widths)}, static_cast<int>(widths.size()),
                 {AttrInt("axis", 1)});
}

std::string Silu(GraphBuilder& g, const std::string& path, const std::string& x) {
  auto s = g.Node("Sigmoid", NodeName(path, "act/Sigmoid"), {x});
  return g.Node("Mul", NodeName(path, "act/Mul"), {x, s});
}

}  // namespace

std::string EmitConv2d(GraphBuilder& g, const std::string& path, nn::Conv2dImpl& m, const std::string& x) {
  const auto& o = m.options;
  const auto k = o.kernel_size();
  const auto s = o.stride();
  // Every conv of these models pads k / 2 (Conv: autopad; the head's and DFL's 1x1: 0). Reading
  // options.padding() would need c10::get on LibTorch 1.x and std::get on 2.x; k / 2 serves both.
  const std::vector<int64_t> pad{k->at(0) / 2, k->at(1) / 2};
  std::vector<std::string> inputs{x, g.Initializer(P(path, "weight"), m.weight)};
  if (m.bias.defined()) inputs.push_back(g.Initializer(P(path, "bias"), m.bias));
  return g.Node("Conv", NodeName(path, "Conv"), inputs,
                {AttrInts("dilations", {o.dilation()->at(0), o.dilation()->at(1)}), AttrInt("group", o.groups()),
                 AttrInts("kernel_shape", {k->at(0), k->at(1)}),
                 AttrInts("pads", {pad[0], pad[1], pad[0], pad[1]}), AttrInts("strides", {s->at(0), s->at(1)})});
}

std::string EmitConv(GraphBuilder& g, const std::string& path, ConvImpl& m, const std::string& x) {
  TORCH_CHECK(m.fused(), "ONNX export: ", path, " is not fused (FuseConvBatchNorm first)");
  auto y = EmitConv2d(g, P(path, "conv"), *m.conv, x);
  return m.act() ? Silu(g, path, y) : y;
}

std::string EmitBottleneck(GraphBuilder& g, const std::string& path, BottleneckImpl& m, const std::string& x) {
  auto y = EmitConv(g, P(path, "cv2"), *m.cv2, EmitConv(g, P(path, "cv1"), *m.cv1, x));
  return m.residual() ? g.Node("Add", NodeName(path, "Add"), {x, y}) : y;
}

namespace {
// C2f and C3k2 share the layout: cv1, split in halves, chain the blocks of m on the last output, cat, cv2.
template <typename Chain>
std::string EmitSplitChain(GraphBuilder& g, const std::string& path, ConvImpl& cv1, ConvImpl& cv2, size_t blocks,
                           const std::string& x, Chain chain) {
  auto y = EmitConv(g, P(path, "cv1"), cv1, x);
  const int64_t c = cv1.conv->options.out_channels() / 2;
  std::vector<std::string> ys = SplitChannels(g, path, y, {c, c});
  for (size_t i = 0; i < blocks; ++i) ys.push_back(chain(i, ys.back()));
  return EmitConv(g, P(path, "cv2"), cv2, EmitConcat(g, path, ys));
}
}  // namespace

std::string EmitC2f(GraphBuilder& g, const std::string& path, C2fImpl& m, const std::string& x) {
  return EmitSplitChain(g, path, *m.cv1, *m.cv2, m.m->size(), x, [&](size_t i, const std::string& in) {
    return EmitBottleneck(g, P(path, "m." + std::to_string(i)), *m.m->ptr(i)->as<BottleneckImpl>(), in);
  });
}

std::string EmitC3k(GraphBuilder& g, const std::string& path, C3kImpl& m, const std::string& x) {
  auto a = EmitConv(g, P(path, "cv1"), *m.cv1, x);
  for (size_t i = 0; i < m.m->size(); ++i) {
    a = EmitBottleneck(g, P(path, "m." + std::to_string(i)), *m.m->ptr(i)->as<BottleneckImpl>(), a);
  }
  auto b = EmitConv(g, P(path, "cv2"), *m.cv2, x);
  return EmitConv(g, P(path, "cv3"), *m.cv3, EmitConcat(g, path, {a, b}));
}

std::string EmitC3k2(GraphBuilder& g, const std::string& path, C3k2Impl& m, const std::string& x) {
  return EmitSplitChain(g, path, *m.cv1, *m.cv2, m.m->size(), x, [&](size_t i, const std::string& in) {
    const std::string p = P(path, "m." + std::to_string(i));
    return m.c3k() ? EmitC3k(g, p, *m.m->ptr(i)->as<C3kImpl>(), in)
                   : EmitBottleneck(g, p, *m.m->ptr(i)->as<BottleneckImpl>(), in);
  });
}

std::string EmitSPPF(GraphBuilder& g, const std::string& path, SPPFImpl& m, const std::string& x) {
  const auto k = m.m->options.kernel_size();
  const auto pad = m.m->options.padding();
  const std::vector<Attr> attrs{AttrInts("kernel_shape", {k->at(0), k->at(1)}),
                                AttrInts("pads", {pad->at(0), pad->at(1), pad->at(0), pad->at(1)}),
                                AttrInts("strides", {1, 1})};
  std::vector<std::string> ys{EmitConv(g, P(path, "cv1"), *m.cv1, x)};
  for (int i = 0; i < 3; ++i) ys.push_back(g.Node("MaxPool", NodeName(path, "m/MaxPool"), {ys.back()}, attrs));
  return EmitConv(g, P(path, "cv2"), *m.cv2, EmitConcat(g, path, ys));
}

namespace {

std::string EmitAttention(GraphBuilder& g, const std::string& path, AttentionImpl& m, const std::string& x) {
  const int64_t kd = m.key_dim(), hd = m.head_dim(), heads = m.num_heads();
  auto shape = g.Node("Shape", NodeName(path, "Shape"), {x});  // (B, C, H, W)
  auto qkv = EmitConv(g, P(path, "qkv"), *m.qkv, x);
  qkv = g.Node("Reshape", NodeName(path, "Reshape"), {qkv, g.Ints({0, heads, 2 * kd + hd, -1})});
  auto parts = g.NodeN("Split", NodeName(path, "Split"), {qkv, g.Ints({kd, kd, hd})}, 3, {AttrInt("axis", 2)});
  auto qt = g.Node("Transpose", NodeName(path, "Transpose"), {parts[0]}, {AttrInts("perm", {0, 1, 3, 2})});
  auto attn = g.Node("MatMul", NodeName(path, "MatMul"), {qt, parts[1]});
  attn = g.Node("Mul", NodeName(path, "Mul"), {attn, g.Float(m.scale())});
  attn = g.Node("Softmax", NodeName(path, "Softmax"), {attn}, {AttrInt("axis", -1)});
  auto at = g.Node("Transpose", NodeName(path, "Transpose"), {attn}, {AttrInts("perm", {0, 1, 3, 2})});
  auto y = g.Node("MatMul", NodeName(path, "MatMul"), {parts[2], at});
  y = g.Node("Reshape", NodeName(path, "Reshape"), {y, shape});
  auto v = g.Node("Reshape", NodeName(path, "Reshape"), {parts[2], shape});
  y = g.Node("Add", NodeName(path, "Add"), {y, EmitConv(g, P(path, "pe"), *m.pe, v)});
  return EmitConv(g, P(path, "proj"), *m.proj, y);
}

std::string EmitPSABlock(GraphBuilder& g, const std::string& path, PSABlockImpl& m, const std::string& x) {
  auto a = EmitAttention(g, P(path, "attn"), *m.attn, x);
  auto y = m.shortcut() ? g.Node("Add", NodeName(path, "Add"), {x, a}) : a;
  auto f = EmitConv(g, P(path, "ffn.0"), *m.ffn->ptr(0)->as<ConvImpl>(), y);
  f = EmitConv(g, P(path, "ffn.1"), *m.ffn->ptr(1)->as<ConvImpl>(), f);
  return m.shortcut() ? g.Node("Add", NodeName(path, "Add"), {y, f}) : f;
}

}  // namespace

std::string EmitC2PSA(GraphBuilder& g, const std::string& path, C2PSAImpl& m, const std::string& x) {
  auto y = EmitConv(g, P(path, "cv1"), *m.cv1, x);
  auto halves = SplitChannels(g, path, y, {m.hidden(), m.hidden()});
  auto b = halves[1];
  for (size_t i = 0; i < m.m->size(); ++i) {
    b = EmitPSABlock(g, P(path, "m." + std::to_string(i)), *m.m->ptr(i)->as<PSABlockImpl>(), b);
  }
  return EmitConv(g, P(path, "cv2"), *m.cv2, EmitConcat(g, path, {halves[0], b}));
}

std::string EmitUpsample2x(GraphBuilder& g, const std::string& path, const std::string& x) {
  // torch's nearest upsampling: floor(out_index / scale), which is Resize's asymmetric + floor.
  const std::string scales = g.Initializer("const_scales", at::tensor({1.0f, 1.0f, 2.0f, 2.0f}), /*keep_dtype=*/true);
  // Resize's scales are always float32, whatever the data's type.
  return g.Node("Resize", NodeName(path, "Resize"), {x, "", scales},
                {AttrString("coordinate_transformation_mode", "asymmetric"), AttrString("mode", "nearest"),
                 AttrString("nearest_mode", "floor")});
}

std::string EmitConcat(GraphBuilder& g, const std::string& path, const std::vector<std::string>& xs) {
  return g.Node("Concat", NodeName(path, "Concat"), xs, {AttrInt("axis", 1)});
}

namespace {

// Cell-centre anchor points (2, H*W) of a (B, C, H, W) level, in grid units, computed from its shape.
std::string EmitAnchors(GraphBuilder& g, const std::string& path, const std::string& feat) {
  auto shape = g.Node("Shape", NodeName(path, "Shape"), {feat});
  auto h = g.Node("Gather", NodeName(path, "Gather"), {shape, g.Ints({2}, true)}, {AttrInt("axis", 0)});
  auto w = g.Node("Gather", NodeName(path, "Gather"), {shape, g.Ints({3}, true)}, {AttrInt("axis", 0)});
  auto range = [&](const std::string& n) {
    auto r = g.Node("Range", NodeName(path, "Range"), {g.Ints({0}, true), n, g.Ints({1}, true)});
    r = g.Node("Cast", NodeName(path, "Cast"), {r}, {AttrInt("to", g.float_type())});
    return g.Node("Add", NodeName(path, "Add"), {r, g.Float(0.5)});
  };
  auto hw = g.Node("Concat", NodeName(path, "Concat"),
                   {g.Node("Unsqueeze", NodeName(path, "Unsqueeze"), {h, g.Ints({0})}),
                    g.Node("Unsqueeze", NodeName(path, "Unsqueeze"), {w, g.Ints({0})})},
                   {AttrInt("axis", 0)});
  auto sx = g.Node("Unsqueeze", NodeName(path, "Unsqueeze"), {range(w), g.Ints({0})});  // (1, W)
  auto sy = g.Node("Unsqueeze", NodeName(path, "Unsqueeze"), {range(h), g.Ints({1})});  // (H, 1)
  auto gx = g.Node("Reshape", NodeName(path, "Reshape"), {g.Node("Expand", NodeName(path, "Expand"), {sx, hw}), g.Ints({1, -1})});
  auto gy = g.Node("Reshape", NodeName(path, "Reshape"), {g.Node("Expand", NodeName(path, "Expand"), {sy, hw}), g.Ints({1, -1})});
  return g.Node("Concat", NodeName(path, "Concat"), {gx, gy}, {AttrInt("axis", 0)});
}

std::string EmitSequentialBranch(GraphBuilder& g, const std::string& path, nn::SequentialImpl& seq, std::string x) {
  for (size_t j = 0; j < seq.size(); ++j) {
    const std::string p = P(path, std::to_string(j));
    if (auto* c = seq.ptr(j)->as<ConvImpl>()) {
      x = EmitConv(g, p, *c, x);
    } else if (auto* s = seq.ptr(j)->as<DWConvStageImpl>()) {
      x = EmitConv(g, P(p, "1"), *s->pw, EmitConv(g, P(p, "0"), *s->dw, x));
    } else {
      x = EmitConv2d(g, p, *seq.ptr(j)->as<nn::Conv2dImpl>(), x);
    }
  }
  return x;
}

}  // namespace

std::string EmitDetect(GraphBuilder& g, const std::string& path, DetectImpl& m, const std::vector<std::string>& xs,
                       bool xyxy) {
  const int64_t reg_max = m.reg_max(), nc = m.nc();
  std::vector<std::string> boxes, scores;
  for (size_t i = 0; i < xs.size(); ++i) {
    const std::string level = std::to_string(i);
    auto box = EmitSequentialBranch(g, P(path, "cv2." + level), *m.cv2->ptr(i)->as<nn::SequentialImpl>(), xs[i]);
    auto cls = EmitSequentialBranch(g, P(path, "cv3." + level), *m.cv3->ptr(i)->as<nn::SequentialImpl>(), xs[i]);
    // DFL on this level: (B, 4 * reg_max, H, W) -> (B, 4, reg_max, A) -> softmax over the bins -> expectation
    // (the 1x1 conv with weights 0..reg_max-1) -> (B, 4, A) distances.
    const std::string dfl = P(path, "dfl");
    auto d = g.Node("Reshape", NodeName(dfl, "Reshape"), {box, g.Ints({0, 4, reg_max, -1})});
    d = g.Node("Transpose", NodeName(dfl, "Transpose"), {d}, {AttrInts("perm", {0, 2, 1, 3})});
    d = g.Node("Softmax", NodeName(dfl, "Softmax"), {d}, {AttrInt("axis", 1)});
    d = EmitConv2d(g, P(dfl, "conv"), *m.dfl->conv, d);
    d = g.Node("Reshape", NodeName(dfl, "Reshape"), {d, g.Ints({0, 4, -1})});
    // dist2bbox (xywh, or xyxy) around this level's anchors, times its stride.
    auto anchors = EmitAnchors(g, path, xs[i]);
    auto lt_rb = g.NodeN("Split", NodeName(path, "Split"), {d, g.Ints({2, 2})}, 2, {AttrInt("axis", 1)});
    auto x1y1 = g.Node("Sub", NodeName(path, "Sub"), {anchors, lt_rb[0]});
    auto x2y2 = g.Node("Add", NodeName(path, "Add"), {anchors, lt_rb[1]});
    std::string box4;
    if (xyxy) {
      box4 = g.Node("Concat", NodeName(path, "Concat"), {x1y1, x2y2}, {AttrInt("axis", 1)});
    } else {
      auto c_xy = g.Node("Div", NodeName(path, "Div"), {g.Node("Add", NodeName(path, "Add"), {x1y1, x2y2}), g.Float(2.0)});
      auto wh = g.Node("Sub", NodeName(path, "Sub"), {x2y2, x1y1});
      box4 = g.Node("Concat", NodeName(path, "Concat"), {c_xy, wh}, {AttrInt("axis", 1)});
    }
    boxes.push_back(g.Node("Mul", NodeName(path, "Mul"), {box4, g.Float(m.strides().at(i))}));
    scores.push_back(g.Node("Reshape", NodeName(path, "Reshape"), {cls, g.Ints({0, nc, -1})}));
  }
  auto dbox = g.Node("Concat", NodeName(path, "Concat"), boxes, {AttrInt("axis", 2)});
  auto cls = g.Node("Sigmoid", NodeName(path, "Sigmoid"), {g.Node("Concat", NodeName(path, "Concat"), scores, {AttrInt("axis", 2)})});
  return g.Node("Concat", NodeName(path, "Concat"), {dbox, cls}, {AttrInt("axis", 1)});
}

}  // namespace yc::trainer::onnx_export
#endif  // YOLOCACHE_WITH_ONNX
