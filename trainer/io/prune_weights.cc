#include "trainer/io/prune_weights.h"

#include <system_error>

#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/model/prune/prune_model.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

bool SameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// The output's meta: a yolocache input's own (its names, options, run identity), else one made from the
// Ultralytics file's model; release weights either way, with the new architecture and no metrics (they
// measured the unpruned model).
Result<CheckpointMeta> OutputMeta(const fs::path& path, const ModelWeights& w) {
  CheckpointMeta meta;
  if (w.format == "yolocache") {
    YC_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path, at::Device(at::kCPU)));
    meta = r->meta();
  } else {
    meta.model_family = ModelFamilyName(w.name.family);
    meta.model_scale = ModelScaleName(w.name.scale);
    meta.nc = w.nc;
    meta.names = w.names;
    meta.options.model = ModelNameString(w.name);
    if (w.imgsz > 0) meta.options.imgsz = w.imgsz;
    meta.options.single_cls = w.single_cls;
  }
  meta.metrics = nlohmann::json::object();
  return meta;
}

}  // namespace

fs::path DefaultPrunedPath(const fs::path& weights) {
  return weights.parent_path() / (weights.stem().string() + "-pruned.pt");
}

Result<PruneReport> PruneWeights(const PruneRequest& req) {
  // The criterion first: a bad --ratio is a usage error whatever the file holds.
  YC_RETURN_IF_ERROR(CheckPruneCriterion(req.criterion));
  PruneReport report;
  report.out = req.out.empty() ? DefaultPrunedPath(req.weights) : req.out;
  if (SameFile(req.weights, report.out)) {
    return Status::InvalidArgument(Status::At(report.out.string(), "is the input weights; prune never overwrites "
                                              "them: give another --out"));
  }
  YC_ASSIGN_OR_RETURN(InferenceModel loaded, LoadInferenceModel(req.weights, at::Device(at::kCPU)));
  const ModelWeights& w = loaded.info;
  YC_ASSIGN_OR_RETURN(CheckpointMeta meta, OutputMeta(req.weights, w));
  DetectionModel model = loaded.model;
  report.model = ModelNameString(w.name);
  report.source = w.description;
  report.before = MeasureModel(*model, req.imgsz);

  YC_ASSIGN_OR_RETURN(ModelPrune pruned, PruneModel(*model, req.criterion, w.channels, req.imgsz));
  report.ratio = pruned.ratio;
  report.prunable = pruned.plan.prunable;
  report.removed = pruned.plan.removed;
  report.cut = pruned.plan.cut;
  report.floored = pruned.plan.floored;
  report.kept_back = pruned.plan.kept_back;
  report.after = MeasureModel(*model, req.imgsz);
  report.channels = pruned.channels;
  meta.options.channels = pruned.channels;
  YC_RETURN_IF_ERROR(WriteCheckpoint(report.out, ReleaseContents(std::move(meta), *model)));
  return report;
}

}  // namespace yc::trainer
