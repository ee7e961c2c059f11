#!/usr/bin/env bash
# The trainer's GPU benchmark (issues 4/5), one run, figures side by side (prints only):
#   bench/train_gpu.sh BUILD_DIR COCO128_DIR WORKDIR [EPOCHS] [MODELS]
# MODELS: space-separated --model names, default yolov8n (e.g. "yolov8n yolo11n").
# TRAIN_ARGS (environment) replaces the default extra options "--close-mosaic 0" (e.g. TRAIN_ARGS="" for
# Ultralytics' close_mosaic 10 in the accuracy run).
# Data: coco128 train replicated x40 (5120 images, symlinks) for training, the 128 originals for val.
# Per model: yolocache-train at 640, batch 64, AMP, with --synthetic-input (the model's own
# fwd+bwd+step ceiling on GPU-resident data, same process) and nvidia-smi dmon SM busy % alongside.
set -euo pipefail
build=$1 coco=$2 work=$3 epochs=${4:-3} models=${5:-yolov8n}
bash "$(dirname "$0")/coco128_x40.sh" "$coco" "$work/data"
echo "== build cache (5120 + 128 images, 640)"
$build/tools/yolocache build "$work/data/data.yaml" -o "$work/cache" --imgsz 640 | tail -4
for model in $models; do
  echo "== $model: $epochs epochs, batch 64, 640, AMP"
  nvidia-smi dmon -s u -d 1 > "$work/dmon_$model.log" 2>&1 &
  dmon=$!
  $build/tools/yolocache-train train --data "$work/cache" --model "$model" --epochs "$epochs" --batch 64 --imgsz 640 \
      --device cuda --amp --val-every 1 ${TRAIN_ARGS---close-mosaic 0} --synthetic-input --out "$work/run_$model" \
      --exist-ok 2>&1 | grep -v '^\s*$' | tail -${TAIL_LINES:-25}
  kill $dmon 2>/dev/null || true
  echo "-- nvidia-smi dmon SM busy % (all samples, then samples >= 1 s into training):"
  awk '$1 ~ /^[0-9]+$/ {print $2}' "$work/dmon_$model.log" | tr '\n' ' '; echo
  cat "$work/run_$model/results.csv" 2>/dev/null || true
done
