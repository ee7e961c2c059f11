#!/usr/bin/env bash
# The data-side benchmarks of issues 2 and 3, side by side in one run (prints only):
#   bench/data_side.sh BUILD_DIR DATA_YAML WORKDIR
# 1. build throughput per core vs bare tjDecompress2+resize (decode_bench, 1 thread)
# 2. random record reads from an uncompressed cache in page cache (record_read_bench)
# 3. loader train mode at 640, batch 64, default hyps: 1..N threads (scaling, next to the machine's own
#    scaling from cpu_scaling_bench), val mode, zstd cost,
#    and the naive decode-every-time loader for comparison
set -euo pipefail
build=$1 data=$2 work=$3
yc=$build/tools/yolocache
mkdir -p "$work"
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "== 1. build throughput per core (imgsz 640)"
$build/bench/decode_bench "$data" --imgsz 640 --rounds 3
echo "== caches"
$yc build "$data" -o "$work/raw" --imgsz 640 | tail -3
$yc build "$data" -o "$work/zstd" --imgsz 640 --compress zstd | tail -3
cat "$work"/raw/*.shard "$work"/zstd/*.shard > /dev/null   # page cache
echo "== 2. record reads"
$build/bench/record_read_bench --images "$(dirname "$data")/images/train2017" --threads 1 "$(nproc)" --seconds 2
echo "== 3. loader, train mode, 640, batch 64"
n=$(nproc)
echo "-- the machine's own 1 -> $n thread scaling (clock, compute- and memory-bound reference)"
$build/bench/cpu_scaling_bench --threads 1,2,4,8,"$n" --seconds 1
# Thread counts side by side, in rounds (one thread's speed drifts on shared hosts), medians last.
$yc bench "$work/raw" --scaling "1,2,4,8,$n" --rounds 3 --batches 12
$yc bench "$work/raw" --threads 1 --batches 8 --compare
$yc bench "$work/raw" --threads "$n" --batches 60 --compare
echo "== val mode (rect, batch 64), 1 and $n threads"
$yc bench "$work/raw" --mode val --threads 1 --batches 6 --profile-samples 0 | sed -n 2p
$yc bench "$work/raw" --mode val --threads "$n" --batches 30 --profile-samples 0 | sed -n 2p
echo "== zstd-compressed shards, 1 and $n threads"
$yc inspect "$work/zstd" | grep bytes
$yc bench "$work/zstd" --threads 1 --batches 8 --profile-samples 0 | sed -n 2p
$yc bench "$work/zstd" --threads "$n" --batches 60 --profile-samples 0 | sed -n 2p
echo "== determinism: checksums at 1 and $n threads"
$yc bench "$work/raw" --threads 1 --batches 4 --profile-samples 0 | tail -1
$yc bench "$work/raw" --threads "$n" --batches 4 --profile-samples 0 | tail -1
