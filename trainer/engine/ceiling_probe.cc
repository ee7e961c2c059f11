#include "trainer/engine/ceiling_probe.h"

#include <chrono>
#include <cstring>
#include <memory>

#include <ATen/CPUGeneratorImpl.h>

#include "libcache/cache.h"
#include "loader/loader.h"
#include "trainer/engine/step_warmup.h"
#include "trainer/engine/training_stack.h"
#include "trainer/runtime/clock.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

namespace {

// Fixed random labels for the synthetic probe: `per_image` boxes in every image.
at::Tensor SyntheticLabels(int64_t batch, int64_t nc, int64_t per_image, const at::Device& device) {
  auto gen = at::detail::createCPUGenerator(12345);
  const int64_t n = batch * per_image;
  auto bi = at::arange(batch, at::kFloat).repeat_interleave(per_image);
  auto cls = at::randint(nc, {n}, gen, at::TensorOptions().dtype(at::kFloat));
  auto cxy = at::rand({n, 2}, gen, at::TensorOptions().dtype(at::kFloat)).mul(0.6).add(0.2);
  auto wh = at::rand({n, 2}, gen, at::TensorOptions().dtype(at::kFloat)).mul(0.25).add(0.05);
  return at::cat({bi.unsqueeze(1), cls.unsqueeze(1), cxy, wh}, 1).to(device);
}

// The probe's training stack: the run's, on a fresh model (optimizer "auto" sized for a long run).
Status BuildProbeStack(const TrainOptions& o, int64_t nc, TrainingStack* stack) {
  YC_ASSIGN_OR_RETURN(at::Device device, ParseDevice(o.device));
  YC_ASSIGN_OR_RETURN(ModelName model_name, ParseModelName(o.model));
  YC_ASSIGN_OR_RETURN(stack->target, PrepareDevice(o, device));
  stack->model = NewModel(model_name, nc, stack->target);
  stack->model->train();
  YC_RETURN_IF_ERROR(BuildStackOptimizer(stack, o, nc, /*iterations=*/100000));
  YC_RETURN_IF_ERROR(BuildStep(stack, o, nc));
  return EnableCudaGraphs(stack, o, /*distributed=*/false, nullptr);
}

// The label tables on the device, or fixed random ones (4 boxes per image) when there are none.
std::vector<ProbeLabels> DeviceLabels(const std::vector<ProbeLabels>& real_labels, int64_t batch, int64_t nc,
                                      const at::Device& device) {
  std::vector<ProbeLabels> labels;
  for (const auto& l : real_labels) labels.push_back({l.table.to(device), l.max_boxes});
  if (labels.empty()) {
    const int64_t per_image = 4;
    labels.push_back({SyntheticLabels(batch, nc, per_image, device), per_image});
  }
  return labels;
}

}  // namespace

Result<SyntheticThroughput> MeasureSyntheticThroughput(const TrainOptions& o, int64_t nc, int iterations,
                                                       const std::vector<ProbeLabels>& real_labels, bool profile) {
  try {
    TrainingStack stack;
    YC_RETURN_IF_ERROR(BuildProbeStack(o, nc, &stack));
    const at::Device device = stack.target.device;
    auto images = at::rand({o.batch, 3, o.imgsz, o.imgsz}, at::TensorOptions().device(device));
    if (stack.target.channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
    const std::vector<ProbeLabels> labels = DeviceLabels(real_labels, o.batch, nc, device);
    auto run = [&](int n, int64_t* it) -> Status {
      for (int k = 0; k < n; ++k, ++*it) {
        const bool step_now = (*it + 1) % stack.accumulate == 0;
        const ProbeLabels& l = labels[static_cast<size_t>(*it) % labels.size()];
        YC_RETURN_IF_ERROR(stack.step->ForwardBackward(images, l.table, l.max_boxes, step_now).status());
        if (step_now) YC_RETURN_IF_ERROR(stack.step->OptimizerStep());
      }
      return Status::OK();
    };
    int64_t it = 0;
    SyntheticThroughput result;
    result.fused_optimizer = stack.fused != nullptr;
    const GraphedStep* graphs = stack.step->graphs();
    if (o.conv_warmup > 0) {  // as the run's set-up does it, for the one shape the probe steps on
      result.conv_warmup = WarmUpWhereItApplies(stack, {{o.batch, o.imgsz, o.imgsz}}, false, o.conv_warmup);
    }
    const auto t_warm = Clock::now();
    YC_RETURN_IF_ERROR(run(std::min(5, iterations), &it));  // CUDA set-up, allocator warm-up, autotuning if on
    SynchronizeDevice(device);
    result.warmup_seconds = Seconds(t_warm);
    const auto t0 = Clock::now();
    YC_RETURN_IF_ERROR(run(iterations, &it));
    SynchronizeDevice(device);
    const double s = Seconds(t0);
    result.images_per_second = s > 0 ? static_cast<double>(o.batch) * iterations / s : 0.0;
    result.cuda_graphs = graphs != nullptr && graphs->enabled() && graphs->replays() > 0;
    if (profile) {
      StepProfile parts(device);
      stack.step->set_profile(&parts);
      const Status profiled = run(iterations, &it);
      stack.step->set_profile(nullptr);
      YC_RETURN_IF_ERROR(profiled);
      result.profiled = true;
      for (int p = 0; p < kStepParts; ++p) {
        result.part_ms[static_cast<size_t>(p)] = parts.MillisecondsPerBatch(static_cast<StepPart>(p));
      }
    }
    return result;
  } catch (const std::exception& e) {
    return ExceptionStatus(e, "synthetic-input probe failed");
  }
}

Result<TrainLabelSample> SampleTrainLabels(const TrainOptions& o, int batches) {
  YC_ASSIGN_OR_RETURN(std::shared_ptr<Cache> shared, Cache::Open(o.data));
  const RecordSource* train = shared->split(o.train_split);
  if (train == nullptr || train->size() == 0) {
    return Status::NotFound(Status::At(o.data, "no '" + o.train_split + "' split with images"));
  }
  TrainLabelSample out;
  out.nc = static_cast<int64_t>(shared->manifest().names.size());
  Result<std::unique_ptr<Loader>> loader =
      Loader::Create(std::shared_ptr<const RecordSource>(shared, train), TrainLoaderOptions(o));
  if (!loader.ok()) return Status(loader.status()).WithContext("train loader");
  YC_RETURN_IF_ERROR((*loader)->StartEpoch(0, 0));
  std::shared_ptr<Batch> b;
  while (static_cast<int>(out.labels.size()) < batches) {
    YC_RETURN_IF_ERROR((*loader)->Next(&b));
    if (!b) break;
    YC_ASSIGN_OR_RETURN(int64_t max_boxes, DeviceFeed::CheckLabels(*b, out.nc));
    const auto n = static_cast<int64_t>(b->label_count());
    at::Tensor table = at::empty({n, 6}, at::kFloat);
    if (n > 0) std::memcpy(table.data_ptr<float>(), b->labels.data(), sizeof(float) * 6 * static_cast<size_t>(n));
    out.labels.push_back({table, max_boxes});
  }
  return out;
}

}  // namespace yc::trainer
