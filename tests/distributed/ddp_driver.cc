// One rank of a data-parallel test run: reads RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT
// like yolocache-train would (torchrun --no-python, or tests/trainer/distributed_test.cc which fork+execs
// it), trains a few SGD steps and saves what the test compares (torch::save of a tensor list).
//
// Data is defined over a fixed split of every global batch into `--parts` slices (2): a process of world
// W and rank r trains the slices p with p % W == r, so a world-1 run over all slices is the
// single-process reference for a world-2 run. Slice p of micro-batch m is the same tensor in both.
//
//   --scenario=toy     small conv net, GradReducer (+ --find-unused, --bucket-bytes, --micro=M no-sync)
//   --scenario=plain   same net, one blocking all-reduce per parameter after backward (baseline)
//   --scenario=yolo    YOLOv8n (nc 2, --imgsz, default 64) with the real DetectionLoss, loss x world size;
//                      prints ms/step and the time left in Finish() (exposed communication)
//   --scenario=peer_exit  rank 1 leaves after rendezvous; rank 0 must get an error Status, not hang
//   --scenario=collectives  DistContext helpers: AllReduce SUM/AVG/MAX/MIN, Broadcast, Barrier
//
// Exit status: 0 success, 1 a check failed or an error came back (message on stderr), 2 bad usage.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include "trainer/distributed/distributed.h"
#include "trainer/distributed/grad_reducer.h"
#include "trainer/loss/loss.h"
#include "trainer/model/detection_model.h"

namespace {

using yc::Status;
using namespace yc::trainer;

struct Args {
  std::string scenario = "toy";
  std::string out;
  std::string backend = "gloo";
  int steps = 3;
  int parts = 2;
  int slice = 2;  // samples per slice per micro-batch
  int micro = 1;  // micro-batches per optimizer step (no-sync on all but the last)
  int imgsz = 64;  // yolo scenario
  int64_t bucket_bytes = 25 << 20;
  int64_t first_bucket_bytes = 1 << 20;
  bool find_unused = false;
  int64_t timeout_ms = 60000;
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : arg.substr(eq + 1);
    try {
      if (key == "--scenario") a->scenario = val;
      else if (key == "--out") a->out = val;
      else if (key == "--backend") a->backend = val;
      else if (key == "--steps") a->steps = std::stoi(val);
      else if (key == "--parts") a->parts = std::stoi(val);
      else if (key == "--slice") a->slice = std::stoi(val);
      else if (key == "--micro") a->micro = std::stoi(val);
      else if (key == "--imgsz") a->imgsz = std::stoi(val);
      else if (key == "--bucket-bytes") a->bucket_bytes = std::stoll(val);
      else if (key == "--first-bucket-bytes") a->first_bucket_bytes = std::stoll(val);
      else if (key == "--find-unused") a->find_unused = true;
      else if (key == "--timeout-ms") a->timeout_ms = std::stoll(val);
      else return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return a->steps > 0 && a->parts > 0 && a->slice > 0 && a->micro > 0 && a->imgsz >= 32 && a->imgsz % 32 == 0;
}

int Fail(const std::string& what) {
  std::cerr << "ddp_driver: " << what << "\n";
  return 1;
}

// A tensor that depends only on (tag, step, micro, part, sample): the same in every process layout.
at::Tensor Sample(uint64_t tag, int step, int micro, int part, int sample, at::IntArrayRef shape) {
  const uint64_t seed = tag * 1000003ull + static_cast<uint64_t>(step) * 10007ull +
                        static_cast<uint64_t>(micro) * 101ull + static_cast<uint64_t>(part) * 7919ull +
                        static_cast<uint64_t>(sample);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn(shape, gen);
}

// The parts (slices of the global batch) this process trains.
std::vector<int> MyParts(const Args& a, const DistContext& ctx) {
  std::vector<int> parts;
  for (int p = 0; p < a.parts; ++p) {
    if (p % ctx.world_size() == ctx.rank()) parts.push_back(p);
  }
  return parts;
}

struct ToyNetImpl : torch::nn::Module {
  ToyNetImpl() {
    // Registered first, so it sits in the last bucket: it holds back only that one (launched by Finish).
    unused = register_module("unused", torch::nn::Linear(4, 4));  // never in any graph
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).stride(2).padding(1)));
    head = register_module("head", torch::nn::Linear(16, 4));
    // Only odd parts use it. Registered last, so its bucket launches first: on a rank that skips it,
    // no bucket can leave before Finish (launch order is fixed).
    extra = register_module("extra", torch::nn::Linear(16, 4));
  }
  // extra_mask: (B, 1) 0/1 per sample. All zero: extra is not called at all, so its gradient hook never
  // fires on this rank (the "unused here, used elsewhere" case).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& extra_mask) {
    at::Tensor h = at::silu(conv1->forward(x));
    h = at::silu(conv2->forward(h));
    at::Tensor p = h.mean({2, 3});
    at::Tensor out = head->forward(p);
    const double used = extra_mask.sum().item<double>();
    if (used == static_cast<double>(extra_mask.size(0))) {
      out = out + extra->forward(p);
    } else if (used > 0) {
      out = out + extra->forward(p) * extra_mask;
    }
    return out;
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear head{nullptr}, extra{nullptr}, unused{nullptr};
};
TORCH_MODULE(ToyNet);

struct Batch {
  at::Tensor x, y, mask;
};

Batch ToyBatch(const Args& a, const std::vector<int>& parts, int step, int micro) {
  std::vector<at::Tensor> xs, ys, ms;
  for (int part : parts) {
    for (int s = 0; s < a.slice; ++s) {
      xs.push_back(Sample(1, step, micro, part, s, {3, 12, 12}));
      ys.push_back(Sample(2, step, micro, part, s, {4}));
      ms.push_back(at::full({1}, part % 2 == 1 ? 1.0 : 0.0));
    }
  }
  return {at::stack(xs), at::stack(ys), at::stack(ms)};
}

std::vector<at::Tensor> Snapshot(const torch::nn::Module& model) {
  std::vector<at::Tensor> out;
  for (const auto& p : model.parameters()) out.push_back(p.detach().clone());
  return out;
}

// Reducer counters and how far training moved the weights (so a comparison is never of untouched ones).
at::Tensor Stats(const GradReducer& reducer, const torch::nn::Module& model, const std::vector<at::Tensor>& init) {
  double moved = 0;
  const auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) moved += (params[i].detach() - init[i]).abs().sum().item<double>();
  return at::tensor({static_cast<double>(reducer.collectives_launched()),
                     static_cast<double>(reducer.launched_during_backward()),
                     static_cast<double>(reducer.num_buckets()), moved},
                    at::kDouble);
}

// Everything the test compares: parameters, buffers, per-parameter "grad defined" flags, reducer stats.
int Save(const std::string& path, const torch::nn::Module& model, const std::vector<at::Tensor>& extra) {
  if (path.empty()) return 0;
  std::vector<at::Tensor> out;
  for (const auto& p : model.parameters()) out.push_back(p.detach().to(at::kCPU).clone());
  for (const auto& b : model.buffers()) out.push_back(b.detach().to(at::kCPU).clone());
  std::vector<double> defined;
  for (const auto& p : model.parameters()) defined.push_back(p.grad().defined() ? 1.0 : 0.0);
  out.push_back(at::tensor(defined, at::kDouble));
  for (const auto& t : extra) out.push_back(t);
  try {
    torch::save(out, path);
  } catch (const std::exception& e) {
    return Fail(path + ": " + e.what());
  }
  return 0;
}

int RunToy(const Args& a, DistContext& ctx, bool plain) {
  torch::manual_seed(1234 + ctx.rank());  // different init per rank: BroadcastModule must fix it
  ToyNet model;
  const at::Device dev = ctx.device();  // CPU for Gloo, cuda:local_rank for NCCL
  model->to(dev);
  Status st = ctx.BroadcastModule(*model);
  if (!st.ok()) return Fail(st.ToString());
  if (!a.find_unused) {
    // Defined zero grads from the start, so "unused" parameters behave the same with and without the
    // reducer (zeros everywhere) and plain per-parameter reduction has every tensor on every rank.
    for (auto& p : model->parameters()) p.mutable_grad() = at::zeros_like(p);
  }
  GradReducerOptions ro;
  ro.bucket_bytes = a.bucket_bytes;
  ro.first_bucket_bytes = a.first_bucket_bytes;
  ro.find_unused_parameters = a.find_unused;
  GradReducer reducer(*model, plain ? c10::intrusive_ptr<CommGroup>() : ctx.group(), ro);
  const std::vector<at::Tensor> init = Snapshot(*model);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const std::vector<int> parts = MyParts(a, ctx);
  for (int step = 0; step < a.steps; ++step) {
    for (int m = 0; m < a.micro; ++m) {
      const bool last = m + 1 == a.micro;
      reducer.set_require_sync(last);
      Batch b = ToyBatch(a, parts, step, m);
      at::Tensor loss = at::mse_loss(model->forward(b.x.to(dev), b.mask.to(dev)), b.y.to(dev));
      loss.backward();
      if (!last) continue;
      if (plain) {
        at::NoGradGuard ng;
        for (auto& p : model->parameters()) {
          if (!p.grad().defined()) continue;
          at::Tensor g = p.grad();
          st = ctx.AllReduce(g, ReduceKind::kAvg);
          if (!st.ok()) return Fail(st.ToString());
        }
      } else {
        st = reducer.Finish();
        if (!st.ok()) return Fail(st.ToString());
      }
      opt.step();
      if (!a.find_unused) {
        opt.zero_grad();  // 1.13 zeroes in place; 2.x sets None — re-define for the next step
        for (auto& p : model->parameters()) {
          if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
        }
      } else {
        // Keep the definedness of this step's grads visible to the test, then zero the defined ones.
        if (step + 1 < a.steps) {
          for (auto& p : model->parameters()) {
            if (p.grad().defined()) p.mutable_grad().zero_();
          }
        }
      }
    }
  }
  return Save(a.out, *model, {Stats(reducer, *model, init)});
}

int RunYolo(const Args& a, DistContext& ctx) {
  torch::manual_seed(99 + ctx.rank());
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 2));
  const at::Device dev = ctx.device();
  model->to(dev);
  model->train();
  Status st = ctx.BroadcastModule(*model);
  if (!st.ok()) return Fail(st.ToString());
  GradReducerOptions ro;
  ro.bucket_bytes = a.bucket_bytes;
  ro.first_bucket_bytes = a.first_bucket_bytes;
  GradReducer reducer(*model, ctx.group(), ro);
  const std::vector<at::Tensor> init = Snapshot(*model);
  DetectionLoss criterion(2, model->strides());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true));
  const std::vector<int> parts = MyParts(a, ctx);
  double timed_ms = 0, finish_ms = 0;
  for (int step = 0; step < a.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<at::Tensor> images, rows;
    int64_t b = 0;
    for (int part : parts) {
      for (int s = 0; s < a.slice; ++s, ++b) {
        images.push_back(Sample(3, step, 0, part, s, {3, a.imgsz, a.imgsz}).sigmoid());
        // Two boxes per image, classes 0 and 1, positions from the same stream.
        at::Tensor r = Sample(4, step, 0, part, s, {2, 4}).sigmoid() * 0.5 + 0.25;
        at::Tensor idx = at::full({2, 1}, static_cast<double>(b));
        at::Tensor cls = at::tensor({0.0, 1.0}).view({2, 1});
        rows.push_back(at::cat({idx, cls, r.narrow(1, 0, 2), r.narrow(1, 2, 2) * 0.4}, 1));
      }
    }
    at::Tensor labels = at::cat(rows).to(at::kFloat);
    auto max_boxes = MaxBoxesPerImage(labels, b, 2);
    if (!max_boxes.ok()) return Fail(max_boxes.status().ToString());
    DetectOutput out = model->forward(at::stack(images).to(dev));
    auto loss = criterion(out.feats, labels.to(dev), *max_boxes);
    if (!loss.ok()) return Fail(loss.status().ToString());
    (loss->total * static_cast<double>(ctx.world_size())).backward();  // Ultralytics' DDP scaling
    const auto t1 = std::chrono::steady_clock::now();
    st = reducer.Finish();
    if (!st.ok()) return Fail(st.ToString());
    const auto t2 = std::chrono::steady_clock::now();
    opt.step();
    opt.zero_grad();
    (void)loss->items.sum().item<double>();  // waits for the device: the step is over
    if (step > 0) {  // the first step pays one-off allocation and connection set-up
      timed_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      finish_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    }
  }
  if (a.steps > 1) {
    std::cerr << "ddp_driver: rank " << ctx.rank() << "/" << ctx.world_size() << " yolov8n imgsz " << a.imgsz
              << " local batch " << parts.size() * a.slice << ": " << timed_ms / (a.steps - 1) << " ms/step, Finish() "
              << finish_ms / (a.steps - 1) << " ms/step, " << reducer.num_buckets() << " buckets\n";
  }
  // BatchNorm running statistics are per rank (local batches); rank 0's are the ones that get saved.
  st = ctx.BroadcastModule(*model, 0, /*parameters=*/false, /*buffers=*/true);
  if (!st.ok()) return Fail(st.ToString());
  return Save(a.out, *model, {Stats(reducer, *model, init)});
}

int RunPeerExit(DistContext& ctx) {
  if (ctx.rank() == 1) std::_Exit(0);  // gone without a word
  at::Tensor t = at::ones({1024});
  Status st = ctx.AllReduce(t, ReduceKind::kSum);
  if (st.ok()) st = ctx.Barrier();
  if (st.ok()) return Fail("collective with a departed peer reported success");
  std::cerr << "ddp_driver: expected failure: " << st.ToString() << "\n";
  return 0;
}

int RunCollectives(DistContext& ctx) {
  const double r = ctx.rank(), w = ctx.world_size();
  at::Tensor sum = at::full({3}, r + 1.0);
  at::Tensor avg = at::full({2}, r * 2.0);
  at::Tensor mx = at::tensor({r, -r}, at::kDouble);
  at::Tensor mn = at::tensor({r, -r}, at::kDouble);
  at::Tensor strided = at::arange(6, at::kFloat).view({2, 3}).t() * (r + 1.0);  // non-contiguous: staged
  at::Tensor flag = at::tensor({ctx.rank() == 1 ? 1 : 0}, at::kInt);          // found_inf style
  std::vector<at::Tensor> bc{at::full({4}, r + 7.0)};
  Status st;
  for (auto [t, kind] : {std::pair<at::Tensor*, ReduceKind>{&sum, ReduceKind::kSum},
                         {&avg, ReduceKind::kAvg}, {&mx, ReduceKind::kMax}, {&mn, ReduceKind::kMin},
                         {&strided, ReduceKind::kSum}, {&flag, ReduceKind::kMax}}) {
    st = ctx.AllReduce(*t, kind);
    if (!st.ok()) return Fail(st.ToString());
  }
  at::Tensor bad = at::ones({1}, at::kInt);
  if (ctx.AllReduce(bad, ReduceKind::kAvg).ok()) return Fail("AVG of an int tensor accepted");
  st = ctx.Broadcast(bc, 1 % ctx.world_size());
  if (!st.ok()) return Fail(st.ToString());
  st = ctx.Barrier();
  if (!st.ok()) return Fail(st.ToString());
  // A model with a different structure on one rank must be refused everywhere.
  torch::nn::Linear lin(ctx.rank() == 0 ? 4 : 5, 2);
  const bool mismatch_refused = !ctx.BroadcastModule(*lin).ok();
  const double expect_sum = w * (w + 1.0) / 2.0;
  const double expect_avg = (w - 1.0);  // mean of 0, 2, 4, ... = w - 1
  bool ok = at::allclose(sum, at::full({3}, expect_sum)) && at::allclose(avg, at::full({2}, expect_avg)) &&
            mx[0].item<double>() == w - 1 && mx[1].item<double>() == 0 && mn[0].item<double>() == 0 &&
            mn[1].item<double>() == -(w - 1) &&
            at::allclose(strided, at::arange(6, at::kFloat).view({2, 3}).t() * expect_sum) &&
            flag.item<int>() == (w > 1 ? 1 : 0) && at::allclose(bc[0], at::full({4}, 7.0 + (1 % ctx.world_size()))) &&
            (mismatch_refused == (w > 1));
  if (!ok) {
    std::cerr << "sum " << sum << "\navg " << avg << "\nmax " << mx << "\nmin " << mn << "\nstrided " << strided
              << "\nflag " << flag << "\nbc " << bc[0] << "\nmismatch_refused " << mismatch_refused << "\n";
    return Fail("collective results wrong");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) {
    std::cerr << "usage: ddp_driver --scenario=toy|plain|yolo|peer_exit|collectives [--out=FILE{rank}] [--steps=N] "
                 "[--slice=N] [--micro=M] [--imgsz=N] [--bucket-bytes=B] [--first-bucket-bytes=B] [--find-unused] "
                 "[--backend=gloo|nccl] [--timeout-ms=N]\n";
    return 2;
  }
  at::set_num_threads(1);  // ranks share the CI machine's cores
  auto env = DistEnvFromEnvironment();
  if (!env.ok()) return Fail(env.status().ToString());
  auto backend = ParseDistBackend(a.backend);
  if (!backend.ok()) return Fail(backend.status().ToString());
  auto ctx = InitDistributed(*env, *backend, std::chrono::milliseconds(a.timeout_ms));
  if (!ctx.ok()) return Fail(ctx.status().ToString());
  DistContext& c = *ctx.value();
  if (a.parts % c.world_size() != 0) return Fail("--parts must be a multiple of the world size");
  // "{rank}" in --out: one file per rank under torchrun, where every rank gets the same arguments.
  if (const size_t at = a.out.find("{rank}"); at != std::string::npos) a.out.replace(at, 6, std::to_string(c.rank()));
  try {
    if (a.scenario == "toy") return RunToy(a, c, /*plain=*/false);
    if (a.scenario == "plain") return RunToy(a, c, /*plain=*/true);
    if (a.scenario == "yolo") return RunYolo(a, c);
    if (a.scenario == "peer_exit") return RunPeerExit(c);
    if (a.scenario == "collectives") return RunCollectives(c);
  } catch (const std::exception& e) {
    return Fail(std::string("exception: ") + e.what());
  }
  std::cerr << "ddp_driver: unknown scenario " << a.scenario << "\n";
  return 2;
}
