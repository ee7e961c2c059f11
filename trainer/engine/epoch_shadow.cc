#include "trainer/engine/epoch_shadow.h"

#include <c10/core/GradMode.h>
#include <torch/version.h>

#include "trainer/io/named_state.h"
#include "trainer/runtime/exception_text.h"

// _foreach_copy_ (one launch for many tensors) exists from PyTorch 2.2.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
#define YC_FOREACH_COPY 1
#else
#define YC_FOREACH_COPY 0
#endif

namespace yc::trainer {

namespace {

bool SameShapes(const std::vector<std::pair<std::string, at::Tensor>>& a,
                const std::vector<std::pair<std::string, at::Tensor>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !a[i].second.defined() || !b[i].second.defined() ||
        a[i].second.sizes() != b[i].second.sizes() || a[i].second.scalar_type() != b[i].second.scalar_type()) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status EpochShadow::CopyModule(const torch::nn::Module& source, std::shared_ptr<DetectionModelImpl>* copy) {
  const auto from = NamedState(source);
  const auto to = *copy == nullptr ? decltype(from){} : NamedState(**copy);
  if (*copy == nullptr || !SameShapes(to, from)) {
    auto cloned = std::dynamic_pointer_cast<DetectionModelImpl>(source.clone());
    if (cloned == nullptr) return Status::InvalidArgument("epoch shadow: the model is not a detection model");
    cloned->train(source.is_training());  // as the source: Ultralytics' module pickle records it
    *copy = std::move(cloned);
    return Status::OK();
  }
  std::vector<at::Tensor> dst, src;
  dst.reserve(to.size());
  src.reserve(from.size());
  for (size_t i = 0; i < to.size(); ++i) {
    dst.push_back(to[i].second);
    src.push_back(from[i].second.detach());
  }
#if YC_FOREACH_COPY
  at::_foreach_copy_(dst, src);
#else
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
#endif
  return Status::OK();
}

Status EpochShadow::Capture(const torch::nn::Module& model, const torch::nn::Module& ema,
                            const torch::optim::Optimizer& optimizer) {
  try {
    c10::NoGradGuard no_grad;
    YC_RETURN_IF_ERROR(CopyModule(model, &model_));
    YC_RETURN_IF_ERROR(CopyModule(ema, &ema_));
    // The ids of Ultralytics' optimizer entry follow the live model's parameters, which the optimizer holds.
    YC_ASSIGN_OR_RETURN(optimizer_, OptimizerCapture::Capture(optimizer, model.as<DetectionModelImpl>()));
    optimizer_.Freeze();
  } catch (const std::exception& e) {
    return Status::IOError("cannot copy the epoch's training state: " + ExceptionLine(e));
  }
  return Status::OK();
}

}  // namespace yc::trainer
