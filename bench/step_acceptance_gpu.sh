#!/usr/bin/env bash
# Issue 29's acceptance runs on the GPU host (prints RESULT lines only; each PART fits one device call):
#   bench/step_acceptance_gpu.sh BUILD_DIR COCO128_DIR ULTRALYTICS_SRC WORKDIR PART...
# Data: coco128 train x40 (5120 images) / the 128 originals for val (bench/coco128_x40.sh); 640, batch 64,
# AMP, seed 0. Rates and ratios from each run's log: bench/run_rates.py.
#   whole        yolo11n, 30 epochs, Ultralytics' recipe (close_mosaic 10, val every epoch), --cuda-graphs auto
#                and off (GRAPHS in the environment, default "auto off"): steady rate, whole-run rate / steady,
#                first epoch / steady epoch, mAP50-95 of each. DEPTHWISE (default "auto"): the --depthwise-kernel
#                values to run each with (whole and synth), e.g. "auto cudnn". OVERLAP (default "off"): the
#                --val-overlap values to run each with (whole and synth), e.g. "auto off". WARMUP (default "0"):
#                the --conv-warmup thread counts to run each with (whole and synth), e.g. "8 0". ASSIGNER (default
#                "auto"): the --assigner-kernel values to run each with (whole and synth), e.g. "auto aten".
#   synth        yolo11n, 25 epochs on a 3,000-image set (yolocache synth, 8 classes, 3000 + 300 images,
#                cache built before the run): whole-run rate / steady.
#   ultralytics  yolov8n and yolo11n: ours (6 epochs, close_mosaic 0, val every epoch) against Ultralytics'
#                trainer with its own loader (3 epochs, no val; bench/python_loader_gpu.py), same data.
set -euo pipefail
build=$(realpath "$1") coco=$2 ultra=$(realpath "$3") work=$4
shift 4
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
T=$build/tools/yolocache-train
coco_x40() {  # coco128 x40 and its cache, for the parts that train on it
  bash "$repo/bench/coco128_x40.sh" "$coco" "$work/data"
  [ -f "$work/cache/manifest.json" ] || "$build/tools/yolocache" build "$work/data/data.yaml" -o "$work/cache" --imgsz 640 -j 16 >/dev/null
}
train() {  # NAME DATA MODEL EPOCHS [train options...]
  local name=$1 data=$2 model=$3 epochs=$4
  shift 4
  "$T" train --data "$data" --model "$model" --epochs "$epochs" --batch 64 --imgsz 640 --device cuda --amp --seed 0 \
      --val-every 1 --out "$work/runs/$name" --exist-ok "$@" > "$work/$name.log" 2>&1 || { tail -5 "$work/$name.log"; return 1; }
  grep -E "^(cuda graphs: ([0-9]|off)|conv warm-up)" "$work/$name.log" | sed "s/^/$name: /" || true
  python3 "$repo/bench/run_rates.py" "$work/$name.log" --label "$name"
}
for part in "$@"; do
  case $part in
    whole)
      coco_x40
      for g in ${GRAPHS:-auto off}; do
        for d in ${DEPTHWISE:-auto}; do
          for o in ${OVERLAP:-off}; do
            for w in ${WARMUP:-0}; do
              for k in ${ASSIGNER:-auto}; do
                train "yolo11n_30ep_graphs_${g}_dw_${d}_overlap_${o}_warmup_${w}_assigner_$k" "$work/cache" yolo11n 30 \
                    --cuda-graphs "$g" --depthwise-kernel "$d" --val-overlap "$o" --conv-warmup "$w" --assigner-kernel "$k"
              done
            done
          done
        done
      done
      ;;
    synth)
      [ -f "$work/synth/data.yaml" ] || "$build/tools/yolocache" synth "$work/synth" --train 3000 --val 300 --classes 8 --seed 5 >/dev/null
      [ -f "$work/synth_cache/manifest.json" ] || "$build/tools/yolocache" build "$work/synth/data.yaml" -o "$work/synth_cache" --imgsz 640 -j 16 >/dev/null
      for d in ${DEPTHWISE:-auto}; do
        for o in ${OVERLAP:-off}; do
          for w in ${WARMUP:-0}; do
            for k in ${ASSIGNER:-auto}; do
              train "yolo11n_synth_25ep_dw_${d}_overlap_${o}_warmup_${w}_assigner_$k" "$work/synth_cache" yolo11n 25 \
                  --depthwise-kernel "$d" --val-overlap "$o" --conv-warmup "$w" --assigner-kernel "$k"
            done
          done
        done
      done
      ;;
    ultralytics)
      coco_x40
      for model in yolov8n yolo11n; do
        train "${model}_6ep" "$work/cache" "$model" 6 --close-mosaic 0
        mkdir -p "$work/ultralytics"
        PYTHONPATH="$ultra" YOLO_OFFLINE=1 YOLO_CONFIG_DIR="$work/yolo_config" PYTHONUNBUFFERED=1 \
          python3 "$repo/bench/python_loader_gpu.py" ultralytics --loader own --model "$model" --epochs 3 \
            --data "$work/data/data.yaml" --out "$work/ultralytics" 2>&1 | grep -E '^RESULT|Error' || true
      done
      ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
