#include "loader/measure/stage_profile.h"

#include <chrono>
#include <vector>

#include <opencv2/core.hpp>

#include "loader/ops/collate.h"
#include "loader/ops/hsv.h"
#include "loader/render/fast_path.h"
#include "loader/render/inputs.h"
#include "loader/render/plan.h"

namespace yc {

Result<StageProfile> ProfileTrainStages(const RecordSource& source, const LoaderOptions& o, int samples) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  if (source.size() == 0) return Status::InvalidArgument("stage profile: the source is empty");
  RenderScratch scratch;
  std::vector<BoxXyxy> boxes;
  std::vector<uint8_t> slot(ImageBytes(o.imgsz, o.imgsz));
  cv::Mat out(o.imgsz, o.imgsz, CV_8UC3);
  StageProfile p;
  p.samples = samples;
  double render = 0, finish = 0, plain = 0, read = 0;
  {
    ScratchBuffer record_scratch;
    RecordView view;
    YC_RETURN_IF_ERROR(source.Read(0, &view, &record_scratch));  // warm: scratch, zstd/TurboJPEG state
    for (int i = 0; i < samples; ++i) {
      const auto t0 = Clock::now();
      YC_RETURN_IF_ERROR(source.Read(static_cast<size_t>(i) % source.size(), &view, &record_scratch));
      read += seconds(t0, Clock::now());
    }
  }
  for (int i = 0; i < samples; ++i) {
    Rng rng(o.seed, 0, static_cast<uint64_t>(i));
    const TrainPlan plan = DrawTrainPlan(rng, static_cast<uint64_t>(i) % source.size(), source.size(), o.hyp, false, o.imgsz);
    const auto t0 = Clock::now();
    YC_RETURN_IF_ERROR(RenderTrainFast(plan, source, o, &scratch, &out, &boxes));
    const auto t1 = Clock::now();
    const HsvLut lut = MakeHsvLut(plan.hsv);
    FinishImage(out.data, o.imgsz, o.imgsz, out.step, &lut, o.layout, slot.data(), &scratch.chunk);
    const auto t2 = Clock::now();
    FinishImage(out.data, o.imgsz, o.imgsz, out.step, nullptr, o.layout, slot.data(), &scratch.chunk);
    const auto t3 = Clock::now();
    render += seconds(t0, t1);
    finish += seconds(t1, t2);
    plain += seconds(t2, t3);
  }
  p.geometry_warp_ms = 1e3 * render / samples;
  p.hsv_layout_ms = 1e3 * finish / samples;
  p.layout_only_ms = 1e3 * plain / samples;
  p.record_read_ms = 1e3 * read / samples;
  return p;
}

}  // namespace yc
