#include "trainer/eval/feature_maps.h"

#include <algorithm>

#include "trainer/io/npy_file.h"
#include "trainer/plots/feature_grid.h"
#include "trainer/plots/image_file.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

// Ultralytics' n=32: the picture shows at most this many channels (the .npy keeps them all).
constexpr int64_t kMaxDrawnChannels = 32;

}  // namespace

LayerObserver FeatureMaps::Observer(const DetectionModelImpl& model) {
  return [this, &model](size_t layer, const at::Tensor& output) {
    // feature_visualization draws only (B, C, H, W) maps with H > 1 and W > 1.
    if (output.dim() != 4 || output.size(2) <= 1 || output.size(3) <= 1) return;
    const at::ScalarType type = output.scalar_type() == at::kHalf ? at::kHalf : at::kFloat;
    // A copy: later layers may reuse the memory of this one's output.
    maps_.push_back({layer, model.LayerType(layer), output[0].detach().to(at::kCPU, type, false, /*copy=*/true).contiguous()});
  };
}

std::string FeatureMaps::FileStem(size_t stage, const std::string& type) {
  return "stage" + std::to_string(stage) + "_" + type + "_features";
}

Status FeatureMaps::Save(const fs::path& dir) const {
  for (const Map& m : maps_) {
    const fs::path stem = dir / FileStem(m.stage, m.type);
    const int64_t channels = m.output.size(0), h = m.output.size(1), w = m.output.size(2);
    const at::Tensor drawn = m.output.narrow(0, 0, std::min(channels, kMaxDrawnChannels)).to(at::kFloat).contiguous();
    std::vector<cv::Mat> planes;
    for (int64_t c = 0; c < drawn.size(0); ++c) {
      planes.emplace_back(static_cast<int>(h), static_cast<int>(w), CV_32FC1, drawn[c].data_ptr<float>());
    }
    YC_RETURN_IF_ERROR(WriteImageFile(fs::path(stem.string() + ".png"), FeatureMapGrid(planes)));
    const bool half = m.output.scalar_type() == at::kHalf;
    YC_RETURN_IF_ERROR(WriteNpy(fs::path(stem.string() + ".npy"), half ? NpyType::kFloat16 : NpyType::kFloat32,
                                {channels, h, w}, m.output.data_ptr()));
  }
  return Status::OK();
}

Result<fs::path> MakeFeatureFolder(const fs::path& base) {
  std::error_code ec;
  fs::create_directories(base.parent_path(), ec);
  if (ec) return Status::IOError(Status::At(base.parent_path().string(), ec.message()));
  for (int n = 1; n < 10000; ++n) {
    const fs::path dir = n == 1 ? base : fs::path(base.string() + std::to_string(n));
    if (fs::create_directory(dir, ec)) return dir;
    // Taken (a folder: no error; anything else: EEXIST): try the next name.
    if (ec && ec != std::errc::file_exists) return Status::IOError(Status::At(dir.string(), ec.message()));
  }
  return Status::IOError(Status::At(base.string(), "no free name among " + base.filename().string() + "2.." +
                                                       base.filename().string() + "9999"));
}

}  // namespace yc::trainer
