#include "trainer/engine/teacher.h"

#include <c10/core/GradMode.h>

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

std::string Strides(const std::vector<double>& s) {
  std::string out;
  for (double v : s) out += (out.empty() ? "" : ",") + std::to_string(static_cast<int64_t>(v));
  return "[" + out + "]";
}

}  // namespace

Status CheckTeacherClasses(const ModelWeights& teacher, const fs::path& path, int64_t run_nc) {
  if (teacher.nc == run_nc) return Status::OK();
  return Status::InvalidArgument("--teacher " + path.string() + ": the teacher has " + std::to_string(teacher.nc) +
                                 " classes (nc=" + std::to_string(teacher.nc) + "), the run trains " +
                                 std::to_string(run_nc) + " (nc=" + std::to_string(run_nc) +
                                 "); distillation pairs class scores one to one, so both need the same classes");
}

Result<std::unique_ptr<Teacher>> Teacher::Load(const fs::path& path, int64_t run_nc, const at::Device& device,
                                               bool channels_last) {
  YC_ASSIGN_OR_RETURN(InferenceModel m, LoadInferenceModel(path, device));
  YC_RETURN_IF_ERROR(CheckTeacherClasses(m.info, path, run_nc));
  std::unique_ptr<Teacher> t(new Teacher());
  t->path_ = path;
  t->model_ = m.model;
  t->info_ = std::move(m.info);
  if (channels_last) ToChannelsLast(*t->model_);
  // Every layer in eval mode (BatchNorm on its running statistics, never updated), but the top module in
  // train mode: DetectionModel decodes boxes only when it is in eval mode, and the loss wants the raw
  // outputs (decoding would be wasted work in every step, and its anchor cache is no place for a
  // CUDA-graph capture).
  t->model_->train();
  t->model_->model->eval();
  return t;
}

Status Teacher::CheckPairsWith(const DetectionModelImpl& student) const {
  // Outputs pair up anchor for anchor only when both heads see the same grids (strides) and lay out the
  // same box bins (reg_max); every model built here has 16 bins and strides 8, 16, 32, but say so if not.
  if (model_->reg_max() == student.reg_max() && model_->strides() == student.strides()) return Status::OK();
  return Status::InvalidArgument("--teacher " + path_.string() + ": its head has reg_max " +
                                 std::to_string(model_->reg_max()) + " and strides " + Strides(model_->strides()) +
                                 ", the student's reg_max " + std::to_string(student.reg_max()) + " and strides " +
                                 Strides(student.strides()) + "; distillation needs both equal (one output per anchor in each)");
}

std::vector<at::Tensor> Teacher::Forward(const at::Tensor& images) {
  c10::NoGradGuard no_grad;
  return model_->forward(images).feats;
}

std::string Teacher::Describe() const {
  return ModelNameString(info_.name) + ", " + std::to_string(info_.nc) + " classes, " +
         std::to_string(CountParameters(*model_)) + " parameters (" + info_.description + ")";
}

}  // namespace yc::trainer
