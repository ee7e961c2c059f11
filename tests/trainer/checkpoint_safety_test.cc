// Checkpoints read as data (issue 25): a weights file carrying TorchScript code is refused and its code
// never runs; a flipped byte fails the zip CRC-32 or our checksum; every optimizer kind's state comes
// back; --resume refuses another cache (unless told) and a run folder that now holds another run.
// Every file is crafted here; the CLI runs are under a deadline (a file whose code ran would loop forever).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include <c10/core/GradMode.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/serialize/output-archive.h>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/engine/ema.h"
#include "trainer/engine/optimizer.h"
#include "trainer/engine/trainer.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/io/torch_archive.h"
#include "trainer/loss/loss.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

constexpr auto kDeadline = std::chrono::seconds(60);

// yolocache-train with `args` in `dir`, killed at the deadline (exit_code 128 + SIGKILL then).
CliRun TrainToolWithin(const fs::path& dir, const std::vector<std::string>& args) {
  CliRun r;
  const pid_t pid = testing::SpawnTool("yolocache-train", args, dir / "stdout", dir / "stderr", dir);
  if (pid < 0) return r;
  const auto until = std::chrono::steady_clock::now() + kDeadline;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::ReadFile(dir / "stdout");
  r.err = testing::ReadFile(dir / "stderr");
  return r;
}

CheckpointMeta SmallMeta() {
  CheckpointMeta m;
  m.model_scale = "n";
  m.nc = 3;
  m.names = {"a", "b", "c"};
  m.created = "2024-05-01T12:00:00Z";
  m.run_id = "0123456789abcdef";
  return m;
}

void Step(DetectionModel& model, torch::optim::Optimizer& opt, uint64_t seed) {
  at::manual_seed(seed);
  model->train();
  opt.zero_grad();
  DetectionLoss loss(3, model->strides());
  auto out = model->forward(at::rand({2, 3, 64, 64}));
  auto labels = at::tensor({0.f, 1.f, 0.5f, 0.5f, 0.3f, 0.4f, 1.f, 2.f, 0.4f, 0.6f, 0.2f, 0.2f}).view({2, 6});
  auto l = loss(out.feats, labels, 1);
  ASSERT_TRUE(l.ok());
  l->total.backward();
  opt.step();
}

// A training checkpoint (model, EMA, SGD state) of a yolov8n with 3 classes.
fs::path WriteSmallCheckpoint(const fs::path& path) {
  at::manual_seed(3);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  OptimizerSpec spec;
  auto opt = BuildOptimizer(*model, spec, 5e-4);
  Step(model, *opt, 1);
  ModelEMA ema(*model);
  CheckpointContents c;
  c.meta = SmallMeta();
  c.model = model.get();
  c.ema = ema.module().get();
  c.optimizer = opt.get();
  EXPECT_TRUE(WriteCheckpoint(path, c).ok());
  return path;
}

// `src` copied into a new zip at `dst` (LibTorch's writer: correct CRCs), each record through `edit`.
void RewriteArchive(const fs::path& src, const fs::path& dst,
                    const std::function<void(const std::string& name, std::string* bytes)>& edit) {
  caffe2::serialize::PyTorchStreamReader in(src.string());
  caffe2::serialize::PyTorchStreamWriter out(dst.string());
  for (const std::string& name : in.getAllRecords()) {
    if (name == "version" || name == ".data/version") continue;  // the writer adds its own
    auto [ptr, n] = in.getRecord(name);
    std::string bytes(static_cast<const char*>(ptr.get()), n);
    edit(name, &bytes);
    out.writeRecord(name, bytes.data(), bytes.size());
  }
  out.writeEndOfFile();
}

// Flips one byte inside the stored (uncompressed) record `name` of the zip at `path`, in place.
void FlipStoredByte(const fs::path& path, const std::string& name, size_t at) {
  size_t offset = 0;
  {
    caffe2::serialize::PyTorchStreamReader in(path.string());
    offset = in.getRecordOffset(name) + at;
  }
  std::string bytes = testing::ReadFile(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x40);
  testing::WriteFile(path, bytes);
}

// The first data/ record of an archive (a storage).
std::string FirstStorage(const fs::path& path) {
  caffe2::serialize::PyTorchStreamReader in(path.string());
  for (const std::string& name : in.getAllRecords()) {
    if (name.rfind("data/", 0) == 0) return name;
  }
  return "";
}

// Every command that reads weights, on `weights`: each must refuse, naming the file and `why`.
void ExpectEveryCommandRefuses(const TempDir& tmp, const fs::path& weights, const fs::path& cache, const std::string& why,
                               const std::string& not_printed = "") {
  testing::WriteFile(tmp / "photo.jpg", "not looked at");
  const std::vector<std::vector<std::string>> commands = {
      {"val", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu"},
      {"predict", "--weights", weights.string(), (tmp / "photo.jpg").string(), "--device", "cpu", "--out", (tmp / "pred").string()},
      {"export", "--weights", weights.string(), "--format", "torchscript", "--out", (tmp / "x.torchscript").string()},
      {"train", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu", "--out", (tmp / "run").string()},
      {"train", "--resume", weights.string()}};
  for (const auto& args : commands) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    CliRun r = TrainToolWithin(tmp.path(), args);
    EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 3) << r.exit_code << ": " << r.out << r.err;  // a bad file
    EXPECT_NE(r.err.find(weights.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    if (!not_printed.empty()) {
      EXPECT_EQ((r.out + r.err).find(not_printed), std::string::npos) << r.out << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(tmp / "x.torchscript"));
}

// A "checkpoint" whose module class has a __setstate__: torch::jit::load would compile it and run it while
// loading (here: print a marker, then loop forever). Every command refuses the file without running it.
TEST(CheckpointSafety, TorchScriptCodeInAWeightsFileIsRefusedNeverRun) {
  TempDir tmp;
  const fs::path evil = tmp / "evil.pt";
  {
    torch::jit::Module m("__torch__.Evil");
    m.register_attribute("meta", c10::StringType::get(), c10::IValue(MetaToJson(SmallMeta()).dump()));
    m.define(R"(
  def __getstate__(self) -> str:
    return self.meta

  def __setstate__(self, state: str) -> None:
    print("yolocache-code-ran")
    self.meta = state
    i = 0
    while i >= 0:
      i = i + 1
)");
    m.save(evil.string());
  }
  ASSERT_TRUE(LooksLikeZip(evil));
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(evil, at::Device(at::kCPU));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("carries TorchScript code"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("never runs code from a weights file"), std::string::npos) << r.status().ToString();
  Result<ModelWeights> w = ReadModelWeights(evil);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(ExitCodeFor(w.status()), kExitFatal) << w.status().ToString();

  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  ExpectEveryCommandRefuses(tmp, evil, cache, "carries TorchScript code", "yolocache-code-ran");
}

// Our checkpoints are torch.save files: no code/ entries at all. One given a code/ entry that defines a
// method is refused (as files of the previous format are), although nothing of it would ever run.
TEST(CheckpointSafety, OurFilesCarryNoCodeAndAnAddedMethodIsRefused) {
  TempDir tmp;
  const fs::path good = WriteSmallCheckpoint(tmp / "last.pt");
  {
    caffe2::serialize::PyTorchStreamReader in(good.string());
    for (const std::string& name : in.getAllRecords()) EXPECT_NE(name.rfind("code/", 0), 0u) << name;
  }
  ASSERT_TRUE(CheckpointReader::Open(good, at::Device(at::kCPU)).ok());

  const fs::path patched = tmp / "patched.pt";
  {
    caffe2::serialize::PyTorchStreamReader in(good.string());
    caffe2::serialize::PyTorchStreamWriter out(patched.string());
    for (const std::string& name : in.getAllRecords()) {
      if (name == "version" || name == ".data/version") continue;  // the writer adds its own
      auto [ptr, n] = in.getRecord(name);
      out.writeRecord(name, ptr.get(), n);
    }
    const std::string code = "class Evil(Module):\n  def __setstate__(self, state: Dict[str, Any]) -> None:\n    pass\n";
    out.writeRecord("code/__torch__.py", code.data(), code.size());
    out.writeEndOfFile();
  }
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(patched, at::Device(at::kCPU));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(patched.string()), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("carries TorchScript code"), std::string::npos) << r.status().ToString();
}

// val and predict run .torchscript exports (export_test.cc); a checkpoint renamed .torchscript is not one:
// exit 3 naming it and saying what to give.
TEST(CheckpointSafety, TorchScriptFilesThatAreNotExportsAreRefusedSayingWhy) {
  TempDir tmp;
  const fs::path ts = tmp / "model.torchscript";
  fs::copy_file(WriteSmallCheckpoint(tmp / "last.pt"), ts);
  testing::WriteFile(tmp / "photo.jpg", "not looked at");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"val", "--weights", ts.string(), "--data", (tmp / "nocache").string(), "--device", "cpu"},
        std::vector<std::string>{"predict", "--weights", ts.string(), (tmp / "photo.jpg").string(), "--device", "cpu",
                                 "--out", (tmp / "pred").string()}}) {
    CliRun r = TrainToolWithin(tmp.path(), args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find(ts.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(".torchscript written by export"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(".pt"), std::string::npos) << r.err;
  }
}

// A flipped byte in a stored tensor: the zip's CRC-32 finds it (LibTorch's reader does not check it).
TEST(CheckpointSafety, FlippedWeightByteFailsTheZipCrc) {
  TempDir tmp;
  const fs::path ckpt = WriteSmallCheckpoint(tmp / "flipped.pt");
  const std::string storage = FirstStorage(ckpt);
  ASSERT_FALSE(storage.empty());
  FlipStoredByte(ckpt, storage, 1);
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(ckpt, at::Device(at::kCPU));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(ckpt.string()), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("CRC-32"), std::string::npos) << r.status().ToString();

  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  ExpectEveryCommandRefuses(tmp, ckpt, cache, "CRC-32");
}

// The same for a torch.save archive (what Ultralytics writes) read through TorchArchive: a pickled tensor
// whose storage has one flipped byte.
TEST(CheckpointSafety, FlippedStorageByteOfATorchSaveArchiveFailsTheCrc) {
  TempDir tmp;
  // torch.save(torch.ones(4)) by hand, protocol 2: _rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', 4),
  // 0, (4,), (1,), False, OrderedDict())
  std::string pickle;
  auto op = [&pickle](std::initializer_list<int> bytes) {
    for (int b : bytes) pickle.push_back(static_cast<char>(b));
  };
  auto text = [&pickle](const std::string& s) { pickle += s; };
  auto str = [&](const std::string& s) {
    op({'X', static_cast<int>(s.size()), 0, 0, 0});
    text(s);
  };
  op({0x80, 2});
  text("ctorch._utils\n_rebuild_tensor_v2\n");
  op({'(', '('});
  str("storage");
  text("ctorch\nFloatStorage\n");
  str("0");
  str("cpu");
  op({'K', 4, 't', 'Q', 'K', 0, 'K', 4, 0x85, 'K', 1, 0x85, 0x89});
  text("ccollections\nOrderedDict\n");
  op({')', 'R', 't', 'R', '.'});
  const std::string fixed = pickle;
  float ones[4] = {1, 1, 1, 1};
  const fs::path path = tmp / "tensor.pt";
  {
    caffe2::serialize::PyTorchStreamWriter w(path.string());
    w.writeRecord("data.pkl", fixed.data(), fixed.size());
    w.writeRecord("data/0", ones, sizeof ones);
    w.writeEndOfFile();
  }
  {
    Result<std::unique_ptr<TorchArchive>> a = TorchArchive::Open(path);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    Result<at::Tensor> t = (*a)->Tensor((*a)->tree().root());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE(at::equal(*t, at::ones({4})));
  }
  FlipStoredByte(path, "data/0", 2);
  Result<std::unique_ptr<TorchArchive>> a = TorchArchive::Open(path);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<at::Tensor> t = (*a)->Tensor((*a)->tree().root());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("CRC-32"), std::string::npos) << t.status().ToString();
  EXPECT_NE(t.status().message().find(path.string()), std::string::npos) << t.status().ToString();
  // data.pkl too.
  FlipStoredByte(path, "data/0", 2);  // back
  FlipStoredByte(path, "data.pkl", 5);
  a = TorchArchive::Open(path);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("CRC-32"), std::string::npos) << a.status().ToString();
}

// A tensor changed and the zip rewritten with correct CRCs: only our checksum finds it.
TEST(CheckpointSafety, EditedTensorWithValidCrcsFailsTheChecksum) {
  TempDir tmp;
  const fs::path good = WriteSmallCheckpoint(tmp / "last.pt");
  const std::string storage = FirstStorage(good);
  const fs::path edited = tmp / "edited.pt";
  RewriteArchive(good, edited, [&](const std::string& name, std::string* bytes) {
    if (name == storage) (*bytes)[1] = static_cast<char>((*bytes)[1] ^ 0x40);
  });
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(edited, at::Device(at::kCPU));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(edited.string()), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("checksum mismatch"), std::string::npos) << r.status().ToString();
  // The unedited rewrite still loads: the checksum is of the contents, not of the zip.
  const fs::path same = tmp / "same.pt";
  RewriteArchive(good, same, [](const std::string&, std::string*) {});
  ASSERT_TRUE(CheckpointReader::Open(same, at::Device(at::kCPU)).ok());

  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  ExpectEveryCommandRefuses(tmp, edited, cache, "checksum");
}

// A checkpoint written before the checksum (the old writer's records, no "checksum") still loads, with
// its CRCs checked.
TEST(CheckpointSafety, FilesWithoutAChecksumStillLoadWithTheirCrcsChecked) {
  TempDir tmp;
  at::manual_seed(4);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  const fs::path old = tmp / "old.pt";
  {
    torch::serialize::OutputArchive archive;
    std::vector<at::Tensor> tensors;
    nlohmann::json names = nlohmann::json::array();
    for (const auto& p : model->named_parameters(true)) names.push_back(p.key()), tensors.push_back(p.value().detach().clone());
    for (const auto& b : model->named_buffers(true)) names.push_back(b.key()), tensors.push_back(b.value().detach().clone());
    archive.write("model", c10::IValue(tensors));
    CheckpointMeta meta = SmallMeta();
    meta.run_id.clear();
    nlohmann::json j = MetaToJson(meta);
    j.erase("run_id");
    j.erase("data_identity");
    j["tensors"] = {{"model", names}};
    archive.write("meta", c10::IValue(j.dump()));
    archive.save_to(old.string());
  }
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(old, at::Device(at::kCPU));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Result<DetectionModel> back = (*r)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(at::equal((*back)->named_parameters(true)["model.0.conv.weight"], model->named_parameters(true)["model.0.conv.weight"]));
  FlipStoredByte(old, FirstStorage(old), 0);
  r = CheckpointReader::Open(old, at::Device(at::kCPU));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("CRC-32"), std::string::npos) << r.status().ToString();
}

// Every optimizer kind's state and options come back from the file: the next step is identical.
TEST(CheckpointSafety, EveryOptimizerKindRoundTripsExactly) {
  for (OptimizerKind kind : {OptimizerKind::kSGD, OptimizerKind::kAdam, OptimizerKind::kAdamW, OptimizerKind::kRMSProp,
                             OptimizerKind::kNAdam, OptimizerKind::kRAdam, OptimizerKind::kAdamax}) {
    SCOPED_TRACE(OptimizerName(kind));
    TempDir tmp;
    at::manual_seed(5);
    DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
    OptimizerSpec spec;
    spec.kind = kind;
    spec.lr = 0.001;
    auto opt = BuildOptimizer(*model, spec, 5e-4);
    Step(model, *opt, 1);
    Step(model, *opt, 2);
    opt->param_groups()[0].options().set_lr(0.0042);  // a schedule's value, restored with the rest
    CheckpointContents c;
    c.meta = SmallMeta();
    c.model = model.get();
    c.optimizer = opt.get();
    ASSERT_TRUE(WriteCheckpoint(tmp / "last.pt", c).ok());

    Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(tmp / "last.pt", at::Device(at::kCPU));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    at::manual_seed(99);
    DetectionModel model2(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
    ASSERT_TRUE((*r)->LoadModule("model", *model2).ok());
    auto opt2 = BuildOptimizer(*model2, spec, 5e-4);
    ASSERT_TRUE((*r)->LoadOptimizer(*opt2).ok());
    EXPECT_DOUBLE_EQ(opt2->param_groups()[0].options().get_lr(), 0.0042);
    EXPECT_EQ(opt2->state().size(), opt->state().size());
    Step(model, *opt, 3);
    Step(model2, *opt2, 3);
    auto a = model->named_parameters(true), b = model2->named_parameters(true);
    for (const auto& p : a) ASSERT_TRUE(at::equal(p.value(), b[p.key()])) << p.key();

    // Another model's optimizer does not take it.
    DetectionModel other(ModelOptions(ModelFamily::kV8, ModelScale::kN, 5));
    auto opt3 = BuildOptimizer(*other, spec, 5e-4);
    Status st = (*r)->LoadOptimizer(*opt3);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  }
}

// Sets the cancel flag after `batch` batches of the first epoch, as Ctrl-C would.
class StopAfter final : public TrainObserver {
 public:
  StopAfter(std::atomic<bool>* flag, size_t batch) : flag_(flag), batch_(batch) {}
  void OnTrainProgress(const BatchProgress& p) override {
    if (p.batch == batch_) flag_->store(true);
  }

 private:
  std::atomic<bool>* flag_;
  size_t batch_;
};

// An interrupted run's last.pt, in <dir>/<name>, trained on `cache`.
fs::path InterruptedRun(const fs::path& cache, const fs::path& out) {
  TrainOptions o = testutil::TinyRun(cache, out);
  o.val = false;
  o.plots = false;
  std::atomic<bool> cancel{false};
  StopAfter stop(&cancel, 1);
  Result<TrainSummary> s = Train(o, TrainHooks{&stop, &cancel, {}, {}});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s.ok() && s->interrupted);
  return out / "weights" / "last.pt";
}

// --resume with another cache is refused naming both (the saved batch index belongs to another sampling
// plan), unless --resume-other-data says so; through the CLI, exit 2.
TEST(CheckpointSafety, ResumeRefusesAnotherCacheUnlessTold) {
  TempDir tmp;
  const fs::path a = testutil::MakeSynthCache(tmp / "a", testutil::Images(8, 2));
  testutil::SynthCacheSpec other = testutil::Images(8, 2);
  other.seed = 5;
  const fs::path b = testutil::MakeSynthCache(tmp / "b", other);
  const fs::path last = InterruptedRun(a, tmp / "run");
  {
    Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(last, at::Device(at::kCPU));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)->meta().data_identity.contains("manifest_checksum")) << (*r)->meta().data_identity.dump();
    EXPECT_EQ((*r)->meta().data_identity["records"], 10);
    EXPECT_EQ((*r)->meta().run_id.size(), 16u);
  }
  CliRun refused = TrainToolWithin(tmp.path(), {"train", "--resume", last.string(), "--data", b.string(), "--device", "cpu"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(a.string()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(b.string()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--resume-other-data"), std::string::npos) << refused.err;

  Result<TrainOptions> ro = ResumeOptions(last);
  ASSERT_TRUE(ro.ok());
  ro->data = b.string();
  TrainHooks hooks;
  hooks.resume = last;
  hooks.resume_other_data = true;
  Result<TrainSummary> s = Train(*ro, hooks);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->epochs_completed, ro->epochs);
}

// Collects the trainer's messages.
class Messages final : public TrainObserver {
 public:
  void OnMessage(const std::string& line) override { text += line + "\n"; }
  std::string text;
};

// A checkpoint written before checkpoints recorded their cache (no data_identity, no checksum): resumed on
// another cache with a warning, as before.
TEST(CheckpointSafety, ResumeOfACheckpointWithoutCacheIdentityWarnsAndContinues) {
  TempDir tmp;
  const fs::path a = testutil::MakeSynthCache(tmp / "a", testutil::Images(8, 2));
  testutil::SynthCacheSpec other = testutil::Images(8, 2);
  other.seed = 5;
  const fs::path b = testutil::MakeSynthCache(tmp / "b", other);
  const fs::path last = InterruptedRun(a, tmp / "run");
  const fs::path old = tmp / "old.pt";
  // Same-length renames in data.pkl: the meta's data_identity and the checksum record are no longer found.
  RewriteArchive(last, old, [](const std::string& name, std::string* bytes) {
    if (name != "data.pkl") return;
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"\"data_identity\"", "\"data_identitx\""},
                                   std::pair<std::string, std::string>{"checksum", "checksuX"}}) {
      for (size_t at = bytes->find(from); at != std::string::npos; at = bytes->find(from, at + 1)) bytes->replace(at, from.size(), to);
    }
  });
  fs::rename(old, last);
  {
    Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(last, at::Device(at::kCPU));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)->meta().data_identity.empty());
  }
  Result<TrainOptions> ro = ResumeOptions(last);
  ASSERT_TRUE(ro.ok());
  ro->data = b.string();
  Messages messages;
  TrainHooks hooks;
  hooks.observer = &messages;
  hooks.resume = last;
  Result<TrainSummary> s = Train(*ro, hooks);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_NE(messages.text.find("cannot check that --data " + b.string()), std::string::npos) << messages.text;
}

// A copied last.pt resumed into its stored run folder, which now holds another run: refused naming both
// paths (that run's last.pt and results.csv would be replaced); --out continues it elsewhere.
TEST(CheckpointSafety, ResumeRefusesARunFolderHoldingAnotherRun) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp / "data", testutil::Images(8, 2));
  const fs::path copy = tmp / "saved.pt";
  fs::copy_file(InterruptedRun(cache, tmp / "run"), copy);
  // Another run takes the folder.
  fs::remove_all(tmp / "run");
  InterruptedRun(cache, tmp / "run");
  const std::string theirs = testing::ReadFile(tmp / "run" / "weights" / "last.pt");

  CliRun r = TrainToolWithin(tmp.path(), {"train", "--resume", copy.string(), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(copy.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((tmp / "run").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadFile(tmp / "run" / "weights" / "last.pt"), theirs);

  CliRun elsewhere = TrainToolWithin(tmp.path(), {"train", "--resume", copy.string(), "--device", "cpu", "--threads", "1",
                                                  "--torch-threads", "1", "--out", (tmp / "moved").string()});
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.out << elsewhere.err;
  EXPECT_TRUE(fs::exists(tmp / "moved" / "weights" / "last.pt"));
  EXPECT_EQ(testing::ReadFile(tmp / "run" / "weights" / "last.pt"), theirs);

  // The run's own folder (the checkpoint in it, or a copy of it while the folder still holds this run) is fine.
  CliRun own = TrainToolWithin(tmp.path(), {"train", "--resume", (tmp / "run" / "weights" / "last.pt").string(), "--device",
                                            "cpu", "--threads", "1", "--torch-threads", "1"});
  EXPECT_EQ(own.exit_code, 0) << own.out << own.err;
}

}  // namespace
}  // namespace yc::trainer
