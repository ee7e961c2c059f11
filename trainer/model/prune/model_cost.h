// What a (pruned) model costs, as `prune` prints it before and after: parameters, GFLOPs at an input size,
// and per layer its output channels and the summed output channels of its convolutions (which shows a
// block pruned inside while its output kept its width).
//
// GFLOPs are Ultralytics' convention (utils/torch_utils.py get_flops: thop's multiply-adds x 2 at 640 x 640):
// every convolution's weight elements x its output positions x 2. BatchNorm, activations, pooling, the
// attention's matmuls and the DFL decode are not counted (Ultralytics reports the BatchNorm-fused model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct LayerCost {
  std::string type;            // "Conv", "C2f", "C3k2", "SPPF", "C2PSA", "Upsample", "Concat", "Detect"
  int64_t out = 0;             // output channels (Detect: 0, its outputs are fixed)
  int64_t conv_channels = 0;   // sum of its convolutions' output channels
};

struct ModelCost {
  int64_t parameters = 0;
  double gflops = 0;           // at imgsz x imgsz
  std::vector<LayerCost> layers;
};

// `imgsz`: a multiple of 32. Runs one small forward (64 x 64, on the model's device) to read the layers'
// widths.
ModelCost MeasureModel(DetectionModelImpl& model, int imgsz = 640);

// MeasureModel's GFLOPs alone, from the weights (no forward).
double ModelGflops(DetectionModelImpl& model, int imgsz = 640);

// MeasureModel's parameters and GFLOPs, from the weights (no forward); `layers` stays empty.
ModelCost MeasureModelSize(DetectionModelImpl& model, int imgsz = 640);

}  // namespace yc::trainer
