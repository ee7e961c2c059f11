#!/usr/bin/env bash
# The model's own training-step ceiling, one change at a time, side by side in one process run each
# (issue 5): fused multi-tensor optimizer step vs torch::optim's per-tensor loop.
#   bench/ceiling_gpu.sh BUILD_DIR [MODELS] [BATCH] [CACHE]   (MODELS e.g. "yolov8n yolo11n")
# With CACHE the probe steps on the label tables of 8 real training batches, else on 4 random boxes per image.
# AdamW with Ultralytics' "auto" settings for the 5120-image set (lr0 0.000119, beta1 0.9), AMP fp16.
set -euo pipefail
build=$1 models=${2:-yolov8n} batch=${3:-64} cache=${4:-}
common="${cache:+--data $cache} --batch $batch --imgsz 640 --device cuda --amp --optimizer AdamW --lr0 0.000119 --momentum 0.9 --synthetic-iters 50"
for model in $models; do
  for round in $(seq "${ROUNDS:-2}"); do
    $build/tools/yolocache-train ceiling --model "$model" $common --no-fused-optimizer
    $build/tools/yolocache-train ceiling --model "$model" $common
  done
done
