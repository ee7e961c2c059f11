// The pieces around the loop: options JSON, results.csv/png, the CPU device feed, device parsing,
// the NVML monitor's fallbacks, validation ground truth and an end-to-end validator run.
#include <fstream>

#include <gtest/gtest.h>

#include "libcache/cache.h"
#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/gpu_monitor.h"
#include "trainer/engine/results_log.h"
#include "trainer/config/train_options.h"
#include "trainer/eval/validator.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(TrainOptions, JsonRoundTripAndErrors) {
  TrainOptions o;
  o.data = "/data/cache";
  o.model = "yolov8s";
  o.epochs = 7;
  o.lr0 = 0.003;
  o.cos_lr = true;
  o.amp = AmpMode::kOn;
  o.amp_dtype = AmpDtype::kBFloat16;
  o.hyp.mosaic = 0.5;
  o.hyp.close_mosaic = 2;
  o.seed = 1234567890123ull;
  o.fraction = 0.25;
  o.single_cls = true;
  o.classes = {0, 7};
  o.hyp.bgr = 0.125;
  auto j = ToJson(o);
  EXPECT_EQ(j["classes"], nlohmann::ordered_json::array({0, 7}));
  EXPECT_EQ(j["single_cls"], true);
  EXPECT_EQ(j["bgr"], 0.125);
  EXPECT_EQ(j["model"], "yolov8s");
  EXPECT_EQ(j["amp"], "on");
  EXPECT_EQ(j["amp_dtype"], "bf16");
  EXPECT_EQ(j["close_mosaic"], 2);
  Result<TrainOptions> back = TrainOptionsFromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), j);

  // Missing keys keep defaults, unknown keys are ignored, wrong types name the key.
  back = TrainOptionsFromJson({{"epochs", 3}, {"future_option", true}});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->epochs, 3);
  EXPECT_EQ(back->batch, TrainOptions().batch);
  back = TrainOptionsFromJson({{"batch", 2.5}});
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("batch"), std::string::npos);
  EXPECT_FALSE(TrainOptionsFromJson({{"amp", "sometimes"}}).ok());
  EXPECT_FALSE(TrainOptionsFromJson({{"lr0", "fast"}}).ok());
  EXPECT_FALSE(TrainOptionsFromJson({{"classes", {0, -1}}}).ok());
  EXPECT_FALSE(TrainOptionsFromJson({{"classes", 3}}).ok());
  EXPECT_FALSE(TrainOptionsFromJson(nlohmann::json::array()).ok());
}

TEST(TrainOptions, Validation) {
  TrainOptions o;
  o.data = "cache";
  EXPECT_TRUE(ValidateTrainOptions(o).ok());
  auto check = [&](auto mutate, const std::string& flag) {
    TrainOptions b = o;
    mutate(b);
    Status st = ValidateTrainOptions(b);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << flag;
    EXPECT_NE(st.message().find(flag), std::string::npos) << st.message();
  };
  check([](TrainOptions& b) { b.imgsz = 100; }, "--imgsz");
  check([](TrainOptions& b) { b.epochs = 0; }, "--epochs");
  check([](TrainOptions& b) { b.batch = 0; }, "--batch");
  check([](TrainOptions& b) { b.lr0 = 0; }, "--lr0");
  check([](TrainOptions& b) { b.momentum = 1.5; }, "--momentum");
  check([](TrainOptions& b) { b.data.clear(); }, "--data");
  check([](TrainOptions& b) { b.patience = -1; }, "--patience");
  check([](TrainOptions& b) { b.fraction = 0; }, "--fraction 0.0: must be in (0, 1]");
  check([](TrainOptions& b) { b.fraction = 1.5; }, "--fraction 1.5");
  check([](TrainOptions& b) { b.hyp.bgr = 1.5; }, "bgr");
  TrainOptions b = o;
  b.hyp.mosaic = 2.0;  // checked by the loader's own validation
  EXPECT_FALSE(ValidateTrainOptions(b).ok());
  EXPECT_TRUE(ParseAmpDtype("fp16").ok());
  EXPECT_FALSE(ParseAmpDtype("fp8").ok());
}

TEST(ResultsLog, CsvRowsAndResume) {
  TempDir tmp;
  const fs::path csv = tmp / "run" / "results.csv";
  auto log = ResultsLog::Open(csv, -1);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (int e = 1; e <= 4; ++e) {
    EpochRecord r;
    r.epoch = e;
    r.time = 10.0 * e;
    r.train_loss = {3.0 / e, 2.0 / e, 1.0 / e};
    r.validated = e % 2 == 0;
    r.precision = 0.1 * e;
    r.recall = 0.2 * e;
    r.map50 = 0.05 * e;
    r.map50_95 = 0.02 * e;
    r.has_val_loss = r.validated;
    r.val_loss = {1, 2, 3};
    r.lr = {0.01, 0.02, 0.03};
    ASSERT_TRUE((*log)->Append(r).ok());
  }
  const std::string text = testing::ReadFile(csv);
  EXPECT_EQ(text.substr(0, text.find('\n')), ResultsCsvHeader());
  EXPECT_NE(text.find("\n1,10,3,2,1,,,,,,,,0.01,0.02,0.03\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n2,20,1.5,1,0.5,0.2,0.4,0.1,0.04,1,2,3,0.01,0.02,0.03\n"), std::string::npos) << text;
  auto rows = ReadResultsCsv(csv);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_FALSE((*rows)[0].validated);
  EXPECT_TRUE((*rows)[1].validated);
  EXPECT_DOUBLE_EQ((*rows)[3].map50, 0.2);

  // Resuming from a checkpoint of epoch 2 drops rows 3 and 4.
  auto resumed = ResultsLog::Open(csv, 2);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ((*resumed)->records().size(), 2u);
  rows = ReadResultsCsv(csv);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u);

  // The plot, when this build has a PNG encoder.
  Status st = WriteResultsPlot(*rows, tmp / "run" / "results.png");
  if (std::string(ResultsPlotEncoder()) == "none") {
    EXPECT_EQ(st.code(), Status::Code::kUnsupported);
  } else {
    ASSERT_TRUE(st.ok()) << st.ToString();
    const std::string png = testing::ReadFile(tmp / "run" / "results.png");
    ASSERT_GT(png.size(), 1000u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  }
  // Malformed files are data errors naming the line.
  testing::WriteFile(tmp / "bad.csv", ResultsCsvHeader() + "\n1,2,3\n");
  auto bad = ReadResultsCsv(tmp / "bad.csv");
  EXPECT_EQ(bad.status().code(), Status::Code::kDataError);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos);
}

TEST(DeviceFeed, CpuBatchesBecomeFloatTensors) {
  Batch b;
  std::vector<uint8_t> pixels(2 * 3 * 4 * 5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 2);
  b.images = pixels.data();
  b.size = 2;
  b.height = 4;
  b.width = 5;
  b.labels = {0, 1, 0.5f, 0.5f, 0.2f, 0.2f, 1, 0, 0.3f, 0.3f, 0.1f, 0.1f, 1, 2, 0.6f, 0.6f, 0.1f, 0.1f};
  b.samples.resize(2);
  b.samples[1].source = "images/val/b.jpg";
  auto batch = std::make_shared<Batch>(b);
  DeviceFeed feed(at::Device(at::kCPU), /*channels_last=*/true, 3);
  EXPECT_EQ(feed.layout(), ImageLayout::kNCHW);  // channels_last is a CUDA-only layout
  ASSERT_TRUE(feed.Stage(batch).ok());
  EXPECT_EQ(feed.staged(), 1u);
  auto db = feed.Take();
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(feed.staged(), 0u);
  EXPECT_EQ(db->images.sizes(), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(db->images.scalar_type(), at::kFloat);
  EXPECT_FLOAT_EQ(db->images.flatten()[7].item<float>(), 14.0f / 255.0f);
  EXPECT_EQ(db->labels.sizes(), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(db->max_boxes, 2);
  EXPECT_FALSE(feed.Take().ok());  // nothing staged

  // A class the model does not have is a data error naming the image.
  b.labels[13] = 3;
  Status st = feed.Stage(std::make_shared<Batch>(b));
  EXPECT_EQ(st.code(), Status::Code::kDataError);
  EXPECT_NE(st.message().find("images/val/b.jpg"), std::string::npos) << st.message();
  b.labels[13] = 2;
  b.layout = ImageLayout::kNHWC;
  EXPECT_EQ(feed.Stage(std::make_shared<Batch>(b)).code(), Status::Code::kInvalidArgument);
}

TEST(Device, ParsingAndCpuBuild) {
  auto cpu = ParseDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(cpu->is_cpu());
  auto dflt = ParseDevice("");
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(dflt->is_cuda(), CudaAvailable());
  EXPECT_FALSE(ParseDevice("tpu").ok());
  EXPECT_FALSE(ParseDevice("cuda:x").ok());
  if (!CudaAvailable()) {
    auto cuda = ParseDevice("cuda:0");
    EXPECT_EQ(cuda.status().code(), Status::Code::kInvalidArgument);
    EXPECT_FALSE(ParseDevice("0").ok());
  }
  EXPECT_EQ(DeviceMemoryReservedBytes(at::Device(at::kCPU)), 0.0);
  EXPECT_NE(DeviceDescription(at::Device(at::kCPU)).find("cpu"), std::string::npos);
  auto alloc = MakeBatchAllocator(at::Device(at::kCPU));
  void* p = alloc->Allocate(1 << 20);
  ASSERT_NE(p, nullptr);
  alloc->Free(p, 1 << 20);
}

TEST(GpuMonitor, IndexMappingAndFallback) {
  EXPECT_EQ(GpuMonitor::NvmlIndexFor(0, nullptr), 0);
  EXPECT_EQ(GpuMonitor::NvmlIndexFor(1, nullptr), 1);
  EXPECT_EQ(GpuMonitor::NvmlIndexFor(0, "3,1"), 3);
  EXPECT_EQ(GpuMonitor::NvmlIndexFor(1, " 3 , 1 "), 1);
  EXPECT_EQ(GpuMonitor::NvmlIndexFor(2, "3,1"), -1);
  EXPECT_EQ(GpuMonitor::NvmlIndexFor(0, "GPU-8d1c2f3e"), -1);
  GpuMonitor m(0, 20);
  m.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  m.Stop();
  if (!m.available()) {
    EXPECT_EQ(m.Describe(), "n/a");
    EXPECT_LT(m.MeanBusyPercent(), 0);
    EXPECT_FALSE(m.unavailable_reason().empty());
  } else {
    EXPECT_GE(m.MeanBusyPercent(), 0);
    EXPECT_LE(m.MeanBusyPercent(), 100);
  }
}

TEST(Validator, GroundTruthInLetterboxedPixels) {
  Batch b;
  b.size = 2;
  b.height = 64;
  b.width = 128;
  b.labels = {1, 2, 0.5f, 0.5f, 0.25f, 0.5f, 0, 1, 0.25f, 0.25f, 0.1f, 0.1f};
  at::Tensor boxes, cls;
  BatchGroundTruth(b, 1, &boxes, &cls);
  ASSERT_EQ(boxes.size(0), 1);
  EXPECT_TRUE(at::allclose(boxes[0], at::tensor({48.f, 16.f, 80.f, 48.f})));
  EXPECT_EQ(cls[0].item<float>(), 2.0f);
  BatchGroundTruth(b, 0, &boxes, &cls);
  EXPECT_TRUE(at::allclose(boxes[0], at::tensor({25.6f, 12.8f, 38.4f, 19.2f})));
}

TEST(Validator, RunsOverTheWholeSplit) {
  TempDir tmp;
  const testutil::SynthCacheSpec spec = testutil::Images(0, 10);
  const fs::path dir = testutil::MakeSynthCache(tmp.path(), spec);
  auto cache = Cache::Open(dir);
  ASSERT_TRUE(cache.ok());
  std::shared_ptr<Cache> shared(std::move(*cache));
  ValOptions vo;
  vo.batch = 4;
  vo.imgsz = 64;
  vo.threads = 1;
  auto v = Validator::Create(std::shared_ptr<const RecordSource>(shared, shared->split("val")), vo,
                             at::Device(at::kCPU), 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)->images(), 10u);
  EXPECT_EQ((*v)->batches(), 3u);
  at::manual_seed(0);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 4));
  model->eval();
  size_t calls = 0;
  auto r = (*v)->Run(*model, [&](size_t done, size_t total) {
    ++calls;
    EXPECT_EQ(total, 3u);
    EXPECT_EQ(done, calls);
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(calls, 3u);
  EXPECT_EQ(r->images, 10);
  EXPECT_EQ(r->metrics.images, 10);
  EXPECT_GT(r->metrics.instances, 0);
  ASSERT_TRUE(r->has_loss);
  for (double l : r->loss) EXPECT_TRUE(std::isfinite(l) && l > 0);
  auto j = MetricsToJson(r->metrics, {"a", "b", "c", "d"});
  for (const char* key : {"precision", "recall", "mAP50", "mAP50-95", "fitness", "per_class"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  DetectionModel wrong(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  wrong->eval();
  EXPECT_EQ((*v)->Run(*wrong).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace yc::trainer
