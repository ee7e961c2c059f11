# NCCL for trainer/distributed/distributed.cc. ProcessGroupNCCL.hpp includes <nccl.h>, which LibTorch does not ship:
# a pip torch finds it in the nvidia-nccl-cuXX wheel (site-packages/nvidia/nccl/include). The NCCL path
# is compiled only when LibTorch exports USE_C10D_NCCL (torch_cuda's interface definitions) AND nccl.h is
# found; the source then sees YOLOCACHE_WITH_NCCL=1. A CPU LibTorch (Debian's) never includes it.
# NCCL_ROOT (variable or environment) points at another install.
function(yolocache_enable_nccl target source)
  set(torch_defs "")
  foreach(t torch_cuda torch torch_cpu)
    if(TARGET ${t})
      get_target_property(defs ${t} INTERFACE_COMPILE_DEFINITIONS)
      if(defs)
        list(APPEND torch_defs ${defs})
      endif()
    endif()
  endforeach()
  if(NOT "USE_C10D_NCCL" IN_LIST torch_defs)
    return()
  endif()
  set(hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME})
  if(Torch_DIR)  # <site-packages>/torch/share/cmake/Torch
    get_filename_component(site "${Torch_DIR}/../../../.." ABSOLUTE)
    list(APPEND hints "${site}/nvidia/nccl" "${site}/nvidia/cu13" "${site}/nvidia/cu12")
  endif()
  find_path(YOLOCACHE_NCCL_INCLUDE_DIR nccl.h HINTS ${hints} PATH_SUFFIXES include)
  if(NOT YOLOCACHE_NCCL_INCLUDE_DIR)
    message(WARNING "LibTorch has NCCL but nccl.h was not found (set NCCL_ROOT): distributed training is Gloo-only")
    return()
  endif()
  # libtorch_cuda loads libnccl itself; linking it too covers any NCCL call inlined from the c10d headers.
  find_library(YOLOCACHE_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${hints} PATH_SUFFIXES lib lib64)
  set_property(SOURCE ${source} APPEND PROPERTY COMPILE_DEFINITIONS YOLOCACHE_WITH_NCCL=1)
  set_property(SOURCE ${source} APPEND PROPERTY INCLUDE_DIRECTORIES ${YOLOCACHE_NCCL_INCLUDE_DIR})
  if(YOLOCACHE_NCCL_LIBRARY)
    target_link_libraries(${target} PRIVATE ${YOLOCACHE_NCCL_LIBRARY})
  endif()
  message(STATUS "yolocache: NCCL for distributed training (${YOLOCACHE_NCCL_INCLUDE_DIR})")
endfunction()
