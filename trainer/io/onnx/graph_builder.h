// Internal to ONNX export: a thin layer over onnx::GraphProto (Debian's libonnx protobuf types) that adds
// initializers from ATen tensors, constants and nodes with unique names, so the block emitters
// (block_emitters.h) read like the forward passes they mirror. Float tensors are stored in the graph's
// float type (float32, or float16 for --half).
//
//   GraphBuilder g(model.mutable_graph(), /*half=*/false);
//   std::string w = g.Initializer("model.0.conv.weight", conv->weight);
//   std::string y = g.Node("Conv", "/model.0/conv/Conv", {x, w, b}, {AttrInts("strides", {2, 2})});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

namespace yc::trainer::onnx_export {

struct Attr {
  enum class Kind { kInt, kInts, kFloat, kString };
  Kind kind = Kind::kInt;
  std::string name;
  int64_t i = 0;
  std::vector<int64_t> ints;
  float f = 0;
  std::string s;
};
Attr AttrInt(const std::string& name, int64_t v);
Attr AttrInts(const std::string& name, std::vector<int64_t> v);
Attr AttrFloat(const std::string& name, float v);
Attr AttrString(const std::string& name, const std::string& v);

class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* graph, bool half) : graph_(graph), half_(half) {}

  // The graph's float element type (onnx::TensorProto::FLOAT or FLOAT16).
  int32_t float_type() const;
  // A named initializer holding `t` (float tensors converted to the graph's float type unless
  // `keep_dtype`, which keeps float32; integers stored as int64).
  std::string Initializer(const std::string& name, const at::Tensor& t, bool keep_dtype = false);
  // Unnamed constants, shared by value: int64 1-D (or 0-D when `scalar`), and float scalars.
  std::string Ints(const std::vector<int64_t>& v, bool scalar = false);
  std::string Float(double v);
  // Appends a node; returns its outputs' names ("<name>_output_<i>"). `name` is made unique.
  std::vector<std::string> NodeN(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                                 int outputs, const std::vector<Attr>& attrs = {});
  std::string Node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                   const std::vector<Attr>& attrs = {}) {
    return NodeN(op, name, inputs, 1, attrs).front();
  }
  // A graph input or output of the float type with dims given as numbers or (when `dim_names[i]` is
  // non-empty) symbolic names.
  void Input(const std::string& name, const std::vector<int64_t>& dims, const std::vector<std::string>& dim_names);
  void Output(const std::string& name, const std::vector<int64_t>& dims, const std::vector<std::string>& dim_names);

 private:
  std::string UniqueName(const std::string& name);

  onnx::GraphProto* graph_;
  bool half_;
  std::vector<std::string> used_names_;
  std::vector<std::pair<std::string, std::string>> constants_;  // key -> initializer name
};

}  // namespace yc::trainer::onnx_export
