// Host copies of device tensors without a wait for each: a copy is queued (pinned host memory, a
// non-blocking transfer on the current stream) and Wait() synchronises once for all of them. A checkpoint
// snapshot copies a few thousand tensors; a synchronous copy of each cost ~25 us of waiting, ~70 ms a
// snapshot of yolo11n on an H100 (issue 29: checkpoints kept off the critical path).
//
//   HostCopies copies;
//   at::Tensor a = copies.Queue(weight), b = copies.Queue(bias);   // not readable yet
//   copies.Wait();                                                 // now they are
#pragma once

#include <optional>

#include <ATen/ATen.h>

namespace yc::trainer {

class HostCopies {
 public:
  // A contiguous host tensor that holds `t`'s current values once Wait() returns. A host `t` is copied
  // at once; a device one is read by the device in stream order, so later in-place updates queued after
  // this call do not reach the copy.
  at::Tensor Queue(const at::Tensor& t);
  // Blocks until every copy queued so far has landed (a wait for the current stream, where they were
  // queued); returns at once when none is in flight.
  void Wait();

 private:
  std::optional<at::Device> in_flight_;  // the device with queued copies, if any
};

}  // namespace yc::trainer
