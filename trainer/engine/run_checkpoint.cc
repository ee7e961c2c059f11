// A run's checkpoints (trainer/engine/train_run.h): what last.pt and best.pt hold, the check that a
// resumed checkpoint trained on this cache, and the DDP gradient average before pending gradients are saved.
#include "libcache/format/manifest.h"
#include "trainer/engine/results_log.h"
#include "trainer/engine/run_identity.h"
#include "trainer/engine/train_run.h"

namespace yc::trainer {

CheckpointMeta TrainRun::MetaOf(const TrainOptions& options, const TrainState& state, const nlohmann::json& metrics) const {
  CheckpointMeta m;
  m.model_family = ModelFamilyName(model_name_.family);
  m.model_scale = ModelScaleName(model_name_.scale);
  m.nc = nc_;
  m.names = names_;
  m.options = options;
  m.state = state;
  m.created = ManifestTimestampNow();
  m.metrics = metrics;
  m.run_id = run_id_;
  m.data_identity = data_identity_;
  if (cache_) m.data_yaml = cache_->manifest().dataset_yaml;
  return m;
}

nlohmann::ordered_json TrainRun::TrainResults() const {
  return results_ ? ResultsColumns(results_->records()) : nlohmann::ordered_json::object();
}

Status TrainRun::CheckResumedData(const CheckpointMeta& meta) {
  const std::string resumed = hooks_.resume.string();
  if (meta.data_identity.empty()) {
    Say("warning: " + resumed + " predates checkpoints recording their cache; cannot check that --data " + o_.data +
        " is the dataset it trained on");
    return Status::OK();
  }
  if (meta.data_identity == data_identity_) return Status::OK();
  const std::string what = resumed + " trained on " + meta.options.data + " (" + DescribeCacheIdentity(meta.data_identity) +
                           "); --data " + o_.data + " is another cache (" + DescribeCacheIdentity(data_identity_) + ")";
  if (!hooks_.resume_other_data) {
    return Status::InvalidArgument("--resume " + what + "; give --resume-other-data to continue on it anyway");
  }
  Say("warning: --resume-other-data: " + what + "; continuing on it");
  return Status::OK();
}

namespace {

// Take() with its errors naming the file the snapshot is for.
Result<std::shared_ptr<CheckpointSnapshot>> TakeSnapshot(const CheckpointContents& c, const std::filesystem::path& file) {
  Result<std::shared_ptr<CheckpointSnapshot>> snap = CheckpointSnapshot::Take(c);
  if (!snap.ok()) return Status(snap.status()).WithContext(file.string());
  return snap;
}

}  // namespace

Result<std::shared_ptr<CheckpointSnapshot>> TrainRun::SnapshotRelease(const std::filesystem::path& file) {
  CheckpointContents c = ReleaseContents(Meta(), *stack_.ema->module());
  c.train_results = TrainResults();
  return TakeSnapshot(c, file);
}

void TrainRun::RecordStepState() {
  state_.ema_updates = stack_.ema->updates();
  if (stack_.target.amp.scaler) {
    state_.scaler_scale = stack_.scaler->scale_value();
    state_.scaler_growth = stack_.scaler->growth_value();
  }
  if (stack_.fused) stack_.fused->SyncState();  // Adam step counts live on the device while training
}

Result<std::shared_ptr<CheckpointSnapshot>> TrainRun::SnapshotLast(bool pending_grads) {
  RecordStepState();
  CheckpointContents c;
  c.meta = Meta();
  c.model = stack_.model.get();
  c.ema = stack_.ema->module().get();
  c.optimizer = stack_.optimizer.get();
  c.grads = pending_grads;
  c.full_precision = o_.exact_resume;
  c.train_results = TrainResults();
  return TakeSnapshot(c, last_);
}

Result<std::shared_ptr<CheckpointSnapshot>> TrainRun::SnapshotShadow(const PendingEpochEnd& p, bool release,
                                                                       const std::filesystem::path& file) const {
  const CheckpointMeta meta = MetaOf(p.options, p.state, p.metrics);
  CheckpointContents c;
  if (release) {
    c = ReleaseContents(meta, shadow_.ema());
  } else {
    c.meta = meta;
    c.model = &shadow_.model();
    c.ema = &shadow_.ema();
    c.optimizer_capture = &shadow_.optimizer();
    c.full_precision = p.options.exact_resume;
  }
  std::vector<EpochRecord> rows = p.records;
  rows.push_back(p.rec);
  c.train_results = ResultsColumns(rows);
  return TakeSnapshot(c, file);
}

Status TrainRun::SaveLast(bool pending_grads) {
  YC_RETURN_IF_ERROR(writer_.Wait());  // an earlier background write must not land after this one
  YC_ASSIGN_OR_RETURN(std::shared_ptr<CheckpointSnapshot> snap, SnapshotLast(pending_grads));
  return snap->WriteTo(last_);
}

Status TrainRun::AverageGrads() {
  std::vector<at::Tensor> grads;
  for (const auto& p : stack_.model->parameters()) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return Status::OK();
  std::vector<at::Tensor> flat;
  flat.reserve(grads.size());
  for (const auto& g : grads) flat.push_back(g.reshape({-1}).to(at::kFloat));
  at::Tensor all = at::cat(flat);  // one collective for all of them
  YC_RETURN_IF_ERROR(dist_->AllReduce(all, ReduceKind::kAvg));
  int64_t offset = 0;
  for (auto& g : grads) {
    const int64_t n = g.numel();
    g.copy_(all.narrow(0, offset, n).view(g.sizes()));
    offset += n;
  }
  return Status::OK();
}

}  // namespace yc::trainer
