#!/usr/bin/env bash
# Builds yolocache on the GPU host from the carried sysroot (see ../shared/gpu/README.md):
#   bench/gpu_host_build.sh [extra cmake args...]      -> build-gpu/
# TARGETS (environment): build only these targets (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .gpu/sysroot ] || tar -C .gpu -xzf .gpu/sysroot.tar.gz
. .gpu/activate.sh .gpu/sysroot
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DYOLOCACHE_BUILD_TESTS=OFF "$@" >/dev/null
cmake --build build-gpu -j"$(nproc)" ${TARGETS:+--target $TARGETS} 2>&1 | grep -E "error|warning: unused|^ninja|FAILED" || true
test -x build-gpu/tools/yolocache
