#if YOLOCACHE_WITH_ONNX
#include "trainer/io/onnx/graph_builder.h"

#include <algorithm>
#include <cstring>

namespace yc::trainer::onnx_export {

namespace {
Attr MakeAttr(Attr::Kind kind, const std::string& name) {
  Attr a;
  a.kind = kind;
  a.name = name;
  return a;
}
}  // namespace

Attr AttrInt(const std::string& name, int64_t v) {
  Attr a = MakeAttr(Attr::Kind::kInt, name);
  a.i = v;
  return a;
}
Attr AttrInts(const std::string& name, std::vector<int64_t> v) {
  Attr a = MakeAttr(Attr::Kind::kInts, name);
  a.ints = std::move(v);
  return a;
}
Attr AttrFloat(const std::string& name, float v) {
  Attr a = MakeAttr(Attr::Kind::kFloat, name);
  a.f = v;
  return a;
}
Attr AttrString(const std::string& name, const std::string& v) {
  Attr a = MakeAttr(Attr::Kind::kString, name);
  a.s = v;
  return a;
}

int32_t GraphBuilder::float_type() const { return half_ ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT; }

std::string GraphBuilder::UniqueName(const std::string& name) {
  std::string n = name;
  for (int i = 1; std::find(used_names_.begin(), used_names_.end(), n) != used_names_.end(); ++i) {
    n = name + "_" + std::to_string(i);
  }
  used_names_.push_back(n);
  return n;
}

std::string GraphBuilder::Initializer(const std::string& name, const at::Tensor& t, bool keep_dtype) {
  at::Tensor c = t.detach().to(at::kCPU);
  onnx::TensorProto* p = graph_->add_initializer();
  p->set_name(UniqueName(name));
  for (int64_t d : c.sizes()) p->add_dims(d);
  if (c.is_floating_point()) {
    const bool half = half_ && !keep_dtype;
    c = c.to(half ? at::kHalf : at::kFloat);
    p->set_data_type(half ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT);
  } else {
    c = c.to(at::kLong);
    p->set_data_type(onnx::TensorProto::INT64);
  }
  c = c.contiguous();
  // raw_data is little-endian, as the tensors on every machine this builds for.
  p->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()));
  return p->name();
}

std::string GraphBuilder::Ints(const std::vector<int64_t>& v, bool scalar) {
  std::string key = scalar ? "s" : "v";
  for (int64_t x : v) key += ":" + std::to_string(x);
  for (const auto& [k, n] : constants_) {
    if (k == key) return n;
  }
  at::Tensor t = at::tensor(v, at::kLong);
  if (scalar) t = t.reshape({});
  std::string n = Initializer("const_i64", t);
  constants_.emplace_back(key, n);
  return n;
}

std::string GraphBuilder::Float(double v) {
  const std::string key = "f:" + std::to_string(v);
  for (const auto& [k, n] : constants_) {
    if (k == key) return n;
  }
  std::string n = Initializer("const_f", at::scalar_tensor(v, at::kDouble));
  constants_.emplace_back(key, n);
  return n;
}

std::vector<std::string> GraphBuilder::NodeN(const std::string& op, const std::string& name,
                                             const std::vector<std::string>& inputs, int outputs,
                                             const std::vector<Attr>& attrs) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op);
  node->set_name(UniqueName(name));
  for (const auto& in : inputs) node->add_input(in);
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) {
    outs.push_back(node->name() + "_output_" + std::to_string(i));
    node->add_output(outs.back());
  }
  for (const auto& a : attrs) {
    onnx::AttributeProto* p = node->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case Attr::Kind::kInt:
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(a.i);
        break;
      case Attr::Kind::kInts:
        p->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
      case Attr::Kind::kFloat:
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case Attr::Kind::kString:
        p->set_type(onnx::AttributeProto::STRING);
        p->set_s(a.s);
        break;
    }
  }
  return outs;
}

namespace {
void SetValueInfo(onnx::ValueInfoProto* v, const std::string& name, int32_t type, const std::vector<int64_t>& dims,
                  const std::vector<std::string>& dim_names) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (i < dim_names.size() && !dim_names[i].empty()) {
      d->set_dim_param(dim_names[i]);
    } else {
      d->set_dim_value(dims[i]);
    }
  }
}
}  // namespace

void GraphBuilder::Input(const std::string& name, const std::vector<int64_t>& dims,
                         const std::vector<std::string>& dim_names) {
  SetValueInfo(graph_->add_input(), name, float_type(), dims, dim_names);
}

void GraphBuilder::Output(const std::string& name, const std::vector<int64_t>& dims,
                          const std::vector<std::string>& dim_names) {
  SetValueInfo(graph_->add_output(), name, float_type(), dims, dim_names);
}

}  // namespace yc::trainer::onnx_export
#endif  // YOLOCACHE_WITH_ONNX
