#if YOLOCACHE_WITH_ONNX
#include "trainer/io/onnx/nms_emitter.h"

namespace yc::trainer::onnx_export {

namespace {

// float32 scalars (NonMaxSuppression takes float thresholds whatever the graph's type).
std::string Float32(GraphBuilder& g, const std::string& name, double v) {
  return g.Initializer(name, at::scalar_tensor(v, at::kFloat), /*keep_dtype=*/true);
}

std::string Cast(GraphBuilder& g, const std::string& x, int64_t to) {
  return g.Node("Cast", "/nms/Cast", {x}, {AttrInt("to", to)});
}

std::string Unsqueeze(GraphBuilder& g, const std::string& x, int64_t axis) {
  return g.Node("Unsqueeze", "/nms/Unsqueeze", {x, g.Ints({axis})});
}

// ReduceMax over `axis` without keeping it: axes an attribute up to opset 17, an input from 18.
std::string ReduceMax(GraphBuilder& g, const std::string& x, int64_t axis, int opset) {
  if (opset >= 18) return g.Node("ReduceMax", "/nms/ReduceMax", {x, g.Ints({axis})}, {AttrInt("keepdims", 0)});
  return g.Node("ReduceMax", "/nms/ReduceMax", {x}, {AttrInts("axes", {axis}), AttrInt("keepdims", 0)});
}

}  // namespace

std::string EmitNms(GraphBuilder& g, const std::string& images, const std::string& pred, int64_t nc,
                    const NmsSettings& s) {
  constexpr int64_t kFloat = onnx::TensorProto::FLOAT;
  const bool half = g.float_type() == onnx::TensorProto::FLOAT16;
  // NMS in float32 (NonMaxSuppression takes no float16); an fp16 file's output is cast back at the end.
  std::string p = half ? Cast(g, pred, kFloat) : pred;
  p = g.Node("Transpose", "/nms/Transpose", {p}, {AttrInts("perm", {0, 2, 1})});  // (N, A, 4 + nc)
  const auto parts = g.NodeN("Split", "/nms/Split", {p, g.Ints({4, nc})}, 2, {AttrInt("axis", 2)});
  const std::string& boxes = parts[0];                                              // (N, A, 4)
  const std::string scores = ReduceMax(g, parts[1], 2, s.opset);                    // (N, A)
  const std::string classes = Cast(g, g.Node("ArgMax", "/nms/ArgMax", {parts[1]}, {AttrInt("axis", 2), AttrInt("keepdims", 0)}),
                                   kFloat);                                        // (N, A)

  // NMSModel divides the boxes by max(H, W) before the class offset (large offsets trouble int8
  // quantization), so a class's boxes lie in [c, c + 1] and never meet another class's.
  const std::string shape = g.Node("Shape", "/nms/Shape", {images});
  const std::string hw = Cast(g, g.Node("Gather", "/nms/Gather", {shape, g.Ints({2, 3})}, {AttrInt("axis", 0)}), kFloat);
  const std::string side = g.Node("ReduceMax", "/nms/ReduceMax", {hw}, {AttrInt("keepdims", 0)});  // all axes
  std::string nmsbox = g.Node("Div", "/nms/Div", {boxes, side});
  if (!s.agnostic) nmsbox = g.Node("Add", "/nms/Add", {nmsbox, Unsqueeze(g, classes, 2)});

  // One class row per image: at most max_det per image, by descending score, score > conf.
  const std::string selected =
      g.Node("NonMaxSuppression", "/nms/NonMaxSuppression",
             {nmsbox, Unsqueeze(g, scores, 1), g.Ints({s.max_det}, /*scalar=*/true), Float32(g, "nms.iou_threshold", s.iou),
              Float32(g, "nms.score_threshold", s.conf)});  // (S, 3): image, class row (0), anchor
  const std::string image = g.Node("Gather", "/nms/Gather", {selected, g.Ints({0}, true)}, {AttrInt("axis", 1)});
  const std::string anchor = g.Node("Gather", "/nms/Gather", {selected, g.Ints({2}, true)}, {AttrInt("axis", 1)});
  const std::string image1 = Unsqueeze(g, image, 1);  // (S, 1)
  const std::string where = g.Node("Concat", "/nms/Concat", {image1, Unsqueeze(g, anchor, 1)}, {AttrInt("axis", 1)});
  const std::string dets = g.Node(
      "Concat", "/nms/Concat",
      {g.Node("GatherND", "/nms/GatherND", {boxes, where}), Unsqueeze(g, g.Node("GatherND", "/nms/GatherND", {scores, where}), 1),
       Unsqueeze(g, g.Node("GatherND", "/nms/GatherND", {classes, where}), 1)},
      {AttrInt("axis", 1)});  // (S, 6)

  // Row of each selection in its image's output: the selections come grouped by image, so it is the
  // running count of that image's selections (a cumulative sum of one-hot image indices) minus one.
  const std::string n = g.Node("Gather", "/nms/Gather", {shape, g.Ints({0})}, {AttrInt("axis", 0)});  // (1)
  const std::string onehot = g.Node("OneHot", "/nms/OneHot", {image, n, g.Ints({0, 1})}, {AttrInt("axis", -1)});
  const std::string count = g.Node("CumSum", "/nms/CumSum", {onehot, g.Ints({0}, true)});  // (S, N)
  const std::string row = g.Node("Sub", "/nms/Sub",
                                 {g.Node("GatherElements", "/nms/GatherElements", {count, image1}, {AttrInt("axis", 1)}),
                                  g.Ints({1})});  // (S, 1)
  const std::string slot = g.Node("Concat", "/nms/Concat", {image1, row}, {AttrInt("axis", 1)});
  const std::string out_shape = g.Node("Concat", "/nms/Concat", {n, g.Ints({s.max_det, 6})}, {AttrInt("axis", 0)});
  const std::string zeros =
      g.Node("Expand", "/nms/Expand",
             {g.Initializer("nms.zero", at::zeros({1, 1, 1}, at::kFloat), /*keep_dtype=*/true), out_shape});
  const std::string out = g.Node("ScatterND", "/nms/ScatterND", {zeros, slot, dets});  // (N, max_det, 6)
  return half ? Cast(g, out, onnx::TensorProto::FLOAT16) : out;
}

}  // namespace yc::trainer::onnx_export
#endif  // YOLOCACHE_WITH_ONNX
