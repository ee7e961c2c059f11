#include "trainer/runtime/conv_warmup.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <tuple>

#include <ATen/record_function.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/autograd/autograd.h>

#include "trainer/runtime/clock.h"
#include "trainer/runtime/cudnn_off.h"
#include "trainer/runtime/exception_text.h"
#include "trainer/runtime/side_stream.h"

namespace yc::trainer {

bool ConvCall::operator==(const ConvCall& o) const {
  return std::tie(input, weight, bias, stride, padding, dilation, groups, dtype, memory_format, input_grad,
                  weight_grad) == std::tie(o.input, o.weight, o.bias, o.stride, o.padding, o.dilation, o.groups,
                                           o.dtype, o.memory_format, o.input_grad, o.weight_grad);
}

namespace {

// RecordFunction callbacks are plain function pointers: the recording in progress on this thread.
thread_local std::vector<ConvCall>* recording = nullptr;

// aten::convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups).
std::unique_ptr<at::ObserverContext> OnConvolution(const at::RecordFunction& fn) {
  if (recording == nullptr || std::strcmp(fn.name(), "aten::convolution") != 0) return nullptr;
  const auto inputs = fn.inputs();
  if (inputs.size() != 9 || !inputs[0].isTensor() || !inputs[1].isTensor() || !inputs[6].isBool() ||
      inputs[6].toBool() || !inputs[3].isIntList() || !inputs[4].isIntList() || !inputs[5].isIntList() ||
      !inputs[8].isInt())
    return nullptr;  // transposed, or a signature this recorder does not know: nothing to warm
  const at::Tensor& x = inputs[0].toTensor();
  const at::Tensor& w = inputs[1].toTensor();
  if (x.dim() != 4) return nullptr;
  ConvCall c;
  c.input = x.sizes().vec();
  c.weight = w.sizes().vec();
  c.bias = inputs[2].isTensor() && inputs[2].toTensor().defined();
  c.stride = inputs[3].toIntVector();
  c.padding = inputs[4].toIntVector();
  c.dilation = inputs[5].toIntVector();
  c.groups = inputs[8].toInt();
  c.dtype = x.scalar_type();
  c.memory_format = x.suggest_memory_format();
  c.input_grad = x.requires_grad();
  c.weight_grad = w.requires_grad();
  if (std::find(recording->begin(), recording->end(), c) == recording->end()) recording->push_back(std::move(c));
  return nullptr;
}

// OnConvolution listens on this thread while a Recording lives, however the forward ends.
class Recording {
 public:
  explicit Recording(std::vector<ConvCall>* calls)
      : handle_(at::addThreadLocalCallback(at::RecordFunctionCallback(&OnConvolution).needsInputs(true))) {
    recording = calls;
  }
  ~Recording() {
    at::removeCallback(handle_);
    recording = nullptr;
  }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

 private:
  at::CallbackHandle handle_;
};

}  // namespace

std::vector<ConvCall> RecordConvCalls(const std::function<void()>& forward) {
  std::vector<ConvCall> calls;
  CudnnOff cudnn_off;
  Recording on(&calls);
  forward();
  return calls;
}

void RunConvCall(const ConvCall& c, const at::Device& device) {
  const auto options = at::TensorOptions().device(device).dtype(c.dtype);
  at::Tensor x = at::empty(c.input, options, c.memory_format).zero_().requires_grad_(c.input_grad);
  at::Tensor w = at::empty(c.weight, options, c.memory_format).zero_().requires_grad_(c.weight_grad);
  at::Tensor b = c.bias ? at::zeros({c.weight[0]}, options).requires_grad_(c.weight_grad) : at::Tensor();
  at::Tensor y = at::convolution(x, w, b, c.stride, c.padding, c.dilation, false, {0, 0}, c.groups);
  if (y.requires_grad()) torch::autograd::backward({y}, {at::ones_like(y)});
}

std::vector<ConvCall> AtBatchSizes(const std::vector<ConvCall>& calls, const std::vector<int64_t>& batch_sizes) {
  std::vector<ConvCall> out;
  for (int64_t n : batch_sizes) {
    for (ConvCall c : calls) {
      c.input[0] = n;
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
    }
  }
  return out;
}

ConvWarmup WarmConvCalls(const std::vector<ConvCall>& calls, const at::Device& device, int threads) {
  const Clock::time_point t0 = Clock::now();
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  std::atomic<bool> failed{false};
  ConvWarmup result;
  auto work = [&] {
    try {
      c10::OptionalDeviceGuard on;
      if (device.has_index()) on.reset_device(device);
      for (size_t i; !failed && (i = next++) < calls.size();) {
        RunConvCall(calls[i], device);
        ++done;
      }
      SynchronizeCurrentStream(device);
    } catch (const std::exception& e) {
      if (!failed.exchange(true)) result.error = ExceptionLine(e);  // the first failure only; read after join
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  result.calls = done;
  result.seconds = Seconds(t0);
  return result;
}

}  // namespace yc::trainer
