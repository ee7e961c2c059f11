#!/usr/bin/env bash
# Issue 14's GPU-host figures (prints only; each PART fits one 10-minute device call):
#   bench/yolo11_gpu.sh BUILD_DIR COCO128_DIR ULTRALYTICS_SRC WORKDIR PART
# Data: coco128 train x40 (5120 images) / the 128 originals for val (bench/coco128_x40.sh), 640, batch 64,
# AMP, 16 loader threads / workers, seed 0.
#   throughput  yolocache-train yolo11n and yolo11s, 3 epochs, close_mosaic 0, each with its in-process
#               ceiling (bench/train_gpu.sh), then Ultralytics' yolo11n (its own loader) on the same data.
#   accuracy    yolocache-train yolo11n, 30 epochs, Ultralytics' recipe (close_mosaic 10, val every epoch).
#   ultralytics Ultralytics' yolo11n, the same 30 epochs and recipe (one call of its own: ~8 minutes).
#   finetune    the synth set (yolocache synth: 4 classes, 2048 + 256 images), 10 epochs: from the accuracy
#               run's best.pt (COCO, 80 classes) vs from scratch; mAP50-95 of both.
set -euo pipefail
build=$(realpath "$1") coco=$2 ultra=$(realpath "$3") work=$4 part=$5
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
T=$build/tools/yolocache-train
bash "$repo/bench/coco128_x40.sh" "$coco" "$work/data"
[ -f "$work/cache/manifest.json" ] || "$build/tools/yolocache" build "$work/data/data.yaml" -o "$work/cache" --imgsz 640 | tail -2
ultralytics() {  # MODEL EPOCHS [--val --close-mosaic N]
  mkdir -p "$work/ultralytics"
  PYTHONPATH="$ultra" YOLO_OFFLINE=1 YOLO_CONFIG_DIR="$work/yolo_config" PYTHONUNBUFFERED=1 \
    python3 "$repo/bench/python_loader_gpu.py" ultralytics --loader own --model "$1" --epochs "$2" "${@:3}" \
      --data "$work/data/data.yaml" --out "$work/ultralytics" 2>&1 | tee "$work/ultralytics_$1_$2.log" \
      | grep -E '^RESULT|Error' || true
}
case $part in
  throughput)
    TAIL_LINES=12 bash "$repo/bench/train_gpu.sh" "$build" "$coco" "$work" 3 "yolo11n yolo11s"
    echo "== Ultralytics yolo11n, 3 epochs, batch 64, 640, AMP, 16 workers, close_mosaic 0, no val"
    ultralytics yolo11n 3
    ;;
  accuracy)
    echo "== yolocache-train yolo11n, 30 epochs, close_mosaic 10, val every epoch"
    start=$(date +%s)
    $T train --data "$work/cache" --model yolo11n --epochs 30 --batch 64 --imgsz 640 --device cuda --amp \
        --val-every 1 --seed 0 --out "$work/acc_yolo11n" --exist-ok 2>&1 | grep -v '^\s*$' | tail -8
    echo "wall seconds: $(( $(date +%s) - start ))"
    tail -3 "$work/acc_yolo11n/results.csv"
    ;;
  ultralytics)
    echo "== Ultralytics yolo11n, 30 epochs, close_mosaic 10, val every epoch"
    ultralytics yolo11n 30 --val --close-mosaic 10
    ;;
  finetune)
    [ -d "$work/synth" ] || "$build/tools/yolocache" synth "$work/synth" --train 2048 --val 256 --seed 3 | tail -1
    [ -f "$work/synth_cache/manifest.json" ] || "$build/tools/yolocache" build "$work/synth/data.yaml" -o "$work/synth_cache" --imgsz 640 | tail -1
    for from in pretrained scratch; do
      w=(--model yolo11n)
      [ $from = pretrained ] && w=(--weights "$work/acc_yolo11n/weights/best.pt")
      echo "== yolo11n on synth (4 classes), 10 epochs, from $from"
      $T train --data "$work/synth_cache" "${w[@]}" --epochs 10 --batch 64 --imgsz 640 --device cuda --amp \
          --val-every 1 --seed 0 --out "$work/ft_$from" --exist-ok 2>&1 | grep -E 'Transferred|final|mAP50-95' | tail -3
      tail -1 "$work/ft_$from/results.csv"
    done
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
