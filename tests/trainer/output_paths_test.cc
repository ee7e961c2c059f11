// Issue 25's output-path rule for yolocache-train: export, predict, train's run folder and the
// --save-every/--keep rotation never write over, or delete, a file the command did not create. Each
// defect reproduced from scratch with the built binary, under a deadline; the inputs are compared byte
// for byte afterwards. One short training run is shared by the suite (it is also the rotation case).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#if YOLOCACHE_TEST_VIDEOIO
#include <opencv2/videoio.hpp>
#endif

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/eval/predictor.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
using Clock = std::chrono::steady_clock;

// Waits for `pid` at most `limit`; kills it then (a hang fails the test, never blocks CI).
int WaitWithin(pid_t pid, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "yolocache-train did not return within " << limit.count() << " s";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

CliRun Train(const TempDir& tmp, const std::vector<std::string>& args, std::chrono::seconds limit = std::chrono::seconds(120)) {
  CliRun r;
  const pid_t pid = testing::SpawnTool("yolocache-train", args, tmp / "stdout", tmp / "stderr", tmp.path());
  if (pid < 0) return r;
  r.exit_code = WaitWithin(pid, limit);
  r.out = ReadFile(tmp / "stdout");
  r.err = ReadFile(tmp / "stderr");
  return r;
}

bool IsFifo(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// 2 epochs with --save-every 1 --keep 1 into a run folder that already holds another run's epoch7.pt
// and a stale epoch99.pt: rotation used to delete both, and then this run's own newest file.
class OutputPaths : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    cache_ = testutil::MakeSynthCache(tmp_->path(), testutil::Images(8, 4));
    fs::create_directories(Run() / "weights");
    WriteFile(Run() / "weights" / "epoch7.pt", "another run's epoch 7");
    WriteFile(Run() / "weights" / "epoch99.pt", "a stale epoch 99");
    train_ = Train(*tmp_, {"train", "--data", cache_.string(), "--model", "yolov8n", "--imgsz", "64", "--epochs", "2",
                           "--batch", "4", "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--no-plots",
                           "--save-every", "1", "--keep", "1", "--out", Run().string()},
                   std::chrono::seconds(600));
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static fs::path Run() { return tmp_->path() / "run"; }
  static fs::path Weights() { return Run() / "weights" / "best.pt"; }
  // One of the dataset's images, copied to `to`.
  static void CopyImage(int index, const fs::path& to) {
    std::vector<fs::path> images;
    for (const auto& e : fs::directory_iterator(tmp_->path() / "data" / "images" / "val")) images.push_back(e.path());
    std::sort(images.begin(), images.end());
    fs::create_directories(to.parent_path());
    fs::copy_file(images.at(static_cast<size_t>(index)), to, fs::copy_options::overwrite_existing);
  }

  static TempDir* tmp_;
  static fs::path cache_;
  static CliRun train_;
};
TempDir* OutputPaths::tmp_ = nullptr;
fs::path OutputPaths::cache_;
CliRun OutputPaths::train_;

TEST_F(OutputPaths, RotationDeletesOnlyTheEpochFilesThisRunWrote) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  EXPECT_FALSE(fs::exists(Run() / "weights" / "epoch1.pt"));  // this run's, rotated out
  EXPECT_TRUE(fs::exists(Run() / "weights" / "epoch2.pt"));   // this run's newest, kept
  EXPECT_EQ(ReadFile(Run() / "weights" / "epoch7.pt"), "another run's epoch 7");
  EXPECT_EQ(ReadFile(Run() / "weights" / "epoch99.pt"), "a stale epoch 99");
}

TEST_F(OutputPaths, ARunFolderInsideTheDatasetOrTheCacheIsRefusedBeforeAnythingIsWritten) {
  const fs::path in_images = tmp_->path() / "data" / "images" / "train" / "run";
  const fs::path in_labels = tmp_->path() / "data" / "labels" / "train" / "run";
  for (const std::vector<std::string>& where :
       {std::vector<std::string>{"--out", in_images.string()}, {"--out", in_labels.string()},
        {"--project", (tmp_->path() / "data").string(), "--name", "run"},
        {"--project", cache_.string(), "--name", "run"}}) {
    std::vector<std::string> args = {"train", "--data", cache_.string(), "--model", "yolov8n", "--imgsz", "64", "--epochs", "1",
                                     "--batch", "4", "--device", "cpu", "--threads", "1", "--torch-threads", "1"};
    args.insert(args.end(), where.begin(), where.end());
    CliRun r = Train(*tmp_, args);
    EXPECT_EQ(r.exit_code, 2) << where[1] << ": " << r.err;
    EXPECT_NE(r.err.find("is inside"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(in_images));
  EXPECT_FALSE(fs::exists(in_labels));
  EXPECT_FALSE(fs::exists(tmp_->path() / "data" / "run"));
  EXPECT_FALSE(fs::exists(cache_ / "run"));
}

TEST_F(OutputPaths, ExportNeverWritesOverTheWeightsItReads) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const std::string weights = ReadFile(Weights());
  CliRun same = Train(*tmp_, {"export", "--weights", Weights().string(), "--format", "torchscript", "--out", Weights().string()});
  EXPECT_EQ(same.exit_code, 2) << same.err;
  EXPECT_NE(same.err.find("is the input " + Weights().string()), std::string::npos) << same.err;
  // model.torchscript exported to TorchScript: the default output is the input itself.
  const fs::path ts = tmp_->path() / "model.torchscript";
  fs::copy_file(Weights(), ts, fs::copy_options::overwrite_existing);
  CliRun beside = Train(*tmp_, {"export", "--weights", ts.string(), "--format", "torchscript"});
  EXPECT_EQ(beside.exit_code, 2) << beside.err;
  EXPECT_NE(beside.err.find(ts.string() + ": is the input"), std::string::npos) << beside.err;
  EXPECT_EQ(ReadFile(Weights()), weights);
  EXPECT_EQ(ReadFile(ts), weights);
}

TEST_F(OutputPaths, ExportOutADirectorySaysSo) {
  fs::create_directories(tmp_->path() / "exports");
  CliRun r = Train(*tmp_, {"export", "--weights", Weights().string(), "--out", (tmp_->path() / "exports").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((tmp_->path() / "exports").string() + ": is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Success"), std::string::npos) << r.err;
}

TEST_F(OutputPaths, PredictIntoTheFolderOfItsInputsIsRefused) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const fs::path dir = tmp_->path() / "photos";
  CopyImage(0, dir / "photo.png");  // JPEG bytes: the decoder goes by content
  CopyImage(1, dir / "photo.jpg");
  const std::string png = ReadFile(dir / "photo.png"), jpg = ReadFile(dir / "photo.jpg");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{dir.string(), "--out", dir.string()},
        {(dir / "photo.png").string(), "--project", tmp_->path().string(), "--name", "photos", "--exist-ok"}}) {
    std::vector<std::string> cmd = {"predict", "--weights", Weights().string(), "--device", "cpu"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    CliRun r = Train(*tmp_, cmd);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(dir.string() + ": holds the input " + (dir / "photo").string()), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFile(dir / "photo.png"), png);
  EXPECT_EQ(ReadFile(dir / "photo.jpg"), jpg);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
}

TEST_F(OutputPaths, PredictNeverWritesThroughASymlinkNorBlocksOnAFifo) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  CopyImage(2, tmp_->path() / "src" / "photo.jpg");
  WriteFile(tmp_->path() / "victim.txt", "outside the output folder");
  fs::create_directories(tmp_->path() / "linked");
  fs::create_symlink(tmp_->path() / "victim.txt", tmp_->path() / "linked" / "photo.jpg");
  fs::create_directories(tmp_->path() / "fifo");
  ASSERT_EQ(::mkfifo((tmp_->path() / "fifo" / "photo.jpg").c_str(), 0644), 0);
  for (const char* out : {"linked", "fifo"}) {
    CliRun r = Train(*tmp_, {"predict", "--weights", Weights().string(), "--device", "cpu",
                             (tmp_->path() / "src" / "photo.jpg").string(), "--out", (tmp_->path() / out).string()},
                     std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 1) << out << ": " << r.err;
    EXPECT_NE(r.err.find("not a regular file; not replaced"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFile(tmp_->path() / "victim.txt"), "outside the output folder");
  EXPECT_TRUE(fs::is_symlink(tmp_->path() / "linked" / "photo.jpg"));
  EXPECT_TRUE(IsFifo(tmp_->path() / "fifo" / "photo.jpg"));
}

// clip_1.jpg's labels/clip_1.txt was also frame 1 of clip.mp4 (Ultralytics' <stem>_<frame>.txt): the
// later input is renamed instead, in either order.
TEST(PredictOutputNames, AnImageNeverSharesItsLabelFileWithAVideoFrame) {
  TempDir tmp;
  WriteFile(tmp / "clip_1.jpg", "x");
  WriteFile(tmp / "clip.mp4", "x");
  auto outputs = [&](const std::vector<std::string>& in) {
    std::vector<std::string> names;
    Result<std::vector<PredictInput>> r = ExpandPredictInputs(in);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok())
      for (const PredictInput& p : *r) names.push_back(p.output.string());
    return names;
  };
  const std::string image = (tmp / "clip_1.jpg").string(), video = (tmp / "clip.mp4").string();
  EXPECT_EQ(outputs({image, video}), (std::vector<std::string>{"clip_1.jpg", "clip_mp4.avi"}));
  EXPECT_EQ(outputs({video, image}), (std::vector<std::string>{"clip.avi", "clip_1_2.jpg"}));
  EXPECT_EQ(outputs({tmp.path().string()}), (std::vector<std::string>{"clip.avi", "clip_1_2.jpg"}));  // sorted
}

TEST_F(OutputPaths, AnInterruptedVideoIsDiscardedNeverRenamedOverAnEarlierResult) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
#if YOLOCACHE_TEST_VIDEOIO
  const fs::path video = tmp_->path() / "long.avi";
  {
    cv::VideoWriter w(video.string(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 30, cv::Size(160, 128), true);
    ASSERT_TRUE(w.isOpened());
    for (int f = 0; f < 600; ++f) {
      cv::Mat frame(128, 160, CV_8UC3, cv::Scalar(40, 40, 40));
      cv::Mat(frame, cv::Rect(f % 120, 20, 30, 30)).setTo(cv::Scalar(0, 200, 255));
      w.write(frame);
    }
  }
  const fs::path out = tmp_->path() / "vout";
  WriteFile(out / "long.avi", "an earlier complete result");
  const pid_t pid = testing::SpawnTool("yolocache-train",
                                       {"predict", "--weights", Weights().string(), "--device", "cpu", "--imgsz", "640",
                                        video.string(), "--out", out.string()},
                                       tmp_->path() / "vstdout", tmp_->path() / "vstderr", tmp_->path());
  ASSERT_GT(pid, 0);
  // Interrupt once the temp video exists (frames are being written).
  auto temp_exists = [&] {
    for (const auto& e : fs::directory_iterator(out))
      if (e.path().filename().string().rfind(".long.avi.tmp-", 0) == 0) return true;
    return false;
  };
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (!temp_exists() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(temp_exists()) << ReadFile(tmp_->path() / "vstderr");
  ::kill(pid, SIGINT);
  EXPECT_EQ(WaitWithin(pid, std::chrono::seconds(60)), 130) << ReadFile(tmp_->path() / "vstderr");
  EXPECT_EQ(ReadFile(out / "long.avi"), "an earlier complete result");
  EXPECT_FALSE(temp_exists());
#else
  GTEST_SKIP() << "this build has no OpenCV videoio";
#endif
}

}  // namespace
}  // namespace yc::trainer
