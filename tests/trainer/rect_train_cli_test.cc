// `yolocache-train train rect=True` end to end on the CPU: Ultralytics' shuffle warning, rectangular
// batches through the model, the loss and the train_batch plots, and rect: true in args.yaml.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "libcache/source/decode.h"
#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;
using testing::YolocacheTrain;

TEST(RectTrainCli, TrainsOnRectangularBatches) {
  TempDir tmp;
  testutil::SynthCacheSpec spec = testutil::Images(8, 2);
  spec.min_side = 40, spec.max_side = 128, spec.cache_imgsz = 128;  // h/w 0.67 .. 2.05
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const fs::path run = tmp / "run";
  CliRun t = YolocacheTrain(tmp, {"train", "data=" + cache.string(), "model=yolov8n.yaml", "imgsz=128", "epochs=1",
                                  "batch=2", "device=cpu", "workers=1", "rect=True", "mosaic=1.0", "--torch-threads",
                                  "1", "--out", run.string()});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  const std::string log = t.out + t.err;
  EXPECT_NE(log.find("'rect=True' is incompatible with DataLoader shuffle, setting shuffle=False"), std::string::npos)
      << log;
  EXPECT_NE(testing::ReadFile(run / "args.yaml").find("\nrect: true\n"), std::string::npos);
  // The losses of the one epoch are finite numbers.
  std::istringstream csv(testing::ReadFile(run / "results.csv"));
  std::string header, row;
  ASSERT_TRUE(std::getline(csv, header) && std::getline(csv, row)) << header;
  std::istringstream cells(row);
  std::string epoch, time, box_loss;
  ASSERT_TRUE(std::getline(cells, epoch, ',') && std::getline(cells, time, ',') && std::getline(cells, box_loss, ','));
  EXPECT_TRUE(std::isfinite(std::stod(box_loss))) << row;
  // train_batch0.jpg is the first batch as the model saw it: its 2 images in a 2 x 2 grid. The batches
  // in aspect-ratio order start with the widest images (h/w 0.67): 128 x 96, so the grid is wider than tall.
  const std::string jpg = testing::ReadFile(run / "train_batch0.jpg");
  const DecodedImage grid = DecodeImage(reinterpret_cast<const uint8_t*>(jpg.data()), jpg.size(), DecodeOptions{});
  ASSERT_FALSE(grid.has_error());
  EXPECT_GT(grid.rgb.cols, grid.rgb.rows) << grid.rgb.cols << " x " << grid.rgb.rows;
}

}  // namespace
}  // namespace yc::trainer
