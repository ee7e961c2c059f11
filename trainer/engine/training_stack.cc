#include "trainer/engine/training_stack.h"

#include <cstdio>

#include "base/format.h"
#include "trainer/runtime/device_feed.h"

namespace yc::trainer {

std::vector<int64_t> SteadyTrainInput(const TrainOptions& o, int world_size) {
  if (o.rect || o.multi_scale || world_size < 1) return {};
  return {o.batch / world_size, 3, o.imgsz, o.imgsz};
}

Result<TrainDevice> PrepareDevice(const TrainOptions& o, const at::Device& device) {
  TrainDevice d;
  d.device = device;
  YC_ASSIGN_OR_RETURN(d.amp, ResolveAmp(o, device));
  d.tuning = ConfigureDevice(device, o.cudnn_benchmark);
  d.channels_last = device.is_cuda() && o.channels_last;
  return d;
}

DetectionModel NewModel(const ModelName& name, int64_t nc, const TrainDevice& target,
                        const std::map<std::string, int64_t>& channels) {
  ModelOptions options(name, nc);
  options.channels = channels;
  DetectionModel model(options);
  model->to(target.device);
  if (target.channels_last) ToChannelsLast(*model);
  return model;
}

Status BuildStackOptimizer(TrainingStack* s, const TrainOptions& o, int64_t nc, int64_t iterations) {
  s->accumulate = AccumulateSteps(o.nbs, o.batch);
  s->weight_decay = ScaledWeightDecay(o.weight_decay, o.batch, s->accumulate, o.nbs);
  YC_ASSIGN_OR_RETURN(s->spec, ResolveOptimizer(o.optimizer, o.lr0, o.momentum, o.warmup_bias_lr, nc, iterations));
  s->optimizer = BuildOptimizer(*s->model, s->spec, s->weight_decay);
  return Status::OK();
}

Status BuildStep(TrainingStack* s, const TrainOptions& o, int64_t nc, const StackRestore& restore, const StepSync& sync) {
  const CheckpointReader* resume = restore.reader;
  const TrainState fresh;
  const TrainState& state = resume != nullptr ? *restore.state : fresh;
  if (resume != nullptr) {
    YC_RETURN_IF_ERROR(resume->LoadOptimizer(*s->optimizer));
    YC_RETURN_IF_ERROR(resume->LoadGrads(*s->model));
  }
  s->ema = std::make_unique<ModelEMA>(*s->model, 0.9999, 2000.0, state.ema_updates);
  if (resume != nullptr && resume->has_ema()) YC_RETURN_IF_ERROR(resume->LoadModule("ema", *s->ema->module()));
  GradScalerOptions so;
  so.enabled = s->target.amp.scaler;
  s->scaler = std::make_unique<GradScaler>(so);
  if (resume != nullptr && so.enabled) s->scaler->LoadState(state.scaler_scale, state.scaler_growth, s->target.device);
  LossOptions loss_options{o.box, o.cls, o.dfl};
  loss_options.assigner_kernels = o.assigner_kernel == "auto";
  s->loss = std::make_unique<DetectionLoss>(nc, s->model->strides(), loss_options);
  if (o.fused_optimizer && FusedStep::Supported(*s->optimizer)) s->fused = std::make_unique<FusedStep>(*s->optimizer);
  s->step = std::make_unique<TrainStep>(s->model, *s->optimizer, *s->ema, *s->scaler, *s->loss, s->target.amp,
                                        o.clip_grad, s->target.device.type(), s->fused.get(), sync.reducer,
                                        sync.world_size);
  YC_ASSIGN_OR_RETURN(const DepthwiseKernelMode depthwise, ParseDepthwiseKernelMode(o.depthwise_kernel));
  s->step->set_depthwise_policy(DepthwisePolicy(depthwise, SteadyTrainInput(o, sync.world_size)));
  return Status::OK();
}

Status EnableCudaGraphs(TrainingStack* s, const TrainOptions& o, bool distributed, const GraphedStep::Notify& say) {
  YC_ASSIGN_OR_RETURN(const CudaGraphsMode mode, ParseCudaGraphsMode(o.cuda_graphs));
  if (mode == CudaGraphsMode::kOff) return Status::OK();
  const std::string blocker = CudaGraphsBlocker(s->target.device, s->fused != nullptr, distributed, o.multi_scale);
  if (!blocker.empty()) {
    if (mode == CudaGraphsMode::kOn) return Status::InvalidArgument("--cuda-graphs on: " + blocker);
    if (s->target.device.is_cuda() && say) say("cuda graphs: off (" + blocker + ")");
    return Status::OK();
  }
  s->step->UseCudaGraphs(s->target.device, say);
  if (say) say("cuda graphs: the train step is captured per batch shape and box-count bucket, then replayed");
  return Status::OK();
}

std::string DescribeOptimizer(const TrainingStack& s) {
  const ParamGroups g = SplitParameters(*s.model);
  return std::string("optimizer: ") + OptimizerName(s.spec.kind) + "(lr=" + FormatNumber("%g", s.spec.lr) +
         ", momentum=" + FormatNumber("%g", s.spec.momentum) + ") with parameter groups " + std::to_string(g.norm_weights.size()) +
         " weight(decay=0.0), " + std::to_string(g.decay.size()) + " weight(decay=" + FormatNumber("%g", s.weight_decay) +
         "), " + std::to_string(g.biases.size()) + " bias(decay=0.0); accumulate " + std::to_string(s.accumulate) +
         " batches per step";
}

}  // namespace yc::trainer
