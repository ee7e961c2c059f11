// One sample from plan to batch slot: draws its plan from its (seed, epoch, position) stream, renders
// it through the fast or reference path (train) or the letterbox (val), applies HSV and the layout
// while writing the slot, and emits its label rows and metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <opencv2/core.hpp>
#include <vector>

#include "libcache/record_source.h"
#include "loader/batch.h"
#include "loader/options.h"
#include "loader/order/sampler.h"
#include "loader/render/inputs.h"
#include "loader/render/plan.h"

namespace yc {

struct SampleContext {
  const RecordSource* source = nullptr;
  const LoaderOptions* options = nullptr;
  int epoch = 0;
  bool mosaic_closed = false;  // mosaic, mixup and cutmix off: close_mosaic in force, or rect train batches
  // Windowed order: the epoch's windows (EpochSampler::windows() when the batch was laid out); null
  // for the default order.
  std::shared_ptr<const WindowedEpoch> windows;
};

// The context of epoch `epoch`'s samples as `sampler` (set to that epoch) lays them out: the one way
// the loader's batches and the read-ahead walk make it, so both draw the same plans.
SampleContext MakeSampleContext(const RecordSource* source, const LoaderOptions* options, int epoch,
                                const EpochSampler& sampler);

// Where sample `s`'s Mosaic/MixUp partners come from: its window in the windowed order, else the
// whole split. What DrawTrainPlan takes, for anything that redraws a sample's plan.
PartnerDomain PartnersOf(const SampleContext& ctx, const SampleSlot& s);

// Renders sample `s` as image `batch_idx` of a batch with images of `shape` (w, h): the image goes to
// `slot` (3*h*w bytes, in options.layout), labels are appended to *labels. Exceptions from OpenCV
// are turned into a Status naming the record.
Status ProcessSample(const SampleContext& ctx, const SampleSlot& s, int batch_idx, cv::Size shape, uint8_t* slot,
                     RenderScratch* scratch, std::vector<float>* labels, SampleInfo* info);

// Appends to *out the records sample `s` will read (main, then its mosaic partners, then the mixup
// partner and its partners, then the cutmix partner and its partners; duplicates kept), from its plan
// drawn exactly as ProcessSample draws it: the loader's read-ahead (read_ahead.h) asks for their bytes
// before a worker starts the sample.
// Cheap (no record is read); allocation-free once *out has grown.
void RecordsOfSample(const SampleContext& ctx, const SampleSlot& s, std::vector<uint64_t>* out);

}  // namespace yc
