#include "loader/options.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "libcache/base/thread_limit.h"

namespace yc {

namespace {
constexpr size_t kAlignment = 4096;

Status Bad(const std::string& what) { return Status::InvalidArgument("loader options: " + what); }

bool Probability(double p) { return std::isfinite(p) && p >= 0.0 && p <= 1.0; }
bool NonNegative(double v) { return std::isfinite(v) && v >= 0.0; }

// "" when `p` is a probability, else the message naming the option and the value given.
std::string ProbabilityError(const char* name, double p) {
  if (Probability(p)) return "";
  std::ostringstream text;
  text << name << " must be a probability in [0, 1], got " << p;
  return text.str();
}
}  // namespace

void* AlignedAllocator::Allocate(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
}

void AlignedAllocator::Free(void* ptr, size_t) { std::free(ptr); }

Status ValidateOptions(const LoaderOptions& o) {
  if (o.batch < 1) return Bad("batch must be >= 1, got " + std::to_string(o.batch));
  if (o.imgsz < 32 || o.imgsz > 8192) return Bad("imgsz must be in [32, 8192], got " + std::to_string(o.imgsz));
  if (o.world_size < 1) return Bad("world_size must be >= 1");
  if (o.rank < 0 || o.rank >= o.world_size) return Bad("rank must be in [0, world_size)");
  if (const std::string bad = ThreadCountError("threads", o.threads); !bad.empty()) return Bad(bad);
  if (o.prefetch < 1) return Bad("prefetch must be >= 1");
  if (o.stride < 1) return Bad("stride must be >= 1");
  if (o.imgsz % o.stride != 0)
    return Bad("imgsz " + std::to_string(o.imgsz) + " must be a multiple of stride " + std::to_string(o.stride) +
               " (Ultralytics rounds it up)");
  if (!NonNegative(o.pad)) return Bad("pad must be >= 0");
  if (o.order == SampleOrder::kWindowed && o.window_bytes == 0) return Bad("window_bytes must be > 0");
  if (o.mode == LoaderMode::kTrain && o.train_rect && o.order == SampleOrder::kWindowed)
    return Bad("train_rect walks the records in aspect-ratio order: it needs order shuffle, not windowed");
  if (o.epochs < 1) return Bad("epochs must be >= 1");
  if (o.fetcher != nullptr && (o.mode != LoaderMode::kTrain || o.order != SampleOrder::kWindowed ||
                               o.window_io != WindowIo::kDirect || o.read_ahead_bytes == 0))
    return Bad("a streamed cache is read window by window through the window stage: it needs train mode, the "
               "windowed order, window_io direct and read_ahead_bytes > 0");
  const AugmentHyp& h = o.hyp;
  for (const auto& [name, p] : {std::pair<const char*, double>{"mosaic", h.mosaic}, {"mixup", h.mixup},
                                {"cutmix", h.cutmix}, {"copy_paste", h.copy_paste}, {"flipud", h.flipud},
                                {"fliplr", h.fliplr}, {"bgr", h.bgr}})
    if (const std::string e = ProbabilityError(name, p); !e.empty()) return Bad(e);
  if (!NonNegative(h.degrees) || h.degrees > 180) return Bad("degrees must be in [0, 180]");
  if (!NonNegative(h.translate) || h.translate > 0.5) return Bad("translate must be in [0, 0.5]");
  if (!NonNegative(h.scale) || h.scale >= 1.0) return Bad("scale must be in [0, 1)");
  if (!NonNegative(h.shear) || h.shear >= 90) return Bad("shear must be in [0, 90)");
  if (!NonNegative(h.perspective) || h.perspective > 0.1) return Bad("perspective must be in [0, 0.1]");
  if (!NonNegative(h.hsv_h) || h.hsv_h > 1) return Bad("hsv_h must be in [0, 1]");
  if (!NonNegative(h.hsv_s) || h.hsv_s > 1) return Bad("hsv_s must be in [0, 1]");
  if (!NonNegative(h.hsv_v) || h.hsv_v > 1) return Bad("hsv_v must be in [0, 1]");
  if (h.close_mosaic < 0) return Bad("close_mosaic must be >= 0");
  return Status::OK();
}

bool MosaicClosed(const LoaderOptions& o, int epoch) {
  return o.hyp.close_mosaic > 0 && epoch >= o.epochs - o.hyp.close_mosaic;
}

bool UsesRectBatches(const LoaderOptions& o) { return o.mode == LoaderMode::kVal ? o.rect : o.train_rect; }

}  // namespace yc
