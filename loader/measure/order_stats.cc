#include "loader/measure/order_stats.h"

#include <algorithm>
#include <cmath>

#include "loader/loader.h"
#include "loader/order/sampler.h"
#include "loader/order/window_order.h"
#include "loader/render/plan.h"
#include "loader/render/processor.h"

namespace yc {

namespace {

// Bins "0", "1", ..., "max-1", "max+": small counts.
OrderHistogram CountHistogram(const std::string& name, int first, int max) {
  OrderHistogram h;
  h.name = name;
  for (int v = first; v < max; ++v) h.bins.push_back(std::to_string(v));
  h.bins.push_back(std::to_string(max) + "+");
  h.counts.assign(h.bins.size(), 0);
  return h;
}

// `mean` accumulates the sum of values until FinishMean divides it by the count.
void AddCount(OrderHistogram* h, int first, int value) {
  const size_t bin = static_cast<size_t>(std::max(0, value - first));
  h->counts[std::min(bin, h->counts.size() - 1)] += 1;
  h->mean += value;
}

// Labels per sample spread over 0..100+: bins of doubling width.
constexpr int kLabelEdges[] = {1, 2, 3, 5, 9, 17, 33, 65};

OrderHistogram LabelHistogram() {
  OrderHistogram h;
  h.name = "labels per sample";
  h.bins = {"0", "1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65+"};
  h.counts.assign(h.bins.size(), 0);
  return h;
}

void AddLabels(OrderHistogram* h, int value) {
  h->counts[std::upper_bound(std::begin(kLabelEdges), std::end(kLabelEdges), value) - std::begin(kLabelEdges)] += 1;
  h->mean += value;
}

void FinishMean(OrderHistogram* h) {
  double total = 0;
  for (double c : h->counts) total += c;
  h->mean = total > 0 ? h->mean / total : 0;
}

// Box area as a share of the image, on a log scale (COCO's small / medium / large are ~0.3% / 3%).
constexpr double kAreaEdges[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3};

OrderHistogram AreaHistogram() {
  OrderHistogram h;
  h.name = "box area, % of image";
  h.bins = {"<0.1", "0.1-0.3", "0.3-1", "1-3", "3-10", "10-30", ">=30"};
  h.counts.assign(h.bins.size(), 0);
  return h;
}

}  // namespace

std::vector<double> OrderHistogram::Shares() const {
  double total = 0;
  for (double c : counts) total += c;
  std::vector<double> s(counts.size(), 0);
  if (total > 0)
    for (size_t i = 0; i < counts.size(); ++i) s[i] = counts[i] / total;
  return s;
}

double OrderHistogram::TotalVariation(const OrderHistogram& other) const {
  const std::vector<double> p = Shares(), q = other.Shares();
  double d = 0;
  for (size_t i = 0; i < std::min(p.size(), q.size()); ++i) d += std::abs(p[i] - q[i]);
  return d / 2;
}

Result<OrderStats> MeasureOrderStats(std::shared_ptr<const RecordSource> source, const LoaderOptions& options,
                                     int epochs, int classes) {
  if (options.mode != LoaderMode::kTrain) return Status::InvalidArgument("order statistics: train mode only");
  if (epochs < 1 || classes < 1) return Status::InvalidArgument("order statistics: epochs and classes must be >= 1");
  OrderStats out;
  OrderHistogram labels = LabelHistogram();
  OrderHistogram cls;
  cls.name = "class share of emitted labels";
  for (int c = 0; c < classes; ++c) cls.bins.push_back(std::to_string(c));
  cls.counts.assign(cls.bins.size(), 0);
  OrderHistogram area = AreaHistogram();
  OrderHistogram uses = CountHistogram("uses per record per epoch (main + partner)", 1, 12);
  OrderHistogram files = CountHistogram("data files one batch reads", 1, 16);

  // What the batches hold: the emitted labels.
  YC_ASSIGN_OR_RETURN(const std::unique_ptr<Loader> loader, Loader::Create(source, options));
  std::vector<int> per_sample;
  for (int e = 0; e < epochs; ++e) {
    YC_RETURN_IF_ERROR(loader->StartEpoch(e));
    std::shared_ptr<Batch> b;
    for (;;) {
      YC_RETURN_IF_ERROR(loader->Next(&b));
      if (!b) break;
      per_sample.assign(static_cast<size_t>(b->size), 0);
      for (size_t r = 0; r < b->label_count(); ++r) {
        const float* row = &b->labels[r * 6];
        ++per_sample[static_cast<size_t>(row[0])];
        cls.counts[std::min(static_cast<size_t>(std::max(0.0f, row[1])), cls.counts.size() - 1)] += 1;
        const double a = static_cast<double>(row[4]) * row[5];
        area.counts[std::upper_bound(std::begin(kAreaEdges), std::end(kAreaEdges), a) - std::begin(kAreaEdges)] += 1;
      }
      for (int n : per_sample) AddLabels(&labels, n);
      out.samples += static_cast<uint64_t>(b->size);
    }
  }

  // Where they come from: every sample's plan, redrawn as ProcessSample draws it.
  const size_t n = source->size();
  std::vector<RecordBlock> blocks;
  if (options.order == SampleOrder::kWindowed) blocks = SplitIntoBlocks(*source, options);
  EpochSampler sampler(n, options, {}, std::move(blocks));
  std::vector<uint32_t> count(n);
  std::vector<SampleSlot> slots;
  std::vector<uint32_t> batch_files;
  cv::Size shape;
  RecordExtent extent;
  const bool has_extents = source->Extent(0, &extent);
  for (int e = 0; e < epochs; ++e) {
    sampler.SetEpoch(e);
    if (sampler.windows()) out.windows = sampler.windows()->windows();
    std::fill(count.begin(), count.end(), 0u);
    const SampleContext ctx{source.get(), &options, e, MosaicClosed(options, e), sampler.windows()};
    for (size_t b = 0; b < sampler.batches_per_epoch(); ++b) {
      sampler.Batch(b, &slots, &shape);
      batch_files.clear();
      for (const SampleSlot& s : slots) {
        Rng rng(options.seed, static_cast<uint64_t>(e), s.position);
        const TrainPlan plan = DrawTrainPlan(rng, s.record, PartnersOf(ctx, s), options.hyp, ctx.mosaic_closed,
                                             options.imgsz);
        auto use = [&](uint64_t r) {
          ++count[r];
          if (has_extents && source->Extent(r, &extent)) batch_files.push_back(extent.file);
        };
        use(plan.main.record);
        if (plan.main.mosaic)
          for (uint64_t p : plan.main.partners) use(p);
        if (plan.mixup) {
          use(plan.mix.record);
          if (plan.mix.mosaic)
            for (uint64_t p : plan.mix.partners) use(p);
        }
      }
      std::sort(batch_files.begin(), batch_files.end());
      const auto distinct = std::unique(batch_files.begin(), batch_files.end()) - batch_files.begin();
      if (has_extents) AddCount(&files, 1, static_cast<int>(distinct));
    }
    for (uint32_t c : count) AddCount(&uses, 1, static_cast<int>(c));
  }
  for (OrderHistogram* h : {&labels, &uses, &files}) FinishMean(h);
  out.histograms = {labels, cls, area, uses};
  if (has_extents) out.histograms.push_back(files);
  return out;
}

}  // namespace yc
