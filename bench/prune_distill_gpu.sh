#!/usr/bin/env bash
# Issue 31's acceptance runs on the GPU host (prints RESULT lines; each PART fits one device call):
#   bench/prune_distill_gpu.sh BUILD_DIR WORKDIR PART...      (OUT: where the pruned best.pt files go)
# Data: `yolocache synth` (8 classes, 3000 train / 300 val images, seed 7), cached at 320; batch 64, AMP, seed 0 (distill: 0, 1),
# val every epoch. 320 rather than 640 keeps every run of a part inside one 10-minute device call.
#   prune:MODEL   MODEL (yolov8s, yolo11s) trained EPOCHS (default 30) epochs plain, against EPOCHS/2 epochs with
#                 --sparsity SR (default 5e-4), pruned with --gflops CUT (the smallest ratio that removes 30% of
#                 the GFLOPs), then fine-tuned EPOCHS/2 epochs from the pruned checkpoint: the same
#                 total epochs. Parameters, GFLOPs, mAP50-95, train img/s and ONNX latency (onnxruntime on
#                 the CPU, batch 1, at IMGSZ and 640: bench/onnx_before_after.sh) of both.
#                 RECIPE=split (default): the two halves are the plain run's schedule cut at the prune: the
#                 sparse half ends at the plain run's mid-run learning rate with Mosaic on throughout
#                 (--lrf 0.505 --close-mosaic 0), the fine-tune starts there without warm-up (the plain run's
#                 optimizer at lr0 x 0.505, --lrf 0.01/0.505, --warmup-epochs 0) and closes Mosaic at the
#                 same epoch. RECIPE=restart: each half is a run of its own (warm-up, decay, close_mosaic).
#                 RECIPE=inrun: one run of EPOCHS with --prune-at EPOCHS/2 --prune-gflops CUT.
#   pruned:MODEL  prune:MODEL's sparse half and its prune only; the pruned checkpoint goes to OUT, for ONNX
#                 latency where this build cannot export ONNX (the GPU host's sysroot has no libonnx).
#   distill       yolov8n EPOCHS epochs alone against --teacher (prune:yolov8s's plain yolov8s), seeds 0 and 1.
set -euo pipefail
build=$(realpath "$1") work=$2
shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
out=${OUT:-$work/out}
mkdir -p "$out"
# EPOCHS, SR, CUT (the share of the GFLOPs pruned, 0.30), ONNX_SIZES (the export sizes timed, "IMGSZ 640";
# empty: no ONNX latency), ONNX_RUNS (timed forwards per model, 100), and for a smoke test elsewhere DEVICE
# (cuda), IMGSZ (320), IMAGES (3000 train images).
T=$build/tools/yolocache-train epochs=${EPOCHS:-30} sr=${SR:-5e-4} cut=${CUT:-0.30} device=${DEVICE:-cuda} imgsz=${IMGSZ:-320}
images=${IMAGES:-3000} recipe=${RECIPE:-split} onnx_sizes=${ONNX_SIZES-${IMGSZ:-320} 640} onnx_runs=${ONNX_RUNS:-100}
half=$((epochs / 2))
# The plain schedule cut at HALF (Ultralytics' linear lf(x) = 1 - (1 - lrf) x / epochs, lrf 0.01): the fraction
# of lr0 at the cut, and what each half needs to follow it (recipe split).
mid=$(python3 -c "print(round(1 - 0.99 * $half / $epochs, 6))")
sparse_schedule=() finetune_schedule=()
if [ "$recipe" = split ]; then
  rest=$((epochs - half))
  sparse_schedule=(--lrf "$mid" --close-mosaic $((rest < 10 ? 10 - rest : 0)))  # Mosaic closes 10 epochs before the end
fi
[ -f "$work/synth/data.yaml" ] || "$build/tools/yolocache" synth "$work/synth" --train "$images" --val $((images / 10)) --classes 8 --seed 7 >/dev/null
[ -f "$work/cache/manifest.json" ] || "$build/tools/yolocache" build "$work/synth/data.yaml" -o "$work/cache" --imgsz "$imgsz" -j 16 >/dev/null
train() {  # NAME EPOCHS [train options...]: the run's steady img/s and last mAP50-95 (a finished run in WORKDIR is reused)
  local name=$1 n=$2
  shift 2
  grep -q "^$n epochs run" "$work/$name.log" 2>/dev/null ||
  "$T" train --data "$work/cache" --epochs "$n" --batch 64 --imgsz "$imgsz" --device "$device" --amp --val-every 1 \
      --out "$work/runs/$name" --exist-ok "$@" > "$work/$name.log" 2>&1 || { tail -5 "$work/$name.log"; return 1; }
  grep -E "^cuda graphs: ([0-9]|off)" "$work/$name.log" | sed "s/^/RESULT $name: /" || true
  python3 "$repo/bench/run_rates.py" "$work/$name.log" --label "$name" | grep -v "img/s per epoch"
}
report_pruned() {  # MODEL RUN: the pruned run's mAP50-95 against the plain run's, its best.pt (OUT), ONNX latency
  local model=$1 run=$2
  python3 - "$work" "$model" "$run" <<'PY'
import re, sys
def map5095(name):
    rows = [l for l in open(f"{sys.argv[1]}/{name}.log") if re.match(r"^epoch \d+:", l)]
    return float(re.search(r"mAP50-95 ([\d.]+)", rows[-1])[1])
plain, pruned = map5095(f"{sys.argv[2]}_plain"), map5095(sys.argv[3])
print(f"RESULT {sys.argv[2]} mAP50-95 plain {plain:.4f}, {sys.argv[3]} (sparse + pruned + fine-tuned) {pruned:.4f}: "
      f"{pruned - plain:+.4f}")
PY
  cp "$work/runs/$run/weights/best.pt" "$out/${run}_best.pt"
  [ -z "$onnx_sizes" ] ||
    ONNX_RUNS=$onnx_runs bash "$repo/bench/onnx_before_after.sh" "$T" "$model" "$work/runs/${model}_plain/weights/best.pt" \
        "$work/runs/$run/weights/best.pt" "$work" $onnx_sizes
}
sparse_and_prune() {  # MODEL: the sparse half (--sparsity SR), then prune --gflops CUT -> WORKDIR/MODEL_pruned_RECIPE.pt
  local model=$1
  train "${model}_sparse_$recipe" "$half" --model "$model" --sparsity "$sr" "${sparse_schedule[@]}"
  "$T" prune --weights "$work/runs/${model}_sparse_$recipe/weights/last.pt" --gflops "$cut" --imgsz "$imgsz" \
      --out "$work/${model}_pruned_$recipe.pt" --json > "$work/${model}_prune_$recipe.json" ||
      { echo "RESULT $model: prune --gflops $cut refused"; return 1; }
  python3 - "$work/${model}_prune_$recipe.json" "$model" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
b, a = j["before"], j["after"]
print(f"RESULT {sys.argv[2]} prune --gflops {j['gflops_target']} (--ratio {j['ratio']:.3f}): parameters {b['parameters'] / 1e6:.2f}M -> {a['parameters'] / 1e6:.2f}M "
  f"({1 - a['parameters'] / b['parameters']:.1%} fewer), GFLOPs at {j['imgsz']} {b['gflops']:.2f} -> {a['gflops']:.2f} "
  f"({1 - a['gflops'] / b['gflops']:.1%} fewer)")
PY
}
for part in "$@"; do
  case $part in
    prune:*)
      model=${part#prune:}
      train "${model}_plain" "$epochs" --model "$model"
      [ "$model" = yolov8s ] && cp "$work/runs/${model}_plain/weights/best.pt" "$work/teacher.pt"
      if [ "$recipe" = inrun ]; then  # one run: --prune-at, the same GFLOPs cut
        train "${model}_inrun" "$epochs" --model "$model" --sparsity "$sr" --prune-at "$half" --prune-gflops "$cut"
        grep "^pruned after" "$work/${model}_inrun.log" | sed "s/^/RESULT ${model}_inrun: /"
        report_pruned "$model" "${model}_inrun"
        continue
      fi
      sparse_and_prune "$model" || continue
      if [ "$recipe" = split ]; then  # the plain run's optimizer as it resolved "auto" (its log's optimizer line)
        read -r opt lr0 momentum <<<"$(sed -nE 's/^optimizer: ([A-Za-z]+)\(lr=([0-9.e-]+), momentum=([0-9.]+)\).*/\1 \2 \3/p' \
                                      "$work/${model}_plain.log")"
        finetune_schedule=(--optimizer "$opt" --lr0 "$(python3 -c "print($lr0 * $mid)")" --momentum "$momentum" --warmup-epochs 0
                           --lrf "$(python3 -c "print(round(0.01 / $mid, 6))")" --close-mosaic 10)
      fi
      train "${model}_pruned_ft_$recipe" "$half" --weights "$work/${model}_pruned_$recipe.pt" "${finetune_schedule[@]}"
      report_pruned "$model" "${model}_pruned_ft_$recipe"
      ;;
    pruned:*)  # the sparse half and the prune only, the pruned checkpoint to OUT (ONNX latency measured elsewhere)
      model=${part#pruned:}
      sparse_and_prune "$model" && cp "$work/${model}_pruned_$recipe.pt" "$out/"
      ;;
    distill)
      teacher=$work/teacher.pt
      for seed in 0 1; do
        train "yolov8n_alone_s$seed" "$epochs" --model yolov8n --seed "$seed"
        train "yolov8n_distilled_s$seed" "$epochs" --model yolov8n --seed "$seed" --teacher "$teacher"
      done
      python3 - "$work" <<'PY'
import re, statistics, sys
def map5095(name):
    rows = [l for l in open(f"{sys.argv[1]}/{name}.log") if re.match(r"^epoch \d+:", l)]
    return float(re.search(r"mAP50-95 ([\d.]+)", rows[-1])[1])
alone = [map5095(f"yolov8n_alone_s{s}") for s in (0, 1)]
taught = [map5095(f"yolov8n_distilled_s{s}") for s in (0, 1)]
print("RESULT distillation mAP50-95, seeds 0 and 1: alone", alone, "taught", taught,
      f"difference of the means {statistics.mean(taught) - statistics.mean(alone):+.4f}")
PY
      ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
