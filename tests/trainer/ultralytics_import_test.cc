// Importing Ultralytics checkpoints (trainer/io/): genuine files written at test time by the Ultralytics
// source in ../shared/ultralytics (tests/trainer/fixtures/ultralytics_checkpoints.py, Debian's python3
// with torch): yolocache's forward on the imported weights equals Ultralytics' eval forward; fine-tuning
// transfers what intersect_dicts transfers, --freeze freezes model.0..N-1, resume keeps it (yolov8n and yolo11n); bad files fail
// with exit 3 naming the file. Skipped with a message when ../shared/ultralytics or python3-torch is absent.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pickle.h"
#include "trainer/io/pretrained.h"
#include "trainer/io/torch_archive.h"
#include "trainer/io/ultralytics_checkpoint.h"
#include "trainer/engine/trainer.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

// The fixture files, made once per test process; empty path + reason when they cannot be made.
struct Fixtures {
  fs::path dir;
  std::string skip;
  nlohmann::json manifest;
};

const Fixtures& GetFixtures() {
  static TempDir* tmp = new TempDir();  // lives for the process (removed by the OS's tmp cleaning otherwise)
  static Fixtures f = [] {
    Fixtures r;
    const testing::UltralyticsFixture u = testing::UltralyticsFixture::Find();
    if (!u.available) {
      r.skip = u.why;
      return r;
    }
    r.dir = tmp->path() / "fixtures";
    if (u.Run("ultralytics_checkpoints.py", {r.dir.string()}, tmp->path()) != 0) {
      ADD_FAILURE() << "fixture script failed: " << testing::ReadFile(tmp->path() / "python.log");
      r.skip = "fixture script failed";
      return r;
    }
    r.manifest = nlohmann::json::parse(testing::ReadFile(r.dir / "manifest.json"));
    return r;
  }();
  return f;
}

#define YC_REQUIRE_FIXTURES(f)                          \
  const Fixtures& f = GetFixtures();                    \
  if (!f.skip.empty()) GTEST_SKIP() << f.skip << "; skipped"

TEST(UltralyticsImport, ForwardEqualsUltralytics) {
  YC_REQUIRE_FIXTURES(f);
  at::Tensor x = testing::ReadFloatFile(f.dir / "input.bin", {2, 3, 64, 96});
  int checked = 0;
  for (const auto& [name, m] : f.manifest.items()) {
    if (name.rfind("transfer", 0) == 0) continue;
    SCOPED_TRACE(name);
    const fs::path file = f.dir / (name + ".pt");
    Result<UltralyticsCheckpoint> ck = ReadUltralyticsCheckpoint(file);
    ASSERT_TRUE(ck.ok()) << ck.status().ToString();
    EXPECT_EQ(ck->family, m["family"].get<std::string>());
    EXPECT_EQ(ck->scale, m["scale"].get<std::string>());
    EXPECT_EQ(ck->nc, m["nc"].get<int64_t>());
    EXPECT_EQ(ck->source, m["form"] == "release" ? "model" : "ema");
    EXPECT_EQ(static_cast<int64_t>(ck->state_dict.size()), m["tensors"].get<int64_t>());
    EXPECT_EQ(ck->state_dict.front().first, "model.0.conv.weight");
    ASSERT_EQ(ck->names.size(), static_cast<size_t>(ck->nc));
    EXPECT_EQ(ck->names.back(), ck->nc == 4 ? "cross" : "class" + std::to_string(ck->nc - 1));
    EXPECT_EQ(ck->stride, (std::vector<double>{8, 16, 32}));
    EXPECT_EQ(ck->imgsz, m["form"] == "training" ? 64 : 0);
    for (const auto& [n, t] : ck->state_dict) {
      if (t.is_floating_point()) {
        EXPECT_EQ(t.scalar_type(), at::kFloat) << n;
      }
    }

    Result<InferenceModel> im = LoadInferenceModel(file, at::Device(at::kCPU));
    ASSERT_TRUE(im.ok()) << im.status().ToString();
    c10::NoGradGuard no_grad;
    at::Tensor y = im->model->forward(x).pred;
    const auto shape = m["shape"].get<std::vector<int64_t>>();
    at::Tensor ref = testing::ReadFloatFile(f.dir / (name + ".out.bin"), shape);
    ASSERT_EQ(y.sizes(), ref.sizes());
    // Relative to the magnitude (boxes are pixels, scores 0-1): within 1e-3.
    const double err = ((y - ref).abs() / ref.abs().clamp_min(1.0)).max().item<double>();
    EXPECT_LT(err, 1e-3);
    // The check is meaningful: the outputs are not trivially small or constant.
    EXPECT_GT(ref.std().item<double>(), 1.0);
    ++checked;
  }
  EXPECT_EQ(checked, 19);  // yolov8n/s and yolo11n/s; nc 80, 5, 4; release and training; fp16 and fp32
}

TEST(UltralyticsImport, TransferCountsMatchIntersectDicts) {
  YC_REQUIRE_FIXTURES(f);
  for (const char* model : {"yolov8n", "yolo11n"}) {
    SCOPED_TRACE(model);
    Result<ModelWeights> w = ReadModelWeights(f.dir / (std::string(model) + "_nc80_release_fp16.pt"));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(w->format, "ultralytics");
    EXPECT_EQ(ModelNameString(w->name), model);
    DetectionModel target(ModelOptions(w->name, 4));
    TransferReport r = TransferWeights(*w, *target);
    const auto& t = f.manifest["transfer_" + std::string(model)];
    EXPECT_EQ(r.transferred, t["K"].get<int64_t>());
    EXPECT_EQ(r.total, t["N"].get<int64_t>());
    std::vector<std::string> not_kept = r.not_transferred;
    std::sort(not_kept.begin(), not_kept.end());
    EXPECT_EQ(not_kept, t["not_kept"].get<std::vector<std::string>>());
    const std::string head = w->name.family == ModelFamily::kV8 ? "model.22" : "model.23";
    const std::string compact = CompactNames(r.not_transferred);
    EXPECT_NE(compact.find(head + ".cv3.0.*"), std::string::npos) << compact;
    // Another architecture takes only what matches by name and shape (here: the stem conv).
    DetectionModel other_family(ModelOptions(
        ModelName{w->name.family == ModelFamily::kV8 ? ModelFamily::k11 : ModelFamily::kV8, ModelScale::kN}, 4));
    const TransferReport other = TransferWeights(*w, *other_family);
    EXPECT_LT(other.transferred, other.total / 2);
  }
}

// Every way a file can be wrong: a Status naming the file and the reason, never a crash; the CLI exits 3.
TEST(UltralyticsImport, BadFilesFailNamingTheFile) {
  YC_REQUIRE_FIXTURES(f);
  TempDir tmp;
  std::vector<std::pair<fs::path, std::string>> cases = {
      {f.dir / "bad_segment.pt", "not a detection checkpoint"},
      {f.dir / "bad_pose.pt", "not a detection checkpoint"},
      {f.dir / "bad_arch.pt", "unknown architecture 'yolov5n.yaml'"},
      {f.dir / "bad_nopickle.pt", "without data.pkl"},
      {f.dir / "bad_opcode.pt", "unknown or unsupported opcode 0xff"},
  };
  testing::WriteFile(tmp / "empty.pt", "");
  cases.push_back({tmp / "empty.pt", "empty file"});
  fs::create_directories(tmp / "dir.pt");
  cases.push_back({tmp / "dir.pt", "is a directory"});
  std::mt19937 rng(5);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  testing::WriteFile(tmp / "garbage.pt", garbage);
  cases.push_back({tmp / "garbage.pt", "not a torch.save zip archive"});
  testing::WriteFile(tmp / "zipgarbage.pt", "PK\3\4" + garbage);
  cases.push_back({tmp / "zipgarbage.pt", "damaged or truncated zip archive"});
  // Truncations: inside the local header, inside data.pkl, inside a storage, inside the central directory.
  const std::string good = testing::ReadFile(f.dir / "yolov8n_nc5_release_fp16.pt");
  for (size_t len : {size_t{2}, size_t{30}, size_t{200}, good.size() / 3, good.size() / 2, good.size() - 2000,
                     good.size() - 100, good.size() - 21, good.size() - 1}) {
    const fs::path p = tmp / ("truncated" + std::to_string(len) + ".pt");
    testing::WriteFile(p, good.substr(0, len));
    cases.push_back({p, ""});
  }
  for (const auto& [path, why] : cases) {
    SCOPED_TRACE(path.string());
    Result<ModelWeights> w = ReadModelWeights(path);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(ExitCodeFor(w.status()), kExitFatal) << w.status().ToString();
    EXPECT_NE(w.status().message().find(path.string()), std::string::npos) << w.status().ToString();
    if (!why.empty()) {
      EXPECT_NE(w.status().message().find(why), std::string::npos) << w.status().ToString();
    }
  }
  // The same through the tools: val, predict and train exit 3 and name the file.
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  for (const auto& [path, why] : {cases[0], cases[4], cases[7]}) {
    CliRun v = testing::RunTool("yolocache-train", tmp.path(),
                                {"val", "--weights", path.string(), "--data", cache.string(), "--device", "cpu"});
    EXPECT_EQ(v.exit_code, 3) << v.err;
    EXPECT_NE(v.err.find(path.string()), std::string::npos) << v.err;
    CliRun p = testing::RunTool("yolocache-train", tmp.path(),
                                {"predict", "--weights", path.string(), (tmp / "data" / "images" / "val").string(), "--device", "cpu",
                                 "--out", (tmp / "pred").string()});
    EXPECT_EQ(p.exit_code, 3) << p.err;
    EXPECT_NE(p.err.find(path.string()), std::string::npos) << p.err;
    CliRun t = testing::RunTool("yolocache-train", tmp.path(),
                                {"train", "--weights", path.string(), "--data", cache.string(), "--device", "cpu",
                                 "--out", (tmp / "run").string()});
    EXPECT_EQ(t.exit_code, 3) << t.err;
    EXPECT_NE(t.err.find(path.string()), std::string::npos) << t.err;
  }
}

TEST(Pickle, MalformedStreamsAreErrors) {
  // Each of these must be a Status, not a crash (ASan/UBSan builds check the memory side too).
  const std::vector<std::string> streams = {
      "",                          // no STOP
      ".",                         // STOP on an empty stack
      "\x80\x02(.",                // STOP right after MARK
      "\x80\x02h\x05.",            // BINGET of an id never PUT
      "\x80\x02X\xff\xff\xff\x7f", // BINUNICODE longer than the stream
      "\x80\x02]K\x01s.",          // SETITEM on a list
      "\x80\x02)K\x01" "a.",       // APPEND to a tuple
      "\x80\x02K\x01K\x02R.",      // REDUCE of an int
      "\x80\x02\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.",  // 72-bit integer
      "\x80\x09N.",                // protocol 9
      "\x80\x02\x95\xff\xff\xff\xff\xff\xff\xff\x7fN.",  // FRAME longer than the stream
      "\x80\x02e.",                // APPENDS without MARK
  };
  for (const std::string& s : streams) {
    Result<PickleTree> t = Unpickle(s, "test.pkl");
    EXPECT_FALSE(t.ok()) << "stream of " << s.size() << " bytes";
    if (!t.ok()) {
      EXPECT_NE(t.status().message().find("test.pkl"), std::string::npos);
    }
  }
  // A well-formed one: {'a': [1, 2.5, True, None, 'x'], 'b': (b'\x00',)} with memo use.
  static const char kOk[] =
      "\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01" "a\x94]\x94(K\x01G@\x04\x00\x00\x00\x00\x00\x00\x88N\x8c\x01xe\x8c\x01" "bC\x01\x00\x85u.";
  const std::string ok(kOk, sizeof kOk - 1);  // pickle.dumps(..., protocol=4) as CPython writes it
  Result<PickleTree> t = Unpickle(ok, "ok.pkl");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const ValueId a = t->Find(t->root(), "a");
  ASSERT_NE(a, kNoValue);
  ASSERT_EQ(t->at(a).items.size(), 5u);
  EXPECT_EQ(t->at(t->at(a).items[0]).integer, 1);
  EXPECT_EQ(t->at(t->at(a).items[1]).real, 2.5);
  EXPECT_TRUE(t->at(t->at(a).items[2]).boolean);
  EXPECT_EQ(t->at(t->at(a).items[4]).text, "x");
  const ValueId b = t->Find(t->root(), "b");
  ASSERT_NE(b, kNoValue);
  EXPECT_EQ(t->at(t->at(b).items[0]).text, std::string(1, '\0'));
}

// val and predict take an Ultralytics file as it is, with its class names.
TEST(UltralyticsImport, ValAndPredictAcceptUltralyticsWeights) {
  YC_REQUIRE_FIXTURES(f);
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 4));
  const fs::path weights = f.dir / "yolov8n_nc4_release_fp16.pt";
  CliRun v = testing::RunTool("yolocache-train", tmp.path(),
                              {"val", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu",
                               "--imgsz", "64", "--threads", "1", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  nlohmann::json j = nlohmann::json::parse(v.out);
  EXPECT_EQ(j["images"].get<int>(), 4);
  EXPECT_EQ(j["imgsz"].get<int>(), 64);
  CliRun p = testing::RunTool("yolocache-train", tmp.path(),
                              {"predict", "--weights", weights.string(), (tmp / "data" / "images" / "val").string(),
                               "--device", "cpu", "--imgsz", "64", "--conf", "0.0001", "--json", "--out",
                               (tmp / "pred").string()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json pj = nlohmann::json::parse(p.out);
  ASSERT_EQ(pj.size(), 4u);
  // Random weights at conf 1e-4 still detect something; names come from the file.
  bool named = false;
  for (const auto& img : pj) {
    for (const auto& d : img["detections"]) {
      const std::string n = d["name"].get<std::string>();
      EXPECT_TRUE(n == "circle" || n == "rectangle" || n == "triangle" || n == "cross") << n;
      named = true;
    }
  }
  EXPECT_TRUE(named);
}

// Fine-tuning through the CLI from an nc-80 Ultralytics release file onto the synth set (nc 4): the
// transferred count equals intersect_dicts', a CPU epoch runs, --freeze keeps model.0..N-1 at the imported
// values while the rest trains; then an interrupted run resumes with the freeze kept, and its best.pt
// (release weights) fine-tunes again, every tensor transferred.
void FineTuneFreezeAndResume(const Fixtures& f, const std::string& model, int freeze) {
  SCOPED_TRACE(model);
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(8, 4));
  const fs::path weights = f.dir / (model + "_nc80_release_fp16.pt");
  const fs::path run = tmp / "run";
  const std::string n_frozen = std::to_string(freeze);
  CliRun r = testing::RunTool(
      "yolocache-train", tmp.path(),
      {"train", "--weights", weights.string(), "--data", cache.string(), "--epochs", "1", "--batch", "4", "--imgsz", "64",
       "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--freeze", n_frozen, "--no-val", "--out",
       run.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto& t = f.manifest["transfer_" + model];
  const std::string expect = "Transferred " + std::to_string(t["K"].get<int>()) + "/" + std::to_string(t["N"].get<int>()) +
                             " items from pretrained weights";
  EXPECT_NE(r.out.find(expect), std::string::npos) << r.out;
  const std::string head = model == "yolov8n" ? "model.22" : "model.23";
  EXPECT_NE(r.out.find("left at init: " + head + ".cv3.0.*"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model: " + model + ", 4 classes"), std::string::npos) << r.out;  // architecture from the file

  Result<ModelWeights> src = ReadModelWeights(weights);
  ASSERT_TRUE(src.ok());
  std::map<std::string, at::Tensor> before(src->tensors.begin(), src->tensors.end());
  auto check_frozen = [&](const fs::path& ckpt) {
    Result<std::unique_ptr<CheckpointReader>> rd = CheckpointReader::Open(ckpt, at::Device(at::kCPU));
    ASSERT_TRUE(rd.ok()) << rd.status().ToString();
    EXPECT_EQ((*rd)->meta().options.freeze, freeze);
    DetectionModel trained(ModelOptions(src->name, 4));
    ASSERT_TRUE((*rd)->LoadModule("model", *trained).ok());
    int frozen_same = 0, trained_changed = 0, trained_total = 0;
    for (const auto& p : trained->named_parameters(true)) {
      auto it = before.find(p.key());
      if (it == before.end() || it->second.sizes() != p.value().sizes()) continue;
      const bool same = at::equal(it->second, p.value());
      int layer = -1;
      std::sscanf(p.key().c_str(), "model.%d.", &layer);
      if (layer >= 0 && layer < freeze) {
        EXPECT_TRUE(same) << p.key() << " is frozen but changed";
        frozen_same += same;
      } else if (p.key().find(".dfl") == std::string::npos) {
        ++trained_total;
        trained_changed += !same;
      }
    }
    EXPECT_GT(frozen_same, 50);
    EXPECT_GT(trained_changed, trained_total / 2) << "most unfrozen parameters should have moved";
  };
  check_frozen(run / "weights" / "last.pt");

  // Interrupted after epoch 1 of 2, then resumed: the options (weights, freeze) come from last.pt.
  TrainOptions o = testutil::TinyRun(cache, tmp / "run2");
  o.weights = weights.string();
  o.model.clear();
  o.freeze = freeze;
  o.val = false;
  struct StopAfterEpoch : TrainObserver {
    std::atomic<bool> stop{false};
    void OnEpochEnd(const EpochRecord&) override { stop = true; }
  } observer;
  TrainHooks hooks;
  hooks.observer = &observer;
  hooks.cancel = &observer.stop;
  Result<TrainSummary> first = Train(o, hooks);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->interrupted);
  EXPECT_EQ(first->epochs_completed, 1);
  Result<TrainOptions> resumed = ResumeOptions(tmp / "run2" / "weights" / "last.pt");
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->model, model);
  EXPECT_EQ(resumed->freeze, freeze);
  TrainHooks rh;
  rh.resume = tmp / "run2" / "weights" / "last.pt";
  Result<TrainSummary> second = Train(*resumed, rh);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->epochs_completed, 2);
  check_frozen(tmp / "run2" / "weights" / "last.pt");

  // The finished run's best.pt (release weights, no validation: the final EMA) is a starting point too.
  const fs::path best = tmp / "run2" / "weights" / "best.pt";
  ASSERT_TRUE(fs::exists(best));
  CliRun again = testing::RunTool(
      "yolocache-train", tmp.path(),
      {"train", "--weights", best.string(), "--data", cache.string(), "--epochs", "1", "--batch", "4", "--imgsz", "64",
       "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--no-val", "--out", (tmp / "run3").string()});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  const std::string all = std::to_string(t["N"].get<int>());
  EXPECT_NE(again.out.find("Transferred " + all + "/" + all + " items"), std::string::npos) << again.out;
}

TEST(UltralyticsImport, FineTuneYolov8nFreezeAndResume) {
  YC_REQUIRE_FIXTURES(f);
  FineTuneFreezeAndResume(f, "yolov8n", 10);
}

TEST(UltralyticsImport, FineTuneYolo11nFreezeAndResume) {
  YC_REQUIRE_FIXTURES(f);
  FineTuneFreezeAndResume(f, "yolo11n", 11);  // yolo11's backbone: model.0-10
}

}  // namespace
}  // namespace yc::trainer
