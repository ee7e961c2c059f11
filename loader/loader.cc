#include "loader/loader.h"

#include <tbb/blocked_range.h>
#include <tbb/concurrent_queue.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "loader/base/core_clock.h"
#include "loader/base/worker_stats.h"
#include "loader/io/read_ahead.h"
#include "loader/io/window_stage.h"
#include "loader/ops/collate.h"
#include "loader/order/sampler.h"
#include "loader/render/processor.h"

namespace yc {

namespace {

// A batch's storage: the public Batch plus what the workers fill per sample.
struct BatchSlot {
  Batch batch;
  size_t capacity = 0;  // bytes behind batch.images
  std::vector<std::vector<float>> sample_labels;
  std::vector<SampleSlot> samples;
};

// Batch memory, shared by the loader and every outstanding shared_ptr<Batch>, so a batch may
// outlive the loader. Grows when the consumer holds batches; never shrinks until destroyed.
class BatchPool {
 public:
  BatchPool(std::shared_ptr<BufferAllocator> allocator, size_t bytes)
      : allocator_(std::move(allocator)), bytes_(bytes) {}
  ~BatchPool() {
    for (auto& slot : all_) allocator_->Free(slot->batch.images, slot->capacity);
  }

  Status Acquire(BatchSlot** out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      return Status::OK();
    }
    void* memory = allocator_->Allocate(bytes_);
    if (memory == nullptr)
      return Status::IOError("loader: cannot allocate " + std::to_string(bytes_) + " bytes for a batch");
    auto slot = std::make_unique<BatchSlot>();
    slot->batch.images = static_cast<uint8_t*>(memory);
    slot->capacity = bytes_;
    *out = slot.get();
    all_.push_back(std::move(slot));
    return Status::OK();
  }

  void Release(BatchSlot* slot) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(slot);
  }

 private:
  std::shared_ptr<BufferAllocator> allocator_;
  size_t bytes_;
  std::mutex mu_;
  std::vector<std::unique_ptr<BatchSlot>> all_;
  std::vector<BatchSlot*> free_;
};

// One batch being produced: one task per sample; the last to finish completes the batch.
struct Job {
  int epoch = 0;
  size_t index = 0;
  BatchSlot* slot = nullptr;
  SampleContext context;
  cv::Size shape;
  std::atomic<int> remaining{0};  // samples not yet finished
  bool done = false;              // guarded by Loader::Impl::mu
  Status status;                  // first failure among the samples
  std::mutex status_mu;
};

}  // namespace

struct Loader::Impl {
  std::shared_ptr<const RecordSource> source;
  LoaderOptions options;
  std::unique_ptr<EpochSampler> sampler;
  std::shared_ptr<BatchPool> pool;
  std::unique_ptr<tbb::global_control> thread_limit;  // only when we need more threads than TBB's default
  std::unique_ptr<tbb::task_arena> arena;
  tbb::enumerable_thread_specific<RenderScratch> scratch;

  struct QueuedSample {
    std::shared_ptr<Job> job;
    int index = 0;
  };
  tbb::concurrent_queue<QueuedSample> queued;  // samples in launch order; one producer, so FIFO

  std::mutex mu;
  std::condition_variable cv;
  int running = 0;  // enqueued jobs not yet finished (guarded by mu)
  std::atomic<bool> cancel{false};
  std::unique_ptr<WorkerStats> worker_stats;  // Loader::stats()
  // At most one of these: read-ahead through the page cache, or (windowed order, window_io direct)
  // the window stage; neither when read_ahead_bytes is 0 or the source is not file-backed.
  std::unique_ptr<ReadAhead> read_ahead;
  std::unique_ptr<WindowStage> stage;

  // Consumer-side state (touched only by the thread calling StartEpoch/Next).
  std::deque<std::shared_ptr<Job>> inflight;  // in (epoch, index) order
  bool started = false;
  int epoch = 0;              // the consumer's epoch
  size_t next = 0;            // next batch to hand out
  int scheduled_epoch = 0;    // epoch of the next batch to launch (the sampler's epoch)
  size_t next_scheduled = 0;  // index of the next batch to launch
  Status error;               // sticky until StartEpoch

  // Consumer thread: lays the batch out, queues its samples and enqueues one task per sample; each
  // task runs whichever sample is at the head of the queue. Samples thus start in strict launch
  // order (TBB's enqueue alone is FIFO only per lane), so the head batch is the first to finish, and
  // no worker ever blocks inside a batch waiting for its other samples (a worker waiting in a
  // per-batch parallel_for may pick up a later batch's work and hold the head batch back).
  void Launch(const std::shared_ptr<Job>& job) {
    BatchSlot& slot = *job->slot;
    Batch& b = slot.batch;
    sampler->Batch(job->index, &slot.samples, &job->shape);
    const int n = static_cast<int>(slot.samples.size());
    b.size = n;
    b.height = job->shape.height;
    b.width = job->shape.width;
    b.layout = options.layout;
    b.epoch = job->epoch;
    b.index = job->index;
    b.samples.resize(n);
    if (static_cast<int>(slot.sample_labels.size()) < n) slot.sample_labels.resize(n);
    job->context = MakeSampleContext(source.get(), &options, job->epoch, *sampler);
    job->remaining.store(n);
    {
      std::lock_guard<std::mutex> lock(mu);
      ++running;
    }
    if (n == 0) Complete(job.get());
    for (int i = 0; i < n; ++i) queued.push({job, i});
    for (int i = 0; i < n; ++i)
      arena->enqueue([this] {
        QueuedSample s;
        if (!queued.try_pop(s)) return;  // one pop per task: never empty
        if (read_ahead) read_ahead->SampleStarted();
        RunSample(s.job.get(), s.index);
      });
  }

  void RunSample(Job* job, int i) {
    if (!cancel.load(std::memory_order_relaxed)) {
      BatchSlot& slot = *job->slot;
      Batch& b = slot.batch;
      Status st;
      const RecordSource* staged = nullptr;
      try {  // enqueued tasks must not throw (std::terminate)
        std::vector<float>& labels = slot.sample_labels[i];
        labels.clear();
        RenderScratch& local = scratch.local();
        CoreClockSample clock;
        if (options.probe_core_clock) clock = SampleCoreClock(1024);
        worker_stats->BeginSample(options.probe_core_clock ? &clock : nullptr);
        // The stage's wait for the sample's window counts as the sample's time, like a page fault.
        staged = stage ? stage->Acquire(job->epoch, slot.samples[i], &st) : nullptr;
        SampleContext staged_context;
        if (staged != nullptr) {
          staged_context = job->context;
          staged_context.source = staged;
        }
        // ProcessSample turns exceptions into a Status, so EndSample always follows. A window that
        // could not be fetched (a streamed cache) fails its samples with the reason.
        if (st.ok())
          st = ProcessSample(staged != nullptr ? staged_context : job->context, slot.samples[i], i, job->shape,
                             b.images + b.image_bytes() * i, &local, &labels, &b.samples[i]);
        worker_stats->EndSample(local.render_seconds, local.finish_seconds);
      } catch (const std::exception& e) {
        st = Status::IOError("loader: batch " + std::to_string(job->index) + ", sample " + std::to_string(i) + ": " +
                             e.what());
      }
      if (staged != nullptr) stage->Release(staged);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(job->status_mu);
        if (job->status.ok()) job->status = st;
      }
    }
    // acq_rel: the last sample sees every other sample's writes before it collates.
    if (job->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) Complete(job);
  }

  // Runs once per batch, after its last sample: collates the labels and hands the batch over.
  void Complete(Job* job) {
    BatchSlot& slot = *job->slot;
    Batch& b = slot.batch;
    b.labels.clear();
    if (!cancel.load()) {
      try {
        for (int i = 0; i < b.size; ++i)
          b.labels.insert(b.labels.end(), slot.sample_labels[i].begin(), slot.sample_labels[i].end());
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(job->status_mu);
        if (job->status.ok()) job->status = Status::IOError("loader: batch " + std::to_string(job->index) + ": " + e.what());
      }
    }
    // Notify under the lock: once `running` reaches 0 the destructor may free `cv`, so the task
    // must not touch it after unlocking.
    std::lock_guard<std::mutex> lock(mu);
    job->done = true;
    --running;
    cv.notify_all();
  }

  // Keeps `prefetch` batches in flight. In train mode, once an epoch's batches are all launched, it
  // runs ahead into the next epoch (if below options.epochs), which a training loop asks for next.
  // Without that the workers idle at every epoch end while the last batches drain: on coco128 (two
  // batches an epoch) that was 8% of 16 threads' time. Batches depend only on (seed, epoch, index),
  // so StartEpoch(epoch + 1) adopts them, and any other StartEpoch cancels them.
  Status Schedule() {
    const size_t batches = sampler->batches_per_epoch();
    while (inflight.size() < static_cast<size_t>(options.prefetch)) {
      if (next_scheduled >= batches) {
        if (options.mode != LoaderMode::kTrain || batches == 0 || scheduled_epoch + 1 >= options.epochs) break;
        sampler->SetEpoch(++scheduled_epoch);
        next_scheduled = 0;
      }
      auto job = std::make_shared<Job>();
      YC_RETURN_IF_ERROR(pool->Acquire(&job->slot));
      job->epoch = scheduled_epoch;
      job->index = next_scheduled++;
      inflight.push_back(job);
      Launch(job);
    }
    return Status::OK();
  }

  void CancelAndWait() {
    cancel.store(true);
    if (stage) stage->Cancel();  // wakes workers waiting for a window
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return running == 0; });
    }
    for (auto& job : inflight) pool->Release(job->slot);
    inflight.clear();
    cancel.store(false);
  }

  // Launches from batch `first_batch` of `epoch` on the next Schedule, with nothing in flight.
  void Relaunch(int epoch_to_run, size_t first_batch) {
    CancelAndWait();
    sampler->SetEpoch(epoch_to_run);
    scheduled_epoch = epoch_to_run;
    next_scheduled = first_batch;
    // No sample of the old walk is queued now: read ahead from where the new one starts.
    if (read_ahead) read_ahead->Restart(epoch_to_run, first_batch);
    if (stage) stage->Restart(epoch_to_run, first_batch);
  }
};

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Loader::~Loader() { impl_->CancelAndWait(); }

const LoaderOptions& Loader::options() const { return impl_->options; }
size_t Loader::dataset_size() const { return impl_->source->size(); }
size_t Loader::batches_per_epoch() const { return impl_->sampler->batches_per_epoch(); }

std::vector<BatchShape> Loader::batch_shapes() const { return impl_->sampler->DistinctShapes(); }

Loader::Stats Loader::stats() const { return impl_->worker_stats->Snapshot(); }

Result<std::unique_ptr<Loader>> Loader::Create(std::shared_ptr<const RecordSource> source, LoaderOptions options) {
  if (source == nullptr) return Status::InvalidArgument("loader: no record source");
  YC_RETURN_IF_ERROR(ValidateOptions(options));
  const size_t n = source->size();
  if (n == 0) return Status::InvalidArgument("loader: the record source is empty");
  if (n > UINT32_MAX) return Status::Unsupported("loader: more than 2^32 records");
  if (!options.allocator) options.allocator = std::make_shared<AlignedAllocator>();

  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->options = options;
  const int threads = options.threads > 0 ? options.threads : tbb::info::default_concurrency();
  // The arena's slots all go to TBB workers (the consumer thread never joins), and TBB's default
  // worker pool is one less than the core count, so ask for enough workers when it falls short.
  if (static_cast<size_t>(threads) + 1 >
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism))
    impl->thread_limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                               static_cast<size_t>(threads) + 1);
  impl->arena = std::make_unique<tbb::task_arena>(threads, 0);
  impl->worker_stats = std::make_unique<WorkerStats>(threads);

  // Rect batching needs every image's size (Ultralytics uses the original image shape).
  std::vector<cv::Size> sizes;
  if (UsesRectBatches(options)) {
    sizes.resize(n);
    std::vector<Status> errors(n);
    std::atomic<bool> failed{false};
    impl->arena->execute([&] {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 64), [&](const tbb::blocked_range<size_t>& r) {
        RenderScratch& local = impl->scratch.local();
        for (size_t i = r.begin(); i < r.end() && !failed.load(std::memory_order_relaxed); ++i) {
          RecordView view;
          Status st = source->Read(i, &view, &local.read[0]);
          if (!st.ok()) {
            errors[i] = st.WithContext("loader: sizing " + RecordName(i, nullptr));
          } else if (view.height <= 0 || view.width <= 0) {
            errors[i] = Status::DataError("loader: sizing " + RecordName(i, &view) + ": empty image");
          }
          if (!errors[i].ok()) {
            failed.store(true);
            continue;
          }
          sizes[i] = view.orig_height > 0 && view.orig_width > 0 ? cv::Size(view.orig_width, view.orig_height)
                                                                 : cv::Size(view.width, view.height);
        }
      });
    });
    if (failed.load())
      for (const Status& st : errors)
        if (!st.ok()) return st;
  }
  std::vector<RecordBlock> blocks;
  if (options.mode == LoaderMode::kTrain && options.order == SampleOrder::kWindowed)
    blocks = SplitIntoBlocks(*source, options);
  impl->sampler = std::make_unique<EpochSampler>(n, options, sizes, std::move(blocks));
  const cv::Size max_shape = impl->sampler->max_shape();
  RecordExtent first;
  if (options.read_ahead_bytes > 0 && source->Extent(0, &first)) {
    if (options.mode == LoaderMode::kTrain && options.order == SampleOrder::kWindowed &&
        options.window_io == WindowIo::kDirect && WindowStage::Supports(*source))
      impl->stage = std::make_unique<WindowStage>(source.get(), &impl->options, *impl->sampler);
    else
      impl->read_ahead = std::make_unique<ReadAhead>(source.get(), &impl->options, *impl->sampler);
  }
  if (options.fetcher != nullptr && impl->stage == nullptr)  // its files hold only what the stage fetched
    return Status::InvalidArgument("loader: a streamed cache needs a source whose records have extents in data files");
  impl->pool = std::make_shared<BatchPool>(
      options.allocator, ImageBytes(max_shape.height, max_shape.width) * static_cast<size_t>(options.batch));
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Status Loader::StartEpoch(int epoch, size_t first_batch) {
  Impl& d = *impl_;
  if (epoch < 0) return Status::InvalidArgument("loader: epoch must be >= 0");
  if (first_batch > d.sampler->batches_per_epoch())
    return Status::InvalidArgument("loader: first batch " + std::to_string(first_batch) + " is past the epoch's " +
                                   std::to_string(d.sampler->batches_per_epoch()) + " batches");
  d.started = true;
  d.epoch = epoch;
  d.next = first_batch;
  d.error = Status::OK();
  if (!d.inflight.empty() && d.inflight.front()->epoch == epoch && d.inflight.front()->index == first_batch)
    return d.Schedule();  // the batches launched ahead are exactly where this epoch starts: keep them
  d.Relaunch(epoch, first_batch);
  return d.Schedule();
}

Status Loader::SetEpochs(int epochs) {
  Impl& d = *impl_;
  if (epochs < 1) return Status::InvalidArgument("loader: epochs must be >= 1");
  if (epochs == d.options.epochs) return Status::OK();
  // The workers read options.epochs (close_mosaic): nothing may run while it changes. What was launched
  // ahead under the old count is dropped; StartEpoch (or the next Next) launches it again.
  d.CancelAndWait();
  d.options.epochs = epochs;
  if (d.started) d.Relaunch(d.epoch, d.next);
  return Status::OK();
}

void Loader::RestartPipeline() {
  Impl& d = *impl_;
  if (d.started) d.Relaunch(d.epoch, d.next);
}

Status Loader::Next(std::shared_ptr<Batch>* out) {
  Impl& d = *impl_;
  *out = nullptr;
  if (!d.started) return Status::InvalidArgument("loader: Next() before StartEpoch()");
  if (!d.error.ok()) return d.error;
  if (d.next >= d.sampler->batches_per_epoch()) return Status::OK();
  Status st = d.Schedule();
  if (!st.ok()) return d.error = st;
  std::shared_ptr<Job> job = d.inflight.front();
  {
    std::unique_lock<std::mutex> lock(d.mu);
    d.cv.wait(lock, [&] { return job->done; });
  }
  d.inflight.pop_front();
  ++d.next;
  if (!job->status.ok()) {
    d.pool->Release(job->slot);
    return d.error = job->status;
  }
  std::shared_ptr<BatchPool> pool = d.pool;
  BatchSlot* slot = job->slot;
  *out = std::shared_ptr<Batch>(&slot->batch, [pool, slot](Batch*) { pool->Release(slot); });
  st = d.Schedule();
  if (!st.ok()) d.error = st;
  return Status::OK();
}

}  // namespace yc
