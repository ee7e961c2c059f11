// CUDA graphs (at::cuda::CUDAGraph) behind a header without CUDA types: work recorded once by stream
// capture and replayed with one launch. Compiled against a LibTorch with CUDA only (YOLOCACHE_TORCH_CUDA);
// elsewhere CudaGraphsBuilt() is false and Capture() says why.
//
//   GraphMemoryPool pool;                 // one per set of graphs that never run at the same time
//   CudaGraph g;
//   YC_RETURN_IF_ERROR(g.Capture(device_index, pool, [&] { return Step(static_in, &static_out); }));
//   g.Replay();                           // runs the captured work on the current stream
//
// Capture records the work; nothing in `body` executes then, so the first Replay() is the first run.
// Tensors `body` allocates come from the pool, at the same addresses in every replay: inputs and
// outputs are buffers kept alive by the caller, refilled in place between replays.
#pragma once

#include <functional>
#include <memory>

#include "base/status.h"

namespace yc::trainer {

// Whether this build can capture CUDA graphs (a LibTorch with CUDA).
bool CudaGraphsBuilt();

// A private memory pool shared by graphs replayed one at a time (at::cuda::graph_pool_handle): they
// then hold the largest one's temporaries, not the sum of all.
class GraphMemoryPool {
 public:
  GraphMemoryPool();
  ~GraphMemoryPool();
  GraphMemoryPool(const GraphMemoryPool&) = delete;
  GraphMemoryPool& operator=(const GraphMemoryPool&) = delete;

 private:
  friend class CudaGraph;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CudaGraph {
 public:
  CudaGraph();
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Records `body` under stream capture on a side stream of CUDA device `device_index` (-1: the current
  // one), ordered after the current stream's work. Thread-local capture mode: other threads (the
  // loader's) keep their CUDA calls. A failed status or an exception from `body`, or a capture CUDA
  // refused (a host sync inside, say), is returned and leaves this graph empty.
  Status Capture(int device_index, GraphMemoryPool& pool, const std::function<Status()>& body);

  // Launches the captured work on the current stream (no host synchronisation).
  void Replay();

  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yc::trainer
