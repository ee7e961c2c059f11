#!/usr/bin/env bash
# The trainer tests that skip without a GPU (CI's ctest log lists them as Skipped), run on the GPU host with
# the sysroot's libraries on the path (bench/gpu_env.sh; without it the test binary cannot load them):
#   bench/cuda_tests_gpu.sh BUILD_DIR        (BUILD_DIR built with -DYOLOCACHE_BUILD_TESTS=ON)
# Their suites run whole: the CPU tests beside them take seconds. The NCCL test needs two GPUs and skips on one.
set -euo pipefail
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
filter='DepthwiseKernel.*:HostCopies.*:ReleaseHalf.*:FusedStep.*:CudaGraphs.*:RunOutputs.TorchScript*:SyncBatchNorm.*'
filter+=':DistributedRunTest.Nccl*'
exec "$build/tests/trainer_tests" --gtest_filter="$filter" --gtest_brief=1
