#include "trainer/io/host_copies.h"

#include "trainer/runtime/side_stream.h"

namespace yc::trainer {

at::Tensor HostCopies::Queue(const at::Tensor& t) {
  const at::Tensor source = t.detach();
  // Elsewhere copied now (a host tensor once: to() keeps it, the clone copies it).
  if (!source.is_cuda()) return source.to(at::kCPU).clone(at::MemoryFormat::Contiguous);
  // Pinned memory makes the transfer asynchronous; pageable memory would make each copy wait.
  at::Tensor host = at::empty(source.sizes(), source.options().device(at::kCPU).pinned_memory(true));
  host.copy_(source, /*non_blocking=*/true);
  in_flight_ = source.device();
  return host;
}

void HostCopies::Wait() {
  if (!in_flight_) return;
  SynchronizeCurrentStream(*in_flight_);  // the copies' stream only (another thread may be capturing a graph)
  in_flight_.reset();
}

}  // namespace yc::trainer
