# LibTorch's module and optimizer headers take ~8 s to parse in every file that includes them (~100 of the
# build's files do, through trainer/model/detection_model.h and friends); a precompiled header parses them
# once per target. A file that includes no LibTorch would pay ~3-5 s to load the header, so it skips it.
# Measured on a 2-core machine (g++ 12, Debian's LibTorch 1.13), fresh Release trees built with -j2: the
# three targets' files 2616 s -> 1788 s of compile time (+85 s for the three headers), the whole build
# 1812 s -> 1450 s of wall time. YOLOCACHE_TORCH_PCH=OFF turns it off (a compiler or cache that handles
# PCH badly).
option(YOLOCACHE_TORCH_PCH "Precompile LibTorch's headers for the trainer, its CLI and its tests" ON)

# Sets `out` to whether `file` includes LibTorch, itself or through the project's own headers (named from
# the source root, as everywhere here). Memoized per file; a file being scanned counts as no, ending cycles.
function(_yolocache_includes_torch file out)
  get_property(known GLOBAL PROPERTY "YOLOCACHE_TORCH_INCLUDE:${file}" SET)
  if(NOT known)
    set_property(GLOBAL PROPERTY "YOLOCACHE_TORCH_INCLUDE:${file}" OFF)
    set(result OFF)
    file(STRINGS ${file} includes REGEX "^#include [<\"]")
    foreach(line IN LISTS includes)
      if(line MATCHES "^#include <(torch|ATen|c10)/")
        set(result ON)
      elseif(line MATCHES "^#include \"([^\"]+)\"" AND EXISTS ${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1})
        _yolocache_includes_torch(${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1} result)
      endif()
      if(result)
        break()
      endif()
    endforeach()
    set_property(GLOBAL PROPERTY "YOLOCACHE_TORCH_INCLUDE:${file}" ${result})
  endif()
  get_property(value GLOBAL PROPERTY "YOLOCACHE_TORCH_INCLUDE:${file}")
  set(${out} ${value} PARENT_SCOPE)
endfunction()

# Call from the folder that defines `target` (source file properties belong to that folder).
function(yolocache_torch_pch target)
  if(NOT YOLOCACHE_TORCH_PCH OR NOT TARGET ${target})
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_precompile_headers(${target} PRIVATE
    <ATen/ATen.h>
    <c10/core/GradMode.h>
    <torch/nn/module.h>
    <torch/nn/modules/batchnorm.h>
    <torch/nn/modules/container/modulelist.h>
    <torch/nn/modules/container/sequential.h>
    <torch/nn/modules/conv.h>
    <torch/optim/adam.h>
    <torch/optim/adamw.h>
    <torch/optim/optimizer.h>
    <torch/optim/sgd.h>)
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    get_filename_component(path ${source} ABSOLUTE)
    _yolocache_includes_torch(${path} uses_torch)
    if(NOT uses_torch)
      set_source_files_properties(${source} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
