#include "trainer/eval/validator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>

#include <c10/core/GradMode.h>

#include "libcache/base/thread_limit.h"
#include "libcache/base/output_file.h"
#include "libcache/cache.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/record_selection.h"
#include "loader/loader.h"
#include "trainer/config/run_dir.h"
#include "trainer/eval/confusion_matrix.h"
#include "trainer/eval/half_precision.h"
#include "trainer/eval/val_plots.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/io/torchscript_model.h"
#include "trainer/model/augmented_inference.h"
#include "trainer/model/box_ops.h"
#include "trainer/plots/batch_grid.h"
#include "trainer/plots/image_file.h"
#include "trainer/runtime/autocast.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

struct Validator::Impl {
  at::Device device{at::kCPU};
  int64_t nc = 0;
  std::unique_ptr<Loader> loader;
  std::unique_ptr<DeviceFeed> feed;
  std::unique_ptr<DetectionLoss> loss;
};

Validator::~Validator() = default;

Result<std::unique_ptr<Validator>> Validator::Create(std::shared_ptr<const RecordSource> source, const ValOptions& options,
                                                     const at::Device& device, int64_t nc) {
  if (!source) return Status::InvalidArgument("validator: no val split");
  if (nc < 1) return Status::InvalidArgument("validator: nc must be >= 1");
  std::unique_ptr<Validator> v(new Validator());
  v->options_ = options;
  v->impl_ = std::make_unique<Impl>();
  Impl& d = *v->impl_;
  d.device = device;
  d.nc = nc;
  d.feed = std::make_unique<DeviceFeed>(device, options.channels_last, nc);
  LoaderOptions lo;
  lo.mode = LoaderMode::kVal;
  lo.batch = options.batch;
  lo.imgsz = options.imgsz;
  lo.rect = options.rect;
  lo.pad = options.pad;
  lo.shuffle = false;
  lo.threads = options.threads;
  lo.prefetch = options.prefetch;
  lo.layout = d.feed->layout();
  lo.allocator = MakeBatchAllocator(device);
  Result<std::unique_ptr<Loader>> loader = Loader::Create(std::move(source), lo);
  if (!loader.ok()) return Status(loader.status()).WithContext("val loader");
  d.loader = std::move(*loader);
  if (options.compute_loss) {
    d.loss = std::make_unique<DetectionLoss>(nc, std::vector<double>{8.0, 16.0, 32.0}, options.loss);
  }
  return v;
}

size_t Validator::batches() const { return impl_->loader->batches_per_epoch(); }
size_t Validator::images() const { return impl_->loader->dataset_size(); }

void BatchGroundTruth(const Batch& batch, int index, at::Tensor* boxes, at::Tensor* classes) {
  std::vector<float> xyxy, cls;
  const float w = static_cast<float>(batch.width), h = static_cast<float>(batch.height);
  for (size_t r = 0; r < batch.label_count(); ++r) {
    const float* row = batch.labels.data() + 6 * r;
    if (static_cast<int>(row[0]) != index) continue;
    const float cx = row[2] * w, cy = row[3] * h, bw = row[4] * w, bh = row[5] * h;
    xyxy.insert(xyxy.end(), {cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2});
    cls.push_back(row[1]);
  }
  const int64_t m = static_cast<int64_t>(cls.size());
  *boxes = at::from_blob(xyxy.data(), {m, 4}, at::kFloat).clone();
  *classes = at::from_blob(cls.data(), {m}, at::kFloat).clone();
}

void ScaleBoxesToOriginal(at::Tensor& boxes, double gain, double pad_x, double pad_y, double width, double height) {
  if (!boxes.defined() || boxes.numel() == 0) return;
  // The same float32 operations in the same order as scale_boxes + clip_boxes, so that IoUs on a
  // threshold fall the same way: the scalars in float32, as the tensor ops below cast them.
  if (boxes.device().is_cpu() && boxes.scalar_type() == at::kFloat && boxes.dim() == 2 && boxes.size(1) >= 4 &&
      boxes.stride(1) == 1) {
    // A host table (every validation image, twice): in place, without a dozen tensor ops each time.
    const float px = static_cast<float>(pad_x), py = static_cast<float>(pad_y), g = static_cast<float>(gain);
    const float w = static_cast<float>(width), h = static_cast<float>(height);
    float* row = boxes.data_ptr<float>();
    for (int64_t r = 0; r < boxes.size(0); ++r, row += boxes.stride(0)) {
      row[0] = std::clamp((row[0] - px) / g, 0.0f, w);
      row[1] = std::clamp((row[1] - py) / g, 0.0f, h);
      row[2] = std::clamp((row[2] - px) / g, 0.0f, w);
      row[3] = std::clamp((row[3] - py) / g, 0.0f, h);
    }
    return;
  }
  auto x1 = boxes.select(-1, 0), y1 = boxes.select(-1, 1), x2 = boxes.select(-1, 2), y2 = boxes.select(-1, 3);
  x1.sub_(pad_x);
  y1.sub_(pad_y);
  x2.sub_(pad_x);
  y2.sub_(pad_y);
  boxes.narrow(-1, 0, 4).div_(gain);
  x1.clamp_(0, width);
  y1.clamp_(0, height);
  x2.clamp_(0, width);
  y2.clamp_(0, height);
}

void ToOriginalImage(const SampleInfo& s, at::Tensor& boxes) {
  ScaleBoxesToOriginal(boxes, s.ratio_h, s.pad_w, s.pad_h, s.orig_w, s.orig_h);
}

namespace {

// The batch's detections on the host in one transfer: the images' rows are joined on the device, copied
// once and split back into one host tensor each (a copy per image waited for the device each time).
// The host tensors are new memory: adjusting them in place leaves NMS's output as it was.
std::vector<at::Tensor> DetectionsOnHost(const std::vector<at::Tensor>& dets) {
  std::vector<int64_t> rows;
  rows.reserve(dets.size());
  for (const at::Tensor& d : dets) {
    if (d.dim() != 2 || d.size(1) != dets[0].size(1) || d.scalar_type() != dets[0].scalar_type()) {
      std::vector<at::Tensor> each;  // not one table: each on its own
      for (const at::Tensor& e : dets) each.push_back(e.to(at::kCPU).clone());
      return each;
    }
    rows.push_back(d.size(0));
  }
  if (dets.empty()) return {};
  return at::cat(dets).to(at::kCPU).split_with_sizes(rows);
}

// A batch's images counted into the metrics and the confusion matrix (and their detections kept, where
// `predictions` is given). Matched in each original image's pixels, as Ultralytics does: boxes reaching into
// the letterbox padding are clipped, which changes IoUs near the image border. host_dets: NMS rows on the
// host in letterboxed pixels, one table per image (changed in place).
void ScoreBatch(const Batch& batch, const std::vector<at::Tensor>& host_dets, DetectionMetrics* metrics,
                ConfusionMatrix* confusion, std::vector<ImagePredictions>* predictions) {
  for (int i = 0; i < batch.size; ++i) {
    const SampleInfo& sample = batch.samples[static_cast<size_t>(i)];
    at::Tensor gt_boxes, gt_cls;
    BatchGroundTruth(batch, i, &gt_boxes, &gt_cls);
    ToOriginalImage(sample, gt_boxes);
    at::Tensor det;
    if (i < static_cast<int>(host_dets.size())) {
      det = host_dets[static_cast<size_t>(i)];
      ToOriginalImage(sample, det);
    }
    if (predictions != nullptr) predictions->push_back({sample.source, det});
    metrics->Update(det, gt_boxes, gt_cls);
    confusion->Update(det, gt_boxes, gt_cls);
  }
}

// val_batch{k}_labels.jpg and val_batch{k}_pred.jpg of one batch; dets: NMS rows in letterboxed pixels.
void PlotValBatch(const Batch& batch, const std::vector<at::Tensor>& dets, const ValSamplePlots& plots, size_t k) {
  std::vector<GridBox> predicted;
  for (size_t i = 0; i < dets.size() && i < 16; ++i) {
    const at::Tensor d = dets[i].to(at::kCPU).to(at::kFloat).contiguous();
    const float* p = d.data_ptr<float>();
    for (int64_t r = 0; r < d.size(0); ++r, p += d.size(1)) {
      predicted.push_back({static_cast<int>(i), p[0], p[1], p[2], p[3], static_cast<int>(p[5]), p[4]});
    }
  }
  const std::string stem = "val_batch" + std::to_string(k);
  for (const auto& [file, grid] : {std::pair{stem + "_labels.jpg", RenderBatchGrid(batch, plots.names)},
                                   std::pair{stem + "_pred.jpg", RenderBatchGrid(batch, plots.names, predicted)}}) {
    const Status st = WriteImageFile(plots.dir / file, grid);
    if (!st.ok() && st.code() != Status::Code::kUnsupported) std::fprintf(stderr, "warning: %s\n", st.ToString().c_str());
  }
}

}  // namespace

Result<ValResult> Validator::Run(DetectionModelImpl& model, const std::function<void(size_t, size_t)>& progress,
                                 const std::atomic<bool>* cancel, const ValSamplePlots* samples) {
  if (model.nc() != impl_->nc) {
    return Status::InvalidArgument("validator: model has " + std::to_string(model.nc()) + " classes, expected " +
                                   std::to_string(impl_->nc));
  }
  const bool augment = options_.augment;
  return RunForward(
      [&model, augment](const at::Tensor& x) { return augment ? AugmentedForward(model, x) : model.forward(x); },
      progress, cancel, samples);
}

Result<ValResult> Validator::Run(const PredictFn& predict, int64_t nc, const std::function<void(size_t, size_t)>& progress,
                                 const std::atomic<bool>* cancel, const ValSamplePlots* samples) {
  if (nc != impl_->nc) {
    return Status::InvalidArgument("validator: model has " + std::to_string(nc) + " classes, expected " +
                                   std::to_string(impl_->nc));
  }
  if (impl_->loss) return Status::InvalidArgument("validator: a prediction function has no outputs to take a loss of");
  return RunForward([&predict](const at::Tensor& x) { return DetectOutput{{}, predict(x)}; }, progress, cancel, samples);
}

Result<ValResult> Validator::RunForward(const std::function<DetectOutput(const at::Tensor&)>& forward,
                                        const std::function<void(size_t, size_t)>& progress,
                                        const std::atomic<bool>* cancel, const ValSamplePlots* samples) {
  Impl& d = *impl_;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto lap = [t = t0](double* bucket) mutable {  // adds the time since the previous lap to *bucket
    const auto now = Clock::now();
    *bucket += std::chrono::duration<double>(now - t).count();
    t = now;
  };
  NmsOptions nms = options_.nms;
  nms.agnostic = nms.agnostic || options_.single_cls;
  ValResult result;
  DetectionMetrics metrics;
  ConfusionMatrix confusion(d.nc, ConfusionMatrixConf(options_.nms.conf));
  at::Tensor loss_sum = at::zeros({3}, at::TensorOptions().dtype(at::kFloat).device(d.device));
  int64_t loss_batches = 0;
  const size_t total = d.loader->batches_per_epoch();
  YC_RETURN_IF_ERROR(d.loader->StartEpoch(0));
  // Prime the feed: the next batch's copy is staged before the current one is computed.
  std::shared_ptr<Batch> next;
  YC_RETURN_IF_ERROR(d.loader->Next(&next));
  if (next) YC_RETURN_IF_ERROR(d.feed->Stage(std::move(next)));
  lap(&result.data_seconds);
  size_t done = 0;
  // A batch between its forward and its metrics. The next batch's forward is queued before the host
  // matches this one's detections, so the device computes while the host scores.
  struct InFlight {
    DeviceBatch db;
    DetectOutput out;
  };
  std::optional<InFlight> pending;
  try {
    c10::NoGradGuard no_grad;
    while (pending || d.feed->staged() > 0) {
      if (cancel != nullptr && cancel->load()) return Status::Cancelled("validation interrupted");
      // The pending batch's detections on the host (NMS's host reads wait for its forward).
      std::vector<at::Tensor> dets, host_dets;
      if (pending) {
        dets = NonMaxSuppression(pending->out.pred.to(at::kFloat), nms);
        if (options_.single_cls) {
          for (at::Tensor& det : dets) det.select(1, 5).zero_();  // before the plots, as Ultralytics' _prepare_pred
        }
        host_dets = DetectionsOnHost(dets);
        lap(&result.nms_seconds);
      }
      std::optional<InFlight> launched;
      if (d.feed->staged() > 0) {
        YC_RETURN_IF_ERROR(d.loader->Next(&next));
        if (next) YC_RETURN_IF_ERROR(d.feed->Stage(std::move(next)));
        YC_ASSIGN_OR_RETURN(DeviceBatch db, d.feed->Take());
        lap(&result.data_seconds);
        launched.emplace();
        launched->db = std::move(db);
        const DeviceBatch& b = launched->db;
        {
          AutocastGuard amp(d.device.type(), options_.amp, options_.amp_dtype);
          launched->out = forward(options_.half ? b.images.to(at::kHalf) : b.images);
        }
        if (d.loss) {
          if (options_.half) {
            for (at::Tensor& f : launched->out.feats) f = f.to(at::kFloat);  // the loss in fp32, as with autocast
          }
          YC_ASSIGN_OR_RETURN(LossOutput l, (*d.loss)(launched->out.feats, b.labels, b.max_boxes));
          loss_sum.add_(l.items);
          ++loss_batches;
        }
        lap(&result.model_seconds);
      }
      if (pending) {
        const DeviceBatch& db = pending->db;
        if (samples != nullptr && done < 3 && db.host) PlotValBatch(*db.host, dets, *samples, done);
        ScoreBatch(*db.host, host_dets, &metrics, &confusion, options_.keep_predictions ? &result.predictions : nullptr);
        lap(&result.metrics_seconds);
        result.images += db.size;
        ++done;
        if (progress) progress(done, total);
      }
      pending = std::move(launched);
    }
  } catch (const std::exception& e) {
    return Status::IOError(std::string("validation failed: ") + ExceptionLine(e));
  }
  result.metrics = metrics.Compute();
  result.confusion = confusion.counts();
  if (loss_batches > 0) {
    auto l = (loss_sum / static_cast<double>(loss_batches)).to(at::kCPU).to(at::kDouble);
    for (int k = 0; k < 3; ++k) result.loss[k] = l[k].item<double>();
    result.has_loss = true;
  }
  lap(&result.metrics_seconds);
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return result;
}

namespace {
int ValImgsz(int requested, int checkpoint) { return requested > 0 ? requested : checkpoint > 0 ? checkpoint : 640; }

// Ultralytics' is_coco for the split the cache was built from (its data YAML's entry, as Ultralytics
// resolves it); false when that YAML cannot be read any more (with a note when save_json asked).
bool CacheSplitIsCoco(const Cache& cache, const std::string& split, bool save_json, std::vector<std::string>* notes) {
  const Manifest& m = cache.manifest();
  SpecOptions so;
  so.working_dir = m.working_dir;
  Result<DatasetSpec> spec = LoadDatasetSpec(m.dataset_yaml, so);
  if (!spec.ok()) {
    if (save_json)
      notes->push_back("save_json: cannot read the cache's data YAML to tell a COCO split (" + spec.status().message() +
                     "): category_id is class + 1");
    return false;
  }
  const SplitSpec* s = spec->split(split);
  return s != nullptr && IsCocoSplit(s->inputs);
}

// Moves the model to fp16 (AutoBackend's model.half()); IOError naming the weights when it cannot be.
Status ModelToHalf(const std::string& weights, InferenceModel* loaded, TorchScriptModel* script, bool traced) {
  try {
    if (traced) {
      script->module->to(at::kHalf);
      script->half = true;
    } else {
      loaded->model->to(at::kHalf);
    }
  } catch (const std::exception& e) {
    return Status::IOError(Status::At(weights, std::string("cannot convert the model to fp16: ") + ExceptionLine(e)));
  }
  return Status::OK();
}

// predictions.json in `dir` when any image has a detection (Ultralytics' `if self.jdict`).
Status SavePredictionsJson(const ValResult& result, const std::vector<int>& category_ids, const std::filesystem::path& dir,
                           CheckpointValReport* report) {
  YC_ASSIGN_OR_RETURN(const nlohmann::json j, CocoPredictions(result.predictions, category_ids));
  if (j.empty()) {
    report->notes.push_back("save_json: no detections, predictions.json not written (as Ultralytics)");
    return Status::OK();
  }
  report->predictions_json = dir / "predictions.json";
  YC_RETURN_IF_ERROR(WriteFileAtomically(report->predictions_json, j.dump()));
  report->notes.push_back("Saving " + report->predictions_json.string() + " (" + std::to_string(j.size()) +
                          " detections); the COCO evaluation Ultralytics then runs (faster-coco-eval) is not run");
  return Status::OK();
}
}  // namespace

Result<int> CheckpointValImgsz(const std::string& weights, int imgsz) {
  if (imgsz != 0) return imgsz;  // a negative one is refused by ValidateCheckpoint
  if (IsOnnxPath(weights)) return OnnxNotRunnable(weights, "val");
  if (IsTorchScriptPath(weights)) {  // the traced size: the only one it takes
    YC_ASSIGN_OR_RETURN(TorchScriptModel ts, LoadTorchScriptModel(weights, at::Device(at::kCPU)));
    return ts.imgsz[0];
  }
  YC_ASSIGN_OR_RETURN(ModelWeights w, ReadModelWeights(weights));
  return ValImgsz(0, w.imgsz);
}

Result<CheckpointValReport> ValidateCheckpoint(const CheckpointValOptions& o,
                                               const std::function<void(size_t, size_t)>& progress) {
  if (o.batch < 1) return Status::InvalidArgument("--batch must be >= 1");
  if (const std::string bad = ThreadCountError("--threads", o.threads); !bad.empty()) return Status::InvalidArgument(bad);
  if (o.imgsz < 0) return Status::InvalidArgument("--imgsz must be 0 (the checkpoint's) or a multiple of 32");
  if (!(o.nms.conf >= 0 && o.nms.conf < 1)) return Status::InvalidArgument("--conf must be in [0, 1)");
  if (!(o.nms.iou > 0 && o.nms.iou <= 1)) return Status::InvalidArgument("--iou must be in (0, 1]");
  if (o.nms.max_det < 1) return Status::InvalidArgument("--max-det must be >= 1");
  if (o.threads < 0) return Status::InvalidArgument("--threads must be >= 0 (0: all cores)");
  YC_ASSIGN_OR_RETURN(at::Device device, ParseDevice(o.device));
  ConfigureDevice(device);
  if (IsOnnxPath(o.weights)) return OnnxNotRunnable(o.weights, "val");
  // Either kind of weights file (a yolocache checkpoint or an Ultralytics .pt), with its class names, or
  // a TorchScript export.
  InferenceModel loaded;
  TorchScriptModel script;
  const bool traced = IsTorchScriptPath(o.weights);
  if (traced) {
    YC_ASSIGN_OR_RETURN(script, LoadTorchScriptModel(o.weights, device));
    loaded.info.names = script.names;
    loaded.info.nc = static_cast<int64_t>(script.names.size());
    loaded.info.imgsz = script.imgsz[0];
    YC_RETURN_IF_ERROR(CheckTracedSize(script, o.weights, o.imgsz, "val"));
  } else {
    YC_ASSIGN_OR_RETURN(loaded, LoadInferenceModel(o.weights, device));
  }
  const ModelWeights& info = loaded.info;
  const LabelRules rules{o.classes, o.single_cls.value_or(info.single_cls)};
  YC_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(o.data));
  YC_RETURN_IF_ERROR(CheckLabelRules(rules, cache->manifest().names.size()));
  // With single_cls every label is class 0, which any model has: the names need not agree (a run
  // trained with single_cls has the one name "item").
  if (!rules.single_cls && cache->manifest().names != info.names) {
    return Status::InvalidArgument(Status::At(o.data, "class names differ from the checkpoint's (" +
                                                          std::to_string(info.names.size()) + " classes)"));
  }
  const RecordSource* split = cache->split(o.split);
  if (split == nullptr) return Status::NotFound(Status::At(o.data, "no '" + o.split + "' split"));
  auto selected = std::make_shared<SelectedSource>(std::shared_ptr<const RecordSource>(cache, split), split->size(), rules);
  CheckpointValReport report;
  const bool half = HalfApplies(o.half, device);
  if (o.half && !half) report.notes.push_back(HalfOnCpuNote("val"));
  if (half) YC_RETURN_IF_ERROR(ModelToHalf(o.weights, &loaded, &script, traced));
  // AutoBackend runs an export's graph as traced, without augment (nn/autobackend.py forward).
  if (o.augment && traced) {
    report.notes.push_back("augment=True: a TorchScript export runs its traced graph, without test-time augmentation "
                           "(as Ultralytics)");
  }
  // Ultralytics writes predictions.json for a COCO split even unasked (save_json |= is_coco).
  const bool coco = CacheSplitIsCoco(*cache, o.split, o.save_json, &report.notes);
  const bool save_json = o.save_json || coco;
  report.names = info.names;
  report.imgsz = ValImgsz(o.imgsz, info.imgsz);
  report.device = DeviceDescription(device);
  if (report.imgsz < 32 || report.imgsz % 32 != 0) return Status::InvalidArgument("--imgsz must be a multiple of 32");
  ValOptions vo;
  vo.batch = o.batch;
  vo.imgsz = report.imgsz;
  vo.rect = o.rect;
  vo.nms = o.nms;
  vo.single_cls = rules.single_cls;
  vo.compute_loss = o.compute_loss;
  vo.loss = LossOptions{info.loss_gains[0], info.loss_gains[1], info.loss_gains[2]};
  vo.threads = o.threads;
  vo.half = half;
  vo.augment = o.augment && !traced;
  vo.keep_predictions = save_json;
  if (traced) {  // a fixed-shape graph: its batch, square imgsz batches, no per-level outputs for a loss
    vo.batch = script.batch;
    vo.rect = false;
    vo.compute_loss = false;
    vo.nms.end2end = script.end2end;  // an nms export's output is its detections
  }
  YC_ASSIGN_OR_RETURN(std::unique_ptr<Validator> v,
                      Validator::Create(selected, vo, device, info.nc));
  // The run directory first: the first batches are drawn into it while validating (val_batch*.jpg).
  YC_ASSIGN_OR_RETURN(std::filesystem::path dir, ResolveRunDir(o.out, o.project, o.name, o.exist_ok));
  report.save_dir = dir;
  const ValSamplePlots samples{dir, info.names};
  const ValSamplePlots* draw = o.plots ? &samples : nullptr;
  if (traced) {
    YC_ASSIGN_OR_RETURN(report.result, v->Run([&script](const at::Tensor& x) { return script.Forward(x); }, info.nc,
                                              progress, nullptr, draw));
  } else {
    YC_ASSIGN_OR_RETURN(report.result, v->Run(*loaded.model, progress, nullptr, draw));
  }
  if (save_json) YC_RETURN_IF_ERROR(SavePredictionsJson(report.result, CocoCategoryIds(coco, static_cast<int>(info.nc)), dir, &report));
  if (o.plots) {
    const Status plotted = WriteValidationPlots(report.result.metrics, report.result.confusion, info.names, dir);
    if (plotted.code() == Status::Code::kUnsupported) {
      report.plots = "plots skipped: " + plotted.message();
    } else if (!plotted.ok()) {
      return plotted;
    } else {
      report.plots = "plots: BoxPR_curve.png, BoxF1_curve.png, BoxP_curve.png, BoxR_curve.png, confusion_matrix.png, "
                     "confusion_matrix_normalized.png";
    }
  }
  return report;
}

nlohmann::json MetricsToJson(const MetricsSummary& m, const std::vector<std::string>& names) {
  nlohmann::json per_class = nlohmann::json::array();
  const auto& pc = m.per_class;
  for (size_t i = 0; i < pc.classes.size(); ++i) {
    const int64_t c = pc.classes[i];
    double ap = 0;
    for (double v : pc.ap[i]) ap += v;
    ap = pc.ap[i].empty() ? 0.0 : ap / static_cast<double>(pc.ap[i].size());
    per_class.push_back({{"class", c},
                         {"name", c >= 0 && static_cast<size_t>(c) < names.size() ? names[static_cast<size_t>(c)] : std::to_string(c)},
                         {"images", c >= 0 && static_cast<size_t>(c) < m.images_per_class.size()
                                        ? m.images_per_class[static_cast<size_t>(c)] : 0},
                         {"instances", pc.num_targets[i]},
                         {"precision", pc.p.empty() ? 0.0 : pc.p[i]},
                         {"recall", pc.r.empty() ? 0.0 : pc.r[i]},
                         {"mAP50", pc.ap[i].empty() ? 0.0 : pc.ap[i][0]},
                         {"mAP50-95", ap}});
  }
  return {{"precision", m.precision}, {"recall", m.recall},     {"mAP50", m.map50},       {"mAP50-95", m.map50_95},
          {"fitness", m.fitness},     {"images", m.images},     {"instances", m.instances}, {"per_class", per_class}};
}

}  // namespace yc::trainer
