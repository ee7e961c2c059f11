// Ultralytics' AutoBatch (ultralytics/utils/autobatch.py, batch=-1 or batch=0.7): the batch size that
// fills a share of the GPU's memory, from the memory a copy of the model takes at a few batch sizes
// (forward + backward under the run's autocast), a straight line fitted through them, and the free
// memory. On the CPU, or when the probe fails, the default batch, saying why, as Ultralytics does.
#pragma once

#include <functional>
#include <string>

#include <ATen/ATen.h>

#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct AutoBatchRequest {
  double fraction = 0.6;      // share of the device's memory to fill
  int imgsz = 640;
  int fallback = 16;          // Ultralytics' default batch
  bool autocast_fp16 = true;  // the run's AMP (fp16 autocast on CUDA)
  bool channels_last = true;
};

// The chosen batch; every line Ultralytics would print goes to `say`.
int AutoBatchSize(const DetectionModel& model, const at::Device& device, const AutoBatchRequest& request,
                  const std::function<void(const std::string&)>& say);

// The batch where a line through (batch, bytes) points reaches `budget` bytes (least squares); 0 when
// the points do not rise with the batch.
int BatchForBudget(const std::vector<std::pair<int, double>>& points, double budget);

}  // namespace yc::trainer
