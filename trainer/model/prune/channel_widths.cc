#include "trainer/model/prune/channel_widths.h"

#include <set>
#include <stdexcept>

#include <c10/core/GradMode.h>

#include "trainer/model/blocks.h"

namespace yc::trainer {

namespace nn = torch::nn;

namespace {

std::shared_ptr<nn::Module> ModuleAt(DetectionModelImpl& model, const std::string& path) {
  for (const auto& m : model.named_modules("", /*include_self=*/false)) {
    if (m.key() == path) return m.value();
  }
  throw std::invalid_argument("the model has no module " + path);
}

// The indices of `layout`'s channels that remain, numbered as the consumer's input (offsets in order).
std::vector<int64_t> KeptInputs(const ChannelLayout& layout, const ChannelKeep& keep, bool* all) {
  std::vector<int64_t> out;
  int64_t offset = 0;
  *all = true;
  for (const ChannelSegment& s : layout) {
    auto it = keep.find(s.producer);
    if (it == keep.end()) {
      for (int64_t k = 0; k < s.count; ++k) out.push_back(offset + k);
    } else {
      int64_t kept = 0;
      for (int64_t k : it->second) {
        if (k >= s.begin && k < s.begin + s.count) {
          out.push_back(offset + k - s.begin);
          ++kept;
        }
      }
      if (kept != s.count) *all = false;
    }
    offset += s.count;
  }
  return out;
}

at::Tensor Rows(const at::Tensor& t, const at::Tensor& index, int64_t dim) { return t.index_select(dim, index).contiguous(); }

at::Tensor IndexTensor(const std::vector<int64_t>& v, const at::Tensor& like) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(like.device());
}

void CutBatchNorm(nn::BatchNorm2dImpl& bn, const at::Tensor& rows) {
  for (at::Tensor* t : {&bn.weight, &bn.bias, &bn.running_mean, &bn.running_var}) {
    if (t->defined()) t->set_data(Rows(*t, rows.to(t->device()), 0));
  }
  bn.options.num_features(rows.size(0));
}

// What a depthwise Conv outputs for an input channel that is 0 everywhere: its BatchNorm's response to 0,
// through its activation. One value per channel.
at::Tensor ResponseToZero(ConvImpl& dw) {
  nn::BatchNorm2dImpl& bn = *dw.bn;
  at::Tensor y = bn.bias - bn.weight * bn.running_mean / at::sqrt(bn.running_var + bn.options.eps());
  return dw.act() ? at::silu(y) : y;
}

// For each 1x1 Conv behind a depthwise Conv (ConvNode::after_depthwise) that loses input channels: the
// constant those channels still fed it (the depthwise response to 0, times its weight column) moves into
// its BatchNorm's running mean, where it cancels in eval mode; in train mode the batch mean removes a
// constant anyway. Exact when the removed channels were 0 (gamma = beta = 0 upstream); otherwise the best
// estimate under network slimming's premise that they were near it. Runs before any tensor is cut.
void FoldDepthwiseConstants(DetectionModelImpl& model, const ChannelGraph& graph, const ChannelKeep& keep) {
  for (const ConvNode& n : graph.convs) {
    if (n.after_depthwise.empty()) continue;
    bool all = true;
    const std::vector<int64_t> kept = KeptInputs(n.inputs, keep, &all);
    if (all) continue;
    auto* c = ModuleAt(model, n.path)->as<ConvImpl>();
    auto* dw = ModuleAt(model, n.after_depthwise)->as<ConvImpl>();
    if (c == nullptr || dw == nullptr || c->conv->weight.size(2) != 1 || c->conv->weight.size(3) != 1) {
      throw std::invalid_argument(n.path + " is not a 1x1 Conv behind the depthwise " + n.after_depthwise);
    }
    at::Tensor removed = at::ones({LayoutWidth(n.inputs)}, at::TensorOptions().dtype(at::kBool));
    for (int64_t k : kept) removed[k] = false;
    const at::Tensor constant = ResponseToZero(*dw) * removed.to(dw->bn->weight.device(), dw->bn->weight.scalar_type());
    const at::Tensor w = c->conv->weight.flatten(1);  // (out, in)
    c->bn->running_mean.sub_(at::matmul(w, constant.to(w.scalar_type())));
  }
}

void CheckKeep(const ChannelGraph& graph, const ChannelKeep& keep) {
  for (const auto& [path, kept] : keep) {
    const ConvNode* n = graph.Find(path);
    if (n == nullptr) throw std::invalid_argument("no convolution " + path + " in the model's channel graph");
    if (!n->prunable) throw std::invalid_argument(path + " keeps all its channels (" + n->exempt + ")");
    if (kept.empty()) throw std::invalid_argument(path + " would keep none of its " + std::to_string(n->out) + " channels");
    std::set<int64_t> seen;
    int64_t first_half = 0;
    for (int64_t k : kept) {
      if (k < 0 || k >= n->out || !seen.insert(k).second) {
        throw std::invalid_argument(path + ": channel " + std::to_string(k) + " is out of range or repeated");
      }
      if (k < n->out / 2) ++first_half;
    }
    if (n->halves && first_half * 2 != static_cast<int64_t>(kept.size())) {
      throw std::invalid_argument(path + " is split in two halves, which must keep equal counts");
    }
  }
}

}  // namespace

std::map<std::string, int64_t> ConvWidths(nn::Module& model) {
  std::map<std::string, int64_t> widths;
  std::set<std::string> inner;  // the Conv2d inside each Conv, which the Conv's own entry stands for
  for (const auto& m : model.named_modules("", /*include_self=*/false)) {
    if (const auto* c = m.value()->as<ConvImpl>()) {
      widths[m.key()] = c->conv->weight.size(0);
      inner.insert(m.key() + ".conv");
    }
  }
  for (const auto& m : model.named_modules("", /*include_self=*/false)) {
    if (const auto* c = m.value()->as<nn::Conv2dImpl>(); c != nullptr && inner.count(m.key()) == 0) {
      widths[m.key()] = c->weight.size(0);
    }
  }
  return widths;
}

ChannelGraph GraphOf(DetectionModelImpl& model) {
  return BuildChannelGraph(model.family() == ModelFamily::k11, ConvWidths(model));
}

void ApplyChannelKeep(DetectionModelImpl& model, const ChannelGraph& graph, const ChannelKeep& keep) {
  CheckKeep(graph, keep);
  c10::NoGradGuard no_grad;
  FoldDepthwiseConstants(model, graph, keep);
  for (const ConvNode& n : graph.convs) {
    bool all_in = true;
    const std::vector<int64_t> in = KeptInputs(n.inputs, keep, &all_in);
    auto own = keep.find(n.path);
    if (all_in && own == keep.end()) continue;
    std::shared_ptr<nn::Module> m = ModuleAt(model, n.path);
    if (!n.has_bn) {  // the head's last Conv2d: fixed outputs, inputs cut
      auto* conv = m->as<nn::Conv2dImpl>();
      conv->weight.set_data(Rows(conv->weight, IndexTensor(in, conv->weight), 1));
      conv->options.in_channels(static_cast<int64_t>(in.size()));
      continue;
    }
    auto* c = m->as<ConvImpl>();
    if (c == nullptr) throw std::invalid_argument(n.path + " is not a Conv");
    nn::Conv2dImpl& conv = *c->conv;
    at::Tensor w = conv.weight;
    if (n.depthwise) {
      // One filter per input channel: the rows of the channels that remain, and as many groups.
      const at::Tensor rows = IndexTensor(in, w);
      w = Rows(w, rows, 0);
      if (conv.bias.defined()) conv.bias.set_data(Rows(conv.bias, rows, 0));
      CutBatchNorm(*c->bn, rows);
      conv.options.in_channels(rows.size(0)).out_channels(rows.size(0)).groups(rows.size(0));
    } else {
      if (!all_in) {
        w = Rows(w, IndexTensor(in, w), 1);
        conv.options.in_channels(static_cast<int64_t>(in.size()) * conv.options.groups());
      }
      if (own != keep.end()) {
        const at::Tensor rows = IndexTensor(own->second, w);
        w = Rows(w, rows, 0);
        if (conv.bias.defined()) conv.bias.set_data(Rows(conv.bias, rows, 0));
        CutBatchNorm(*c->bn, rows);
        conv.options.out_channels(rows.size(0));
      }
    }
    conv.weight.set_data(w);
  }
}

void CutToWidths(DetectionModelImpl& model, const std::map<std::string, int64_t>& widths) {
  const ChannelGraph graph = GraphOf(model);
  ChannelKeep keep;
  for (const auto& [path, width] : widths) {
    const ConvNode* n = graph.Find(path);
    if (n == nullptr || !n->prunable) {
      throw std::invalid_argument("pruned architecture: " + path + " is not a prunable convolution of " +
                                  ModelNameString(model.options().name()));
    }
    if (width < 1 || width > n->out || (n->halves && width % 2 != 0)) {
      throw std::invalid_argument("pruned architecture: " + path + " cannot have " + std::to_string(width) +
                                  " channels (it has " + std::to_string(n->out) + (n->halves ? ", in two equal halves)" : ")"));
    }
    std::vector<int64_t>& k = keep[path];
    if (n->halves) {
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < width / 2; ++i) k.push_back(h * (n->out / 2) + i);
    } else {
      for (int64_t i = 0; i < width; ++i) k.push_back(i);
    }
  }
  ApplyChannelKeep(model, graph, keep);
}

}  // namespace yc::trainer
