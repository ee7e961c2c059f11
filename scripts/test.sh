#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test suite:
#   1. Release build (-Werror) + all GoogleTest suites (ctest), then the Python package's pytest suite (python/tests,
#      against the module of that build, once),
#   2. ASan+UBSan build of the data-side libraries (clang), running the libcache, loader and tools suites
#      (every odd image, every corrupt cache byte, under the sanitizers),
#   3. libFuzzer targets (label parser, EXIF, shard/manifest readers) from that same build, a few seconds each.
# Usage: scripts/test.sh [--quick]   (--quick: step 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Each step's wall time, so a slow CI run shows which step grew.
took() { echo "-- $1 took $((SECONDS - step_start)) s"; step_start=$SECONDS; }
step_start=$SECONDS
bash scripts/install-deps.sh
took "installing the dependencies"

echo "== [1/3] release build + tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DYOLOCACHE_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
took "the release build"
ctest --test-dir build --output-on-failure -j"$jobs" | tee build/ctest.log
passed=$(grep -oE '[0-9]+ tests failed out of [0-9]+' build/ctest.log | awk '{print $6 - $1}')
took "ctest"
py=$(sed -n 's/^YOLOCACHE_PYTHON:FILEPATH=//p' build/CMakeCache.txt)
if [ -d build/python/yolocache ] && [ -n "$py" ]; then
  echo "-- python: pytest python/tests ($py)"
  YOLOCACHE_BUILD=build "$py" -m pytest -q -p no:cacheprovider python/tests | tee build/pytest.log
  passed=$((passed + $(grep -oE '[0-9]+ passed' build/pytest.log | awk '{print $1}')))
  took "pytest"
else
  echo "-- python: module not built (no python3 with torch, pybind11-dev or python3-dev): pytest skipped"
fi
if [ "${1:-}" = "--quick" ]; then echo "tests: $passed passed, 0 failed"; exit 0; fi

# Steps 2 and 3 share one clang build: the fuzz configuration compiles everything with ASan + UBSan
# (and libFuzzer's coverage hooks), so the data-side suites and the fuzzers come from one compile of
# libcache, the loader and the tools instead of two.
echo "== [2/3] ASan+UBSan build (clang, with the libFuzzer targets) + data-side tests"
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYOLOCACHE_FUZZ=ON \
      -DYOLOCACHE_WITH_TORCH=OFF >/dev/null
cmake --build build-san -j"$jobs" --target libcache_tests loader_tests tools_tests yolocache fuzzers
took "the sanitizer build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for suite in libcache_tests loader_tests tools_tests; do
  echo "-- $suite (ASan+UBSan)"
  build-san/tests/$suite --gtest_brief=1
done
unset ASAN_OPTIONS UBSAN_OPTIONS
took "the sanitizer suites"

echo "== [3/3] libFuzzer smoke runs"
for f in build-san/fuzz/*_fuzz; do
  echo "-- $(basename "$f")"
  mkdir -p "build-san/corpus/$(basename "$f")"
  "$f" -max_total_time="${FUZZ_SECONDS:-10}" -rss_limit_mb=2048 "build-san/corpus/$(basename "$f")" 2>&1 | tail -2
done
took "the fuzzers"
echo "scripts/test.sh: all steps passed (release suites, sanitizer suites, fuzzers)"
echo "tests: $passed passed, 0 failed"
