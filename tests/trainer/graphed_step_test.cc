// The train step as CUDA graphs (trainer/engine/graphed_step.h). On the CPU: when graphs apply and what
// --cuda-graphs on/auto/off do. On a GPU (skipped without one; run on the GPU host): a graphed run and an
// eager run of the same seed take the same steps.
#include "trainer/engine/graphed_step.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "trainer/engine/lr_schedule.h"
#include "trainer/engine/training_stack.h"
#include "trainer/runtime/device_feed.h"

namespace yc::trainer {
namespace {

TEST(CudaGraphs, ParsesTheModeAndNamesWhatBlocksThem) {
  EXPECT_EQ(ParseCudaGraphsMode("auto").value(), CudaGraphsMode::kAuto);
  EXPECT_EQ(ParseCudaGraphsMode("on").value(), CudaGraphsMode::kOn);
  EXPECT_EQ(ParseCudaGraphsMode("off").value(), CudaGraphsMode::kOff);
  EXPECT_FALSE(ParseCudaGraphsMode("yes").ok());
  EXPECT_EQ(CudaGraphsBlocker(at::Device(at::kCPU), true, false, false), "not a CUDA device");
  const at::Device cuda(at::kCUDA, 0);
  if (!CudaGraphsBuilt()) {
    EXPECT_NE(CudaGraphsBlocker(cuda, true, false, false).find("no CUDA"), std::string::npos);
    return;
  }
  EXPECT_EQ(CudaGraphsBlocker(cuda, true, false, false), "");
  EXPECT_NE(CudaGraphsBlocker(cuda, false, false, false).find("fused"), std::string::npos);
  EXPECT_NE(CudaGraphsBlocker(cuda, true, true, false).find("all-reduce"), std::string::npos);
  EXPECT_NE(CudaGraphsBlocker(cuda, true, false, true).find("multi_scale"), std::string::npos);
}

TEST(CudaGraphs, StatsLineSaysWhatWasCapturedAndReplayed) {
  GraphedStepStats s;
  s.forward_graphs = 9;
  s.step_captures = 1;
  s.capture_seconds = 1.234;
  s.eager_forwards = 18;
  s.replays = 4770;
  EXPECT_EQ(DescribeGraphedStepStats(s),
            "cuda graphs: 9 forward/backward graphs + 1 step graph capture in 1.23 s; 18 batches eager before their "
            "capture, 4770 replays");
  s.forward_graphs = 1;
  s.step_captures = 0;
  EXPECT_NE(DescribeGraphedStepStats(s).find("1 forward/backward graph + 0 step graph captures"), std::string::npos);
}

TrainOptions StackOptions(const std::string& device, const std::string& optimizer) {
  TrainOptions o;
  o.device = device;
  o.model = "yolov8n";
  o.batch = 4;
  o.nbs = 4;
  o.imgsz = 128;
  o.optimizer = optimizer;
  o.lr0 = 0.01;
  return o;
}

Status BuildStack(const TrainOptions& o, int64_t nc, TrainingStack* stack, std::vector<std::string>* said) {
  YC_ASSIGN_OR_RETURN(at::Device device, ParseDevice(o.device));
  YC_ASSIGN_OR_RETURN(stack->target, PrepareDevice(o, device));
  at::manual_seed(7);
  stack->model = NewModel(ParseModelName(o.model).value(), nc, stack->target);
  stack->model->train();
  YC_RETURN_IF_ERROR(BuildStackOptimizer(stack, o, nc, /*iterations=*/100000));
  YC_RETURN_IF_ERROR(BuildStep(stack, o, nc));
  return EnableCudaGraphs(stack, o, /*distributed=*/false, [said](const std::string& line) { said->push_back(line); });
}

TEST(CudaGraphs, AutoStaysEagerOnTheCpuAndOnRefusesThere) {
  std::vector<std::string> said;
  TrainOptions o = StackOptions("cpu", "SGD");
  o.amp = AmpMode::kOff;
  TrainingStack eager;
  ASSERT_TRUE(BuildStack(o, 2, &eager, &said).ok());
  EXPECT_EQ(eager.step->graphs(), nullptr);
  EXPECT_TRUE(said.empty());  // auto on the CPU: nothing to say
  o.cuda_graphs = "on";
  TrainingStack refused;
  const Status st = BuildStack(o, 2, &refused, &said);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--cuda-graphs on: not a CUDA device"), std::string::npos) << st.ToString();
  o.cuda_graphs = "sometimes";
  EXPECT_FALSE(ValidateTrainOptions(o).ok());
}

// Labels of step k: `per_image[k % n]` boxes in each of `batch` images, fixed by k.
at::Tensor StepLabels(int k, int64_t batch, int64_t boxes, int64_t nc, const at::Device& device) {
  at::manual_seed(1000 + k);
  const int64_t n = batch * boxes;
  auto bi = at::arange(batch, at::kFloat).repeat_interleave(boxes);
  auto cls = at::randint(nc, {n}, at::TensorOptions().dtype(at::kFloat));
  auto cxy = at::rand({n, 2}).mul(0.6).add(0.2);
  auto wh = at::rand({n, 2}).mul(0.3).add(0.05);
  return at::cat({bi.unsqueeze(1), cls.unsqueeze(1), cxy, wh}, 1).to(device);
}

double MaxParameterDifference(torch::nn::Module& a, torch::nn::Module& b) {
  auto pa = a.parameters();
  auto pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  return worst;
}

// 15 steps over three box-count buckets (3, 5 and 9 boxes: widths 4, 8, 16), each shape run eagerly twice,
// then captured and replayed; every step's losses and the final weights and EMA of the graphed run must
// match the eager run's. The first 9 batches are a warm-up as LrSchedule makes one: learning rates rise
// and SGD's momentum moves every step (the forward graphs replay through it; the step graph waits). cuDNN is made deterministic so that the two runs differ only by the graphs.
// AdamW runs at a small lr: it moves a weight by ~lr wherever the gradient's sign wavers, whatever its size.
void CompareGraphedWithEager(const std::string& optimizer, double lr0, int nbs) {
  at::globalContext().setDeterministicCuDNN(true);
  std::vector<std::string> said;
  TrainOptions o = StackOptions("cuda:0", optimizer);
  o.nbs = nbs;
  o.lr0 = lr0;
  o.amp = AmpMode::kOn;
  o.cuda_graphs = "off";
  const int64_t nc = 3;
  TrainingStack eager, graphed;
  ASSERT_TRUE(BuildStack(o, nc, &eager, &said).ok());
  o.cuda_graphs = "on";
  ASSERT_TRUE(BuildStack(o, nc, &graphed, &said).ok());
  ASSERT_NE(graphed.step->graphs(), nullptr);
  ASSERT_EQ(eager.step->graphs(), nullptr);
  const at::Device device = graphed.target.device;
  at::manual_seed(5);
  auto images = at::rand({o.batch, 3, o.imgsz, o.imgsz}, at::TensorOptions().device(device));
  if (graphed.target.channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
  const int64_t per_image[] = {3, 5, 9};
  for (int k = 0; k < 15; ++k) {
    const int64_t boxes = per_image[k % 3];
    const at::Tensor labels = StepLabels(k, o.batch, boxes, nc, device);
    const bool step_now = (k + 1) % eager.accumulate == 0;
    if (k < 9) {  // warm-up: batches 6-8 replay forward graphs while SGD's step still runs eagerly
      StepSettings warm;
      warm.lr = {lr0 * (9 - k) / 9.0, lr0 * (k + 1) / 9.0, lr0 * (k + 1) / 9.0};
      warm.momentum = 0.8 + 0.015 * k;
      warm.set_momentum = optimizer == "SGD";
      warm.warmup = true;
      ApplyStepSettings(*eager.optimizer, warm);
      ApplyStepSettings(*graphed.optimizer, warm);
    }
    Result<at::Tensor> a = eager.step->ForwardBackward(images, labels, boxes, step_now);
    Result<at::Tensor> b = graphed.step->ForwardBackward(images, labels, boxes, step_now);
    ASSERT_TRUE(a.ok() && b.ok());
    const at::Tensor la = a->cpu(), lb = b->cpu();  // read before the next replay refills b
    EXPECT_TRUE(at::allclose(la, lb, 2e-3, 1e-4)) << "step " << k << ": eager " << la << " graphed " << lb;
    if (step_now) {
      ASSERT_TRUE(eager.step->OptimizerStep().ok());
      ASSERT_TRUE(graphed.step->OptimizerStep().ok());
    }
  }
  const GraphedStep* g = graphed.step->graphs();
  EXPECT_TRUE(g->enabled()) << (said.empty() ? "" : said.back());
  EXPECT_EQ(g->forward_graphs(), 3u);
  EXPECT_GT(g->replays(), 0);
  EXPECT_EQ(graphed.ema->updates(), eager.ema->updates());
  EXPECT_LT(MaxParameterDifference(*eager.model, *graphed.model), 1e-3);
  EXPECT_LT(MaxParameterDifference(*eager.ema->module(), *graphed.ema->module()), 1e-3);
  at::globalContext().setDeterministicCuDNN(false);
}

TEST(CudaGraphs, GraphedStepsEqualEagerSteps) {
  if (!torch::cuda::is_available() || !CudaGraphsBuilt()) GTEST_SKIP() << "needs a CUDA device and a CUDA LibTorch";
  {
    SCOPED_TRACE("SGD");
    CompareGraphedWithEager("SGD", 0.01, /*nbs=*/4);
  }
  {
    SCOPED_TRACE("AdamW");
    CompareGraphedWithEager("AdamW", 1e-4, /*nbs=*/4);
  }
  SCOPED_TRACE("SGD, gradient accumulation over 2 batches");
  CompareGraphedWithEager("SGD", 0.01, /*nbs=*/8);
}

}  // namespace
}  // namespace yc::trainer
