#include "loader/loader.h"

#include <tbb/blocked_range.h>
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

#include "loader/format.h"
#include "loader/sample_processor.h"
#include "loader/sampler.h"

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

// One batch being produced.
struct Job {
  size_t index = 0;
  BatchSlot* slot = nullptr;
  bool done = false;  // guarded by Loader::Impl::mu
  Status status;      // first failure among the samples
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

  std::mutex mu;
  std::condition_variable cv;
  int running = 0;  // enqueued jobs not yet finished (guarded by mu)
  std::atomic<bool> cancel{false};

  // Consumer-side state (touched only by the thread calling StartEpoch/Next).
  std::deque<std::shared_ptr<Job>> inflight;
  bool started = false;
  int epoch = 0;
  bool closed = false;
  size_t next = 0;            // next batch to hand out
  size_t next_scheduled = 0;  // next batch to enqueue
  Status error;               // sticky until StartEpoch

  void Produce(Job* job) {
    BatchSlot& slot = *job->slot;
    Batch& b = slot.batch;
    cv::Size shape;
    sampler->Batch(job->index, &slot.samples, &shape);
    const int n = static_cast<int>(slot.samples.size());
    b.size = n;
    b.height = shape.height;
    b.width = shape.width;
    b.layout = options.layout;
    b.epoch = epoch;
    b.index = job->index;
    b.samples.resize(n);
    if (static_cast<int>(slot.sample_labels.size()) < n) slot.sample_labels.resize(n);
    const SampleContext ctx{source.get(), &options, epoch, closed};
    const size_t image_bytes = b.image_bytes();
    tbb::parallel_for(tbb::blocked_range<int>(0, n, 1), [&](const tbb::blocked_range<int>& r) {
      RenderScratch& local = scratch.local();
      for (int i = r.begin(); i < r.end(); ++i) {
        if (cancel.load(std::memory_order_relaxed)) return;
        std::vector<float>& labels = slot.sample_labels[i];
        labels.clear();
        const Status st =
            ProcessSample(ctx, slot.samples[i], i, shape, b.images + image_bytes * i, &local, &labels, &b.samples[i]);
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(job->status_mu);
          if (job->status.ok()) job->status = st;
        }
      }
    });
    b.labels.clear();
    for (int i = 0; i < n; ++i)
      b.labels.insert(b.labels.end(), slot.sample_labels[i].begin(), slot.sample_labels[i].end());
  }

  Status Schedule() {
    const size_t batches = sampler->batches_per_epoch();
    while (inflight.size() < static_cast<size_t>(options.prefetch) && next_scheduled < batches) {
      auto job = std::make_shared<Job>();
      YC_RETURN_IF_ERROR(pool->Acquire(&job->slot));
      job->index = next_scheduled++;
      inflight.push_back(job);
      {
        std::lock_guard<std::mutex> lock(mu);
        ++running;
      }
      arena->enqueue([this, job] {
        if (!cancel.load()) {
          try {
            Produce(job.get());
          } catch (const std::exception& e) {  // enqueued tasks must not throw (std::terminate)
            std::lock_guard<std::mutex> lock(job->status_mu);
            if (job->status.ok())
              job->status = Status::IOError("loader: batch " + std::to_string(job->index) + ": " + e.what());
          }
        }
        // Notify under the lock: once `running` reaches 0 the destructor may free `cv`, so the task
        // must not touch it after unlocking.
        std::lock_guard<std::mutex> lock(mu);
        job->done = true;
        --running;
        cv.notify_all();
      });
    }
    return Status::OK();
  }

  void CancelAndWait() {
    cancel.store(true);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return running == 0; });
    }
    for (auto& job : inflight) pool->Release(job->slot);
    inflight.clear();
    cancel.store(false);
  }
};

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Loader::~Loader() { impl_->CancelAndWait(); }

const LoaderOptions& Loader::options() const { return impl_->options; }
size_t Loader::dataset_size() const { return impl_->source->size(); }
size_t Loader::batches_per_epoch() const { return impl_->sampler->batches_per_epoch(); }

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

  // Val rect batching needs every image's size (Ultralytics uses the original image shape).
  std::vector<cv::Size> sizes;
  if (options.mode == LoaderMode::kVal && options.rect) {
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
  impl->sampler = std::make_unique<EpochSampler>(n, options, sizes);
  const cv::Size max_shape = impl->sampler->max_shape();
  impl->pool = std::make_shared<BatchPool>(
      options.allocator, ImageBytes(max_shape.height, max_shape.width) * static_cast<size_t>(options.batch));
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Status Loader::StartEpoch(int epoch, size_t first_batch) {
  Impl& d = *impl_;
  d.CancelAndWait();
  if (epoch < 0) return Status::InvalidArgument("loader: epoch must be >= 0");
  if (first_batch > d.sampler->batches_per_epoch())
    return Status::InvalidArgument("loader: first batch " + std::to_string(first_batch) + " is past the epoch's " +
                                   std::to_string(d.sampler->batches_per_epoch()) + " batches");
  if (!d.started || d.epoch != epoch) d.sampler->SetEpoch(epoch);
  d.started = true;
  d.epoch = epoch;
  d.closed = d.options.mode == LoaderMode::kTrain && MosaicClosed(d.options, epoch);
  d.next = d.next_scheduled = first_batch;
  d.error = Status::OK();
  return d.Schedule();
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
