# The trainer's own CUDA kernels (trainer/**/kernels/*.cu) need nvcc and a LibTorch built with CUDA; Debian's
# CPU LibTorch (CI) has neither, and there the ATen versions of the same work run. The language is enabled
# here, at the top level, because every target that links the trainer links CUDA's runtime through it.
# The shared runtime: LibTorch's own libcudart, so that the kernels and PyTorch share one CUDA context and
# the stream handles PyTorch gives them.
set(YOLOCACHE_WITH_CUDA_KERNELS OFF)
# Turing (T4) and Ampere (A100; its code also runs on 8.6 and 8.9) as machine code, Hopper (H100/H200) as
# machine code and PTX (which newer GPUs compile when loading); older GPUs get the ATen assigner. Set on the
# trainer's target itself: LibTorch's CMake files may have enabled CUDA already with other defaults.
set(YOLOCACHE_CUDA_ARCHITECTURES "75-real;80-real;90" CACHE STRING "GPU architectures of the trainer's CUDA kernels")
if(YOLOCACHE_CUDA_KERNELS AND (TARGET torch_cuda OR TORCH_CUDA_LIBRARIES))
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
      set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    set(YOLOCACHE_WITH_CUDA_KERNELS ON)
    message(STATUS "yolocache: the trainer's CUDA kernels with nvcc ${CMAKE_CUDA_COMPILER_VERSION}")
  else()
    message(STATUS "yolocache: no nvcc found: the trainer's CUDA kernels are replaced by ATen ops")
  endif()
endif()
