#include "trainer/loss/distill_loss.h"

#include <string>

#include "trainer/model/sync_batch_norm.h"
#include "trainer/runtime/autocast.h"

namespace yc::trainer {

namespace {

// (B, no, H, W) per level -> (B, A, no) over all levels, fp32.
at::Tensor Flatten(const std::vector<at::Tensor>& feats, int64_t no) {
  std::vector<at::Tensor> flat;
  flat.reserve(feats.size());
  const int64_t bs = feats.front().size(0);
  for (const auto& f : feats) flat.push_back(f.to(at::kFloat).reshape({bs, no, -1}));
  return at::cat(flat, 2).permute({0, 2, 1});
}

}  // namespace

Result<at::Tensor> DistillLoss::operator()(const std::vector<at::Tensor>& student,
                                           const std::vector<at::Tensor>& teacher) const {
  const int64_t nc = options_.nc, reg_max = options_.reg_max, no = nc + 4 * reg_max;
  if (student.empty() || student.size() != teacher.size()) {
    return Status::InvalidArgument("distillation: the student has " + std::to_string(student.size()) +
                                   " output levels, the teacher " + std::to_string(teacher.size()));
  }
  for (size_t i = 0; i < student.size(); ++i) {
    const at::Tensor& s = student[i];
    const at::Tensor& t = teacher[i];
    if (!s.defined() || !t.defined() || s.dim() != 4 || s.size(1) != no || !s.sizes().equals(t.sizes())) {
      return Status::InvalidArgument(
          "distillation: output level " + std::to_string(i) + " of the student and the teacher must both be (B, " +
          std::to_string(no) + ", H, W) with the same anchors; got " +
          (s.defined() ? c10::str(s.sizes()) : std::string("none")) + " and " +
          (t.defined() ? c10::str(t.sizes()) : std::string("none")));
    }
  }
  // fp32 even inside the step's autocast region: log_softmax and the sums lose too much in half precision.
  AutocastGuard fp32(student.front().device().type(), /*enabled=*/false);
  const at::Tensor s = Flatten(student, no);                              // (B, A, no)
  at::Tensor t;
  {
    // The teacher's outputs are targets: detached, so no gradient can reach its parameters even when the
    // caller ran it with grad mode on.
    std::vector<at::Tensor> detached;
    detached.reserve(teacher.size());
    for (const auto& f : teacher) detached.push_back(f.detach());
    t = Flatten(detached, no);
  }
  const int64_t bs = s.size(0), na = s.size(1);

  // Classes: the binary KL sum_c p log(p/q) + (1-p) log((1-p)/(1-q)), from logits with log-sigmoid
  // (log(1 - sigmoid(x)) = log_sigmoid(-x)), stable for any logit.
  const at::Tensor s_cls = s.narrow(2, 4 * reg_max, nc);
  const at::Tensor t_cls = t.narrow(2, 4 * reg_max, nc);
  const at::Tensor p = t_cls.sigmoid();
  const at::Tensor kl_cls = p * (at::log_sigmoid(t_cls) - at::log_sigmoid(s_cls)) +
                            (1 - p) * (at::log_sigmoid(-t_cls) - at::log_sigmoid(-s_cls));
  const at::Tensor cls = kl_cls.sum(-1);  // (B, A)

  // Boxes: per side the KL of the softened bin distributions, T^2 so its gradient keeps its size across T.
  const double temp = options_.temperature;
  const at::Tensor s_box = s.narrow(2, 0, 4 * reg_max).reshape({bs, na, 4, reg_max});
  const at::Tensor t_box = t.narrow(2, 0, 4 * reg_max).reshape({bs, na, 4, reg_max});
  const at::Tensor log_q = (s_box / temp).log_softmax(-1);
  const at::Tensor log_p = (t_box / temp).log_softmax(-1);
  const at::Tensor box = (log_p.exp() * (log_p - log_q)).sum(-1).mean(-1) * (temp * temp);  // (B, A)

  // Anchors weighted by the teacher's confidence; the sum clamped at 1 as the detection loss clamps its
  // target-score sum, so a batch the teacher sees nothing in does not blow the term up.
  const at::Tensor w = std::get<0>(p.max(-1));  // (B, A), no gradient (from the detached teacher)
  at::Tensor w_sum = w.sum();
  if (global_) global_->SumInPlace(w_sum);
  at::Tensor kd = (w * (cls + box)).sum() / w_sum.clamp_min(1.0);
  if (global_) kd = kd * static_cast<double>(global_->world_size());
  return kd;
}

}  // namespace yc::trainer
