#include "trainer/model/blocks_yolo11.h"

#include <cmath>
#include <vector>

#include <c10/util/Exception.h>

namespace yc::trainer {

namespace nn = torch::nn;

namespace {
int64_t Scaled(int64_t c, double e) { return static_cast<int64_t>(static_cast<double>(c) * e); }  // Python int(c * e)
}  // namespace

// ---- C3k ----

C3kImpl::C3kImpl(int64_t c1, int64_t c2, int64_t n, bool shortcut, int64_t g, double e, int64_t k)
    : c1_(c1), c2_(c2), n_(n), g_(g), k_(k), e_(e), shortcut_(shortcut) {
  reset();
}

void C3kImpl::reset() {
  const int64_t c = Scaled(c2_, e_);
  cv1 = register_module("cv1", Conv(c1_, c, 1, 1));
  cv2 = register_module("cv2", Conv(c1_, c, 1, 1));
  cv3 = register_module("cv3", Conv(2 * c, c2_, 1));
  m = register_module("m", nn::Sequential());
  for (int64_t i = 0; i < n_; ++i) m->push_back(Bottleneck(c, c, shortcut_, g_, 1.0, k_, k_));
}

at::Tensor C3kImpl::forward(const at::Tensor& x) {
  return cv3->forward(at::cat({m->forward(cv1->forward(x)), cv2->forward(x)}, 1));
}

// ---- C3k2 ----

C3k2Impl::C3k2Impl(int64_t c1, int64_t c2, int64_t n, bool c3k, double e, int64_t g, bool shortcut)
    : c1_(c1), c2_(c2), n_(n), g_(g), c_(Scaled(c2, e)), e_(e), c3k_(c3k), shortcut_(shortcut) {
  reset();
}

void C3k2Impl::reset() {
  cv1 = register_module("cv1", Conv(c1_, 2 * c_, 1, 1));
  cv2 = register_module("cv2", Conv((2 + n_) * c_, c2_, 1));
  m = register_module("m", nn::ModuleList());
  for (int64_t i = 0; i < n_; ++i) {
    if (c3k_) {
      m->push_back(C3k(c_, c_, 2, shortcut_, g_));
    } else {
      m->push_back(Bottleneck(c_, c_, shortcut_, g_, 0.5));
    }
  }
}

at::Tensor C3k2Impl::forward(const at::Tensor& x) {
  auto halves = cv1->forward(x).chunk(2, 1);
  std::vector<at::Tensor> ys{halves[0], halves[1]};
  ys.reserve(2 + m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    ys.push_back(c3k_ ? m->ptr(i)->as<C3kImpl>()->forward(ys.back())
                      : m->ptr(i)->as<BottleneckImpl>()->forward(ys.back()));
  }
  return cv2->forward(at::cat(ys, 1));
}

// ---- Attention ----

AttentionImpl::AttentionImpl(int64_t dim, int64_t num_heads, double attn_ratio)
    : dim_(dim), num_heads_(num_heads), head_dim_(num_heads > 0 ? dim / num_heads : 0),
      key_dim_(static_cast<int64_t>(static_cast<double>(head_dim_) * attn_ratio)), attn_ratio_(attn_ratio),
      scale_(key_dim_ > 0 ? 1.0 / std::sqrt(static_cast<double>(key_dim_)) : 0.0) {
  // Ultralytics asserts nothing here; a zero head count would only fail later inside a view.
  TORCH_CHECK(num_heads_ > 0 && key_dim_ > 0 && dim_ % num_heads_ == 0, "Attention: dim ", dim_,
              " does not split into ", num_heads_, " heads with attn_ratio ", attn_ratio_);
  reset();
}

void AttentionImpl::reset() {
  const int64_t h = dim_ + 2 * key_dim_ * num_heads_;
  qkv = register_module("qkv", Conv(dim_, h, 1, 1, 1, /*act=*/false));
  proj = register_module("proj", Conv(dim_, dim_, 1, 1, 1, /*act=*/false));
  pe = register_module("pe", Conv(dim_, dim_, 3, 1, dim_, /*act=*/false));
}

at::Tensor AttentionImpl::forward(const at::Tensor& x) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), n = h * w;
  // reshape, not view: channels_last inputs are not viewable this way.
  auto parts = qkv->forward(x).reshape({b, num_heads_, 2 * key_dim_ + head_dim_, n}).split_with_sizes(
      {key_dim_, key_dim_, head_dim_}, 2);
  const auto& q = parts[0];
  const auto& k = parts[1];
  const auto& v = parts[2];
  auto attn = (at::matmul(q.transpose(-2, -1), k) * scale_).softmax(-1);  // (b, heads, n, n)
  auto y = at::matmul(v, attn.transpose(-2, -1)).reshape({b, c, h, w}) + pe->forward(v.reshape({b, c, h, w}));
  return proj->forward(y);
}

// ---- PSABlock ----

PSABlockImpl::PSABlockImpl(int64_t c, double attn_ratio, int64_t num_heads, bool shortcut)
    : c_(c), num_heads_(num_heads), attn_ratio_(attn_ratio), shortcut_(shortcut) {
  reset();
}

void PSABlockImpl::reset() {
  attn = register_module("attn", Attention(c_, num_heads_, attn_ratio_));
  ffn = register_module("ffn", nn::Sequential(Conv(c_, 2 * c_, 1), Conv(2 * c_, c_, 1, 1, 1, /*act=*/false)));
}

at::Tensor PSABlockImpl::forward(const at::Tensor& x) {
  auto y = shortcut_ ? x + attn->forward(x) : attn->forward(x);
  return shortcut_ ? y + ffn->forward(y) : ffn->forward(y);
}

// ---- C2PSA ----

C2PSAImpl::C2PSAImpl(int64_t c1, int64_t c2, int64_t n, double e) : c1_(c1), n_(n), c_(Scaled(c1, e)), e_(e) {
  TORCH_CHECK(c1 == c2, "C2PSA: input and output channels must be equal, got ", c1, " and ", c2);
  reset();
}

void C2PSAImpl::reset() {
  cv1 = register_module("cv1", Conv(c1_, 2 * c_, 1, 1));
  cv2 = register_module("cv2", Conv(2 * c_, c1_, 1));
  m = register_module("m", nn::Sequential());
  for (int64_t i = 0; i < n_; ++i) m->push_back(PSABlock(c_, 0.5, c_ / 64));
}

at::Tensor C2PSAImpl::forward(const at::Tensor& x) {
  auto halves = cv1->forward(x).split(c_, 1);
  return cv2->forward(at::cat({halves[0], m->forward(halves[1])}, 1));
}

}  // namespace yc::trainer
