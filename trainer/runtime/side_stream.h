// Device work handed from one thread to another without a host wait: the sending thread records a
// StreamFence on its current stream; the receiving thread runs inside a SideStreamScope (a CUDA stream of
// its own, made current on that thread) and makes that stream wait for the fence first. The training loop
// uses it to validate an epoch's weights while the next epoch trains (trainer/engine/end_epoch_overlap.cc).
// CPU: every call is a no-op. CUDA API use stays in side_stream.cc (compiled with CUDA only where LibTorch has it).
//
//   StreamFence ready = StreamFence::Record(device);     // thread A, after queuing the copies to read
//   ... thread B:
//   SideStreamScope side(device);                       // B's kernels go to its own stream
//   ready.WaitOnCurrentStream();                        // ordered after A's copies
//   ... work ...; SynchronizeCurrentStream(device);
#pragma once

#include <memory>

#include <ATen/ATen.h>

namespace yc::trainer {

class StreamFence {
 public:
  // A point in the current stream's queue of `device` (nothing on the CPU).
  static StreamFence Record(const at::Device& device);
  // The current stream of the calling thread waits on the device until that point is reached.
  void WaitOnCurrentStream() const;

 private:
  std::shared_ptr<void> event_;  // an at::cuda::CUDAEvent, kept opaque: this header has no CUDA types
};

class SideStreamScope {
 public:
  // CUDA: this thread's current stream becomes one that no other code uses (dedicated_stream.h).
  explicit SideStreamScope(const at::Device& device);
  ~SideStreamScope();  // the previous current stream again
  SideStreamScope(const SideStreamScope&) = delete;
  SideStreamScope& operator=(const SideStreamScope&) = delete;

 private:
  std::shared_ptr<void> guard_;
};

// Waits for the work queued so far on the calling thread's current stream of `device` (no-op on the CPU):
// unlike a device-wide synchronisation, it neither waits for other streams nor disturbs another thread's
// CUDA graph capture.
void SynchronizeCurrentStream(const at::Device& device);

}  // namespace yc::trainer
