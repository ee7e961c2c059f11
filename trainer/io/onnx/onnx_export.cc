#include "trainer/io/onnx/onnx_export.h"

#if YOLOCACHE_WITH_ONNX
#include <algorithm>
#include <fstream>
#include <sstream>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <torch/nn/modules/upsampling.h>

#include "trainer/io/onnx/block_emitters.h"
#include "trainer/io/onnx/graph_builder.h"
#include "trainer/io/onnx/nms_emitter.h"
#endif

namespace yc::trainer {

#if YOLOCACHE_WITH_ONNX

namespace {

using onnx_export::GraphBuilder;

// The layer graphs of trainer/model/yolov8.cc and yolo11.cc, in ONNX: returns the head's inputs.
std::vector<std::string> EmitNeck(GraphBuilder& g, torch::nn::ModuleListImpl& layers, bool yolo11,
                                  const std::string& images) {
  using namespace onnx_export;
  auto path = [](size_t i) { return "model." + std::to_string(i); };
  auto conv = [&](size_t i, const std::string& x) { return EmitConv(g, path(i), *layers.ptr(i)->as<ConvImpl>(), x); };
  auto csp = [&](size_t i, const std::string& x) {
    return yolo11 ? EmitC3k2(g, path(i), *layers.ptr(i)->as<C3k2Impl>(), x)
                  : EmitC2f(g, path(i), *layers.ptr(i)->as<C2fImpl>(), x);
  };
  auto up = [&](size_t i, const std::string& x) { return EmitUpsample2x(g, path(i), x); };
  auto cat = [&](size_t i, const std::string& a, const std::string& b) { return EmitConcat(g, path(i), {a, b}); };

  auto x = conv(3, csp(2, conv(1, conv(0, images))));
  auto p3 = csp(4, x);
  auto p4 = csp(6, conv(5, p3));
  auto p5 = EmitSPPF(g, path(9), *layers.ptr(9)->as<SPPFImpl>(), csp(8, conv(7, p4)));
  const size_t o = yolo11 ? 1 : 0;  // YOLO11 has C2PSA at 10; every later index is one more
  if (yolo11) p5 = EmitC2PSA(g, path(10), *layers.ptr(10)->as<C2PSAImpl>(), p5);
  auto h1 = csp(12 + o, cat(11 + o, up(10 + o, p5), p4));
  auto h2 = csp(15 + o, cat(14 + o, up(13 + o, h1), p3));
  auto h3 = csp(18 + o, cat(17 + o, conv(16 + o, h2), h1));
  auto h4 = csp(21 + o, cat(20 + o, conv(19 + o, h3), p5));
  return {h2, h3, h4};
}

}  // namespace

bool OnnxExportAvailable() { return true; }

int OnnxMaxOpset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

Result<OnnxFile> ExportOnnx(DetectionModelImpl& model, const ExportOptions& o, const ExportMetadata& metadata) {
  const auto hw = o.hw();
  const int64_t nc = model.nc();
  int64_t anchors = 0;
  for (double s : model.strides()) {
    anchors += (hw[0] / static_cast<int64_t>(s)) * (hw[1] / static_cast<int64_t>(s));
  }
  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("yolocache-train");
  proto.set_producer_version("0.1.0");
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(o.opset);
  for (const auto& [k, v] : metadata.props) {
    auto* p = proto.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name("main_graph");
  GraphBuilder g(graph, o.half);

  OnnxFile file;
  file.opset = o.opset;
  file.input_shape = {o.batch, model.options().in_channels, hw[0], hw[1]};
  // NMSModel: max_det = min(anchors, max_det) at the export size.
  const int64_t max_det = std::min<int64_t>(anchors, o.max_det);
  file.output_shape = o.nms ? std::vector<int64_t>{o.batch, max_det, 6} : std::vector<int64_t>{o.batch, 4 + nc, anchors};
  std::vector<std::string> in_names, out_names;
  if (o.dynamic) {
    in_names = {"batch", "", "height", "width"};
    // With nms only the batch is free in the output (Ultralytics drops output0's anchors axis).
    out_names = {"batch", "", o.nms ? "" : "anchors"};
    file.input_shape = {-1, model.options().in_channels, -1, -1};
    file.output_shape[0] = -1;
    if (!o.nms) file.output_shape[2] = -1;
  }
  g.Input("images", file.input_shape, in_names);
  try {
    auto& layers = *model.model;
    const bool yolo11 = model.family() == ModelFamily::k11;
    const size_t head = layers.size() - 1;
    auto feats = EmitNeck(g, layers, yolo11, "images");
    auto out = onnx_export::EmitDetect(g, "model." + std::to_string(head), model.detect(), feats, /*xyxy=*/o.nms);
    if (o.nms) {
      onnx_export::NmsSettings nms;
      nms.conf = o.conf.value_or(0.25);
      nms.iou = o.iou;
      nms.max_det = max_det;
      nms.agnostic = o.agnostic_nms;
      nms.opset = o.opset;
      out = onnx_export::EmitNms(g, "images", out, nc, nms);
    }
    // The last node's output becomes the graph output "output0".
    graph->mutable_node(graph->node_size() - 1)->set_output(0, "output0");
    (void)out;
  } catch (const std::exception& e) {
    return Status::Unsupported(std::string("ONNX export: ") + e.what());
  }
  g.Output("output0", file.output_shape, out_names);
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("ONNX export: the graph fails onnx::checker: ") + e.what());
  }
  file.nodes = graph->node_size();
  file.initializers = graph->initializer_size();
  if (!proto.SerializeToString(&file.bytes)) return Status::IOError("ONNX export: protobuf serialization failed");
  return file;
}

namespace {
Result<onnx::ModelProto> ReadModel(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path.string() + ": cannot open");
  onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&in)) return Status::Corruption(path.string() + ": not an ONNX model (protobuf parse failed)");
  return proto;
}
}  // namespace

Status CheckOnnxFile(const std::filesystem::path& path) {
  YC_ASSIGN_OR_RETURN(onnx::ModelProto proto, ReadModel(path));
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    return Status::Corruption(path.string() + ": onnx::checker: " + e.what());
  }
  return Status::OK();
}

Result<std::vector<std::pair<std::string, std::string>>> ReadOnnxMetadata(const std::filesystem::path& path) {
  YC_ASSIGN_OR_RETURN(onnx::ModelProto proto, ReadModel(path));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : proto.metadata_props()) out.emplace_back(p.key(), p.value());
  return out;
}

#else  // !YOLOCACHE_WITH_ONNX

bool OnnxExportAvailable() { return false; }
int OnnxMaxOpset() { return 0; }
Result<OnnxFile> ExportOnnx(DetectionModelImpl&, const ExportOptions&, const ExportMetadata&) {
  return Status::Unsupported("ONNX export: this build has no libonnx (install libonnx-dev and reconfigure)");
}
Status CheckOnnxFile(const std::filesystem::path&) { return Status::Unsupported("built without libonnx"); }
Result<std::vector<std::pair<std::string, std::string>>> ReadOnnxMetadata(const std::filesystem::path&) {
  return Status::Unsupported("built without libonnx");
}

#endif

}  // namespace yc::trainer
