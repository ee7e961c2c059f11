# Unity builds for the LibTorch targets (the trainer library and its tests, two thirds of the build's compile
# time): their sources compiled eight to a file (CMake's UNITY_BUILD), so that what they share beyond the
# precompiled header (LibTorch's templates, GoogleTest) is compiled once per eight files. Measured on a
# 2-core machine (g++ 12, Debian's LibTorch 1.13), fresh Release trees built with -j2: the two targets' files
# 1200 s -> 504 s of compile time, the whole build 17.2 -> 12.3 min of wall time.
# The files of one batch share one translation unit: two helpers of the same name in two files' anonymous
# namespaces collide there, so a helper that several files need lives in a header (base/ascii.h,
# trainer/runtime/clock.h). YOLOCACHE_UNITY_BUILD=OFF compiles file by file (quicker rebuilds of one file).
option(YOLOCACHE_UNITY_BUILD "Compile the trainer library and its tests eight files at a time" ON)

function(yolocache_unity_build target)
  if(YOLOCACHE_UNITY_BUILD AND TARGET ${target})
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
