// `predict visualize=True`: what Ultralytics' feature_visualization (ultralytics/utils/plotting.py)
// saves for each layer BaseModel._predict_once runs (nn/tasks.py), for one image: in a fresh folder
// <save_dir>/<image stem> (the next free <stem>2, <stem>3 ... when taken: increment_path, so each video
// frame gets its own), per layer i of type T (Conv, C2f, ...) whose output is 4-D with height and width
// above 1, stage{i}_{T}_features.png (its first min(32, C) channels, trainer/plots/feature_grid.h) and
// stage{i}_{T}_features.npy (the whole (C, H, W) map of the batch's first image, float32, or float16 from
// an fp16 model, trainer/io/npy_file.h). The Detect head is never drawn (it is not observed:
// DetectionModel::ForwardObserved).
//
//   FeatureMaps maps;
//   model->ForwardObserved(x, maps.Observer(*model));
//   YC_ASSIGN_OR_RETURN(fs::path dir, MakeFeatureFolder(save_dir / "bus"));
//   YC_RETURN_IF_ERROR(maps.Save(dir));
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

class FeatureMaps {
 public:
  // Keeps a copy of each layer output it sees (first image of the batch, on the CPU) with its type.
  LayerObserver Observer(const DetectionModelImpl& model);
  // Writes the .png and .npy of every kept map (Ultralytics' order and names) into `dir`.
  Status Save(const std::filesystem::path& dir) const;
  // Ultralytics' file stem of layer `stage` of type `type`: "stage3_C2f_features".
  static std::string FileStem(size_t stage, const std::string& type);

 private:
  struct Map {
    size_t stage = 0;
    std::string type;
    at::Tensor output;  // (C, H, W)
  };
  std::vector<Map> maps_;
};

// Creates and returns `base`, or when it exists the first of <base>2, <base>3 ... that can be created
// (Ultralytics' increment_path(mkdir=True)); only a folder this call created is returned, so nothing of
// an earlier run's is written over. IOError naming the path otherwise.
Result<std::filesystem::path> MakeFeatureFolder(const std::filesystem::path& base);

}  // namespace yc::trainer
