#!/usr/bin/env bash
# Builds yolocache on the GPU host from the carried sysroot (see ../shared/gpu/README.md):
#   bench/gpu_host_build.sh [extra cmake args...]      -> build-gpu/
# TARGETS (environment): build only these targets (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .gpu/sysroot ] || tar -C .gpu -xzf .gpu/sysroot.tar.gz
. .gpu/activate.sh .gpu/sysroot
# Ubuntu's g++ links libstdc++ as a shared library. The g++ first on the host's PATH (/opt/gcc) links it
# statically: the binaries then carry a second libstdc++ beside the one LibTorch uses, and in the Python
# module that copy's streams crashed (2026-12-03: a segfault in ostream::_M_insert<long>).
compiler=()
[ -x /usr/bin/g++ ] && compiler=(-DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++)
# nvcc for the trainer's CUDA kernels (cmake/YolocacheCudaKernels.cmake), with the same host compiler.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
[ -x /usr/bin/g++ ] && export CUDAHOSTCXX=/usr/bin/g++
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DYOLOCACHE_BUILD_TESTS=OFF "${compiler[@]}" "$@" | grep -E "^-- yolocache: (the trainer's CUDA|no nvcc)" || true
cmake --build build-gpu -j"$(nproc)" ${TARGETS:+--target $TARGETS} 2>&1 | grep -E "error|warning: unused|^ninja|FAILED" || true
test -x build-gpu/tools/yolocache
