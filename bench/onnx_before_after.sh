#!/usr/bin/env bash
# ONNX latency of a model before and after pruning (issue 31): both checkpoints exported to ONNX at each size,
# timed with onnxruntime on the CPU, batch 1 (bench/onnx_latency.py, or .js where only node has onnxruntime):
#   bench/onnx_before_after.sh YOLOCACHE_TRAIN MODEL PLAIN.pt PRUNED.pt WORKDIR [SIZE...]     (sizes: 320 640)
# ONNX_RUNS (environment): timed forwards per model (100). Prints one RESULT line per size and thread count.
set -uo pipefail
T=$1 model=$2 plain=$3 pruned=$4 work=$5
shift 5
sizes=("$@")
[ $# -gt 0 ] || sizes=(320 640)
runs=${ONNX_RUNS:-100}
repo=$(cd "$(dirname "$0")/.." && pwd)
if python3 -c "import onnxruntime" 2>/dev/null; then runner=(python3 "$repo/bench/onnx_latency.py")
else runner=(env NODE_PATH="$repo/.deps/onnxruntime/node_modules" node "$repo/bench/onnx_latency.js"); fi
mkdir -p "$work"
for size in "${sizes[@]}"; do
  "$T" export --weights "$plain" --format onnx --imgsz "$size" --out "$work/${model}_plain_$size.onnx" >/dev/null &&
  "$T" export --weights "$pruned" --format onnx --imgsz "$size" --out "$work/${model}_pruned_$size.onnx" >/dev/null ||
  { echo "RESULT $model ONNX latency at $size: not measured (export failed)"; continue; }
  for threads in 0 1; do  # 0: onnxruntime's own count (all cores); 1: steadier where the cores are shared
    "${runner[@]}" --runs "$runs" --threads $threads "$work/${model}_plain_$size.onnx" "$work/${model}_pruned_$size.onnx" |
      python3 -c "
import json, sys
before, after = (json.loads(l) for l in sys.stdin)
print(f'RESULT $model ONNX latency at $size, threads $threads (onnxruntime CPU, batch 1, median of $runs): '
      f'plain {before[\"median_ms\"]:.2f} ms, pruned {after[\"median_ms\"]:.2f} ms ({after[\"median_ms\"] / before[\"median_ms\"]:.2f}x)')" ||
      echo "RESULT $model ONNX latency at $size: not measured (onnxruntime failed)"
  done
done
