#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs yolocache end to end on its embedded default:
# a synthetic dataset it generates itself -> audit -> build cache -> verify -> inspect -> loader bench
# -> (when LibTorch is present) a short yolov8n training run with validation.
# Usage: scripts/demo.sh [WORKDIR]      (default: ./out/demo; it is recreated)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-out/demo}
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# Only the programs the demo runs; the test suites are built by scripts/test.sh.
targets=(yolocache)
if grep -q '^YOLOCACHE_WITH_TORCH:BOOL=ON$' build/CMakeCache.txt; then targets+=(yolocache-train); fi
cmake --build build -j"$(nproc)" --target "${targets[@]}"
yc=build/tools/yolocache
rm -rf "$work" && mkdir -p "$work"

echo "== synth: a learnable dataset of coloured shapes, with 8 deliberately broken files"
$yc synth "$work/data" --train 512 --val 128 --corrupt 8
echo "== verify (source audit): the broken files are found and named; exit 1 means problems found"
$yc verify "$work/data/data.yaml" || [ $? -eq 1 ]
echo "== build: decode once into checksummed shards (broken images excluded, listed in the report)"
$yc build "$work/data/data.yaml" --out "$work/cache" --imgsz 160
echo "== verify (cache integrity)"
$yc verify "$work/cache"
echo "== inspect"
$yc inspect "$work/cache"
$yc inspect "$work/cache" --record 0 --out "$work/record0.jpg"
$yc inspect "$work/cache" --preview "$work/preview.jpg"
echo "== loader bench: augmented batches from the cache vs decoding the source JPEGs every time"
$yc bench "$work/cache" --batch 32 --batches 20 --compare
if [ -x build/tools/yolocache-train ]; then
  echo "== train yolov8n from scratch on CPU (a few minutes on 2 cores), validating every epoch"
  # imgsz 160 keeps it to a few minutes on 2 cores; the shapes are learnable at that size (mAP50 > 0.5).
  build/tools/yolocache-train train --data "$work/cache" --model yolov8n --imgsz 160 --epochs 10 --batch 16 \
      --device cpu --out "$work/run"
  echo "== validate best.pt, then detect objects in a few val images"
  build/tools/yolocache-train val --weights "$work/run/weights/best.pt" --data "$work/cache" --device cpu
  build/tools/yolocache-train predict --weights "$work/run/weights/best.pt" "$work/data/images/val" \
      --out "$work/predict" --device cpu | tail -3
fi
echo "demo finished: outputs in $work"
