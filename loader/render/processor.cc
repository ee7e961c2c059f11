#include "loader/render/processor.h"

#include <chrono>
#include <exception>
#include <new>

#include "loader/base/rng.h"
#include "loader/ops/collate.h"
#include "loader/ops/hsv.h"
#include "loader/ops/load_image.h"
#include "loader/render/fast_path.h"
#include "loader/render/plan.h"
#include "loader/render/reference_path.h"
#include "loader/render/val_path.h"

namespace yc {

namespace {

// An h x w HWC image for the renderer: the slot itself in NHWC, else thread scratch (reused).
cv::Mat RenderTarget(const LoaderOptions& o, cv::Size shape, uint8_t* slot, RenderScratch* scratch) {
  if (o.layout == ImageLayout::kNHWC) return cv::Mat(shape, CV_8UC3, slot);
  if (scratch->image.rows * scratch->image.cols < shape.area() || scratch->image.type() != CV_8UC3)
    scratch->image.create(shape, CV_8UC3);
  // A header over the start of the scratch: its shape changes between val batches, its memory does not.
  return cv::Mat(shape, CV_8UC3, scratch->image.data);
}

void FillInfo(const RecordView& view, uint64_t record, SampleInfo* info) {
  info->record = record;
  info->orig_h = view.orig_height > 0 ? view.orig_height : view.height;
  info->orig_w = view.orig_width > 0 ? view.orig_width : view.width;
  info->source.assign(view.source.data(), view.source.size());
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// The two stages (RenderScratch::render_seconds, finish_seconds) cover the whole sample, the label
// rows and SampleInfo counted with the finish: Loader::stats() times each sample from outside too,
// and a worker preempted in an untimed gap would make the stages miss part of that total.

// The one place a train sample's plan is drawn: ProcessTrain renders it, RecordsOfSample reads ahead
// for it, so the read-ahead always names the records the render will read.
TrainPlan PlanOf(const SampleContext& ctx, const SampleSlot& s) {
  const LoaderOptions& o = *ctx.options;
  const PartnerDomain partners = PartnersOf(ctx, s);
  Rng rng(o.seed, static_cast<uint64_t>(ctx.epoch), s.position);
  TrainPlan plan = DrawTrainPlan(rng, s.record, partners, o.hyp, ctx.mosaic_closed, o.imgsz);
  if (o.hyp.cutmix > 0) {
    Rng cut(o.seed, static_cast<uint64_t>(ctx.epoch), s.position, RngStream::kCutMix);
    DrawCutMixPlan(cut, partners, o.hyp, ctx.mosaic_closed, o.imgsz, &plan);
  }
  return plan;
}

void AppendRecordsOf(const SubPlan& sub, std::vector<uint64_t>* out) {
  out->push_back(sub.record);
  if (sub.mosaic) out->insert(out->end(), sub.partners.begin(), sub.partners.end());
}

Status ProcessTrain(const SampleContext& ctx, const SampleSlot& s, int batch_idx, cv::Size shape, uint8_t* slot,
                    RenderScratch* scratch, std::vector<float>* labels, SampleInfo* info) {
  const LoaderOptions& o = *ctx.options;
  const Clock::time_point start = Clock::now();
  const TrainPlan plan = PlanOf(ctx, s);
  cv::Mat out = RenderTarget(o, shape, slot, scratch);
  std::vector<BoxXyxy>& boxes = scratch->boxes_out;
  if (o.path == LoaderOptions::Path::kReference) {
    YC_RETURN_IF_ERROR(RenderTrainReference(plan, *ctx.source, o, shape, scratch, &scratch->warped, &boxes));
    scratch->render_seconds = Since(start);
    FinishImage(scratch->warped.data, shape.height, shape.width, scratch->warped.step, nullptr, o.layout, slot,
                &scratch->chunk);
  } else {
    YC_RETURN_IF_ERROR(RenderTrainFast(plan, *ctx.source, o, scratch, &out, &boxes));
    scratch->render_seconds = Since(start);
    HsvLut lut;
    if (plan.hsv.enabled) lut = MakeHsvLut(plan.hsv);
    FinishImage(out.data, shape.height, shape.width, out.step, plan.hsv.enabled ? &lut : nullptr, o.layout, slot,
                &scratch->chunk, plan.bgr);
  }
  AppendLabelRows(static_cast<float>(batch_idx), boxes, shape.width, shape.height, labels);
  const RecordView& view = scratch->views[0];
  FillInfo(view, s.record, info);
  const cv::Size loaded = LoadedImageSize(view.height, view.width, o.imgsz);
  info->resized_h = loaded.height, info->resized_w = loaded.width;
  info->ratio_h = static_cast<float>(loaded.height) / info->orig_h;
  info->ratio_w = static_cast<float>(loaded.width) / info->orig_w;
  info->pad_w = info->pad_h = 0;
  scratch->finish_seconds = Since(start) - scratch->render_seconds;
  return Status::OK();
}

Status ProcessVal(const SampleContext& ctx, const SampleSlot& s, int batch_idx, cv::Size shape, uint8_t* slot,
                  RenderScratch* scratch, std::vector<float>* labels, SampleInfo* info) {
  const LoaderOptions& o = *ctx.options;
  const Clock::time_point start = Clock::now();
  cv::Mat out = RenderTarget(o, shape, slot, scratch);
  std::vector<BoxXyxy>& boxes = scratch->boxes_out;
  ValSample v;
  YC_RETURN_IF_ERROR(RenderVal(*ctx.source, s.record, o.imgsz, scratch, &out, &boxes, &v));
  scratch->render_seconds = Since(start);
  if (out.data != slot)
    FinishImage(out.data, shape.height, shape.width, out.step, nullptr, o.layout, slot, &scratch->chunk);
  AppendLabelRows(static_cast<float>(batch_idx), boxes, shape.width, shape.height, labels);
  FillInfo(scratch->views[0], s.record, info);
  info->resized_h = v.letterbox.new_h, info->resized_w = v.letterbox.new_w;
  info->ratio_h = static_cast<float>(v.letterbox.new_h) / info->orig_h;
  info->ratio_w = static_cast<float>(v.letterbox.new_w) / info->orig_w;
  info->pad_w = static_cast<float>(v.letterbox.left), info->pad_h = static_cast<float>(v.letterbox.top);
  scratch->finish_seconds = Since(start) - scratch->render_seconds;
  return Status::OK();
}

}  // namespace

SampleContext MakeSampleContext(const RecordSource* source, const LoaderOptions* options, int epoch,
                                const EpochSampler& sampler) {
  // Rect train batches have no mosaic, mixup or cutmix at any epoch (Ultralytics' build_transforms).
  const bool closed = options->mode == LoaderMode::kTrain && (options->train_rect || MosaicClosed(*options, epoch));
  return SampleContext{source, options, epoch, closed, sampler.windows()};
}

PartnerDomain PartnersOf(const SampleContext& ctx, const SampleSlot& s) {
  if (ctx.windows) return ctx.windows->Partners(s.window);
  return PartnerDomain(ctx.source->size());
}

void RecordsOfSample(const SampleContext& ctx, const SampleSlot& s, std::vector<uint64_t>* out) {
  if (ctx.options->mode != LoaderMode::kTrain) {
    out->push_back(s.record);
    return;
  }
  const TrainPlan plan = PlanOf(ctx, s);
  AppendRecordsOf(plan.main, out);
  if (plan.mixup) AppendRecordsOf(plan.mix, out);
  if (plan.cutmix) AppendRecordsOf(plan.cut, out);  // read only when an area is free; asked for anyway
}

Status ProcessSample(const SampleContext& ctx, const SampleSlot& s, int batch_idx, cv::Size shape, uint8_t* slot,
                     RenderScratch* scratch, std::vector<float>* labels, SampleInfo* info) {
  scratch->views[0] = RecordView();  // so an early failure cannot name the previous sample's record
  scratch->render_seconds = scratch->finish_seconds = 0;
  try {
    if (ctx.options->mode == LoaderMode::kTrain)
      return ProcessTrain(ctx, s, batch_idx, shape, slot, scratch, labels, info);
    return ProcessVal(ctx, s, batch_idx, shape, slot, scratch, labels, info);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("loader: " + RecordName(s.record, &scratch->views[0]) + ": out of memory");
  } catch (const std::exception& e) {
    return Status::DataError("loader: " + RecordName(s.record, &scratch->views[0]) + ": " + e.what());
  }
}

}  // namespace yc
