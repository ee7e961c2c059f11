// cuDNN off for every convolution of the process while an instance lives, restored however the scope ends.
// The flag is global (at::Context), so a holder must know that no other thread runs a convolution meanwhile.
#pragma once

#include <ATen/Context.h>

namespace yc::trainer {

class CudnnOff {
 public:
  CudnnOff() : was_(at::globalContext().userEnabledCuDNN()) { at::globalContext().setUserEnabledCuDNN(false); }
  ~CudnnOff() { at::globalContext().setUserEnabledCuDNN(was_); }
  CudnnOff(const CudnnOff&) = delete;
  CudnnOff& operator=(const CudnnOff&) = delete;

 private:
  bool was_;
};

}  // namespace yc::trainer
