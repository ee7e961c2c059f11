# Unity builds for the trainer library and the test suites (three quarters of the build's compile time): their
# sources compiled eight to a file (CMake's UNITY_BUILD), so that what they share beyond a precompiled header
# (LibTorch's templates, GoogleTest, OpenCV) is compiled once per eight files. Measured on a 2-core machine
# (g++ 12, Debian's LibTorch 1.13), fresh Release trees built with -j2: the whole build 17.2 and 20.0 min of
# wall time file by file (two trees), 10.9 min in batches (CPU time 31.1 and 36.4 -> 19.8 min).
# The files of one batch share one translation unit: two helpers of the same name in two files' anonymous
# namespaces collide there, so a helper that several files need lives in a header (base/ascii.h,
# trainer/runtime/clock.h, tests/test_support.h). The CLI's commands stay file by file: each registers
# itself through a static object of the same name. YOLOCACHE_UNITY_BUILD=OFF compiles file by file (quicker
# rebuilds of one edited file).
option(YOLOCACHE_UNITY_BUILD "Compile the trainer library and the test suites eight files at a time" ON)

function(yolocache_unity_build target)
  if(YOLOCACHE_UNITY_BUILD AND TARGET ${target})
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
