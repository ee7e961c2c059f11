#!/usr/bin/env bash
# BENCHMARKS.md, "Streaming a cache from object storage": one synthetic cache (240 images at imgsz 320, one
# shard) pushed to the test Swift server on loopback, read by `yolocache bench` from local disk (--cold)
# and streamed with --cache-budget as 1, 2 and 4 emulated ranks (--world-size N --rank R, one after the
# other): img/s and the bytes each rank fetched; then one epoch of each rank (240 / N samples) with a
# budget that holds the whole cache, so that each rank's total is its share of the epoch (plus the
# windows read ahead into the next epoch). Every run prints its own line; nothing is averaged here.
#
#   bash bench/stream_ranks.sh BUILD_DIR WORK_DIR [ROUNDS]
# COMPRESS (environment, default none): the records' codec (`yolocache build --compress`), e.g. jpeg: the same
# images stored as JPEG records, so each streamed sample is a fraction of the bytes and costs a decode.
# TRAIN (default 240): the synthetic set's train images (2400 with jpeg gives a cache of about the raw one's
# bytes); BUDGET (default 0.025 GiB, about half the raw cache): --cache-budget of the timed rounds.
#
# Starts the Swift server in WORK_DIR/swift unless one answers there already (tests/servers/swift_s3.sh;
# leave it running for further rounds, stop it with `bash tests/servers/swift_s3.sh stop WORK_DIR/swift`).
set -euo pipefail
build=$(realpath "$1")
work=$(realpath -m "$2")
rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
yc="$build/tools/yolocache"
mkdir -p "$work"
if [ ! -s "$work/swift/url" ] || [[ "$(cat "$work/swift/url")" == unavailable* ]]; then
  bash "$here/tests/servers/swift_s3.sh" start "$work/swift"
fi
export AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing AWS_ENDPOINT_URL="$(cat "$work/swift/url")"
unset AWS_PROFILE
compress=${COMPRESS:-none}
train=${TRAIN:-240}
cache=$work/c320-$compress-$train url=s3://bench-stream/c320-$compress-$train
[ -f "$work/data-$train/data.yaml" ] || "$yc" synth "$work/data-$train" --train "$train" --val 16
[ -f "$cache/manifest.json" ] || "$yc" build "$work/data-$train/data.yaml" -o "$cache" --imgsz 320 --compress "$compress"
"$yc" push "$cache" "$url" --create-bucket
flags=(--order windowed --window 8 --read-ahead 16 --batch 16 --batches 30 --threads 2 --profile-samples 0)
budget=${BUDGET:-0.025}  # 26.8 MB: about half the raw cache of 240 images
for round in $(seq "$rounds"); do
  echo "== round $round: local disk"
  "$yc" bench "$cache" "${flags[@]}" --cold | grep -E "cache loader|checksum"
  for n in 1 2 4; do
    for r in $(seq 0 $((n - 1))); do
      echo "== round $round: streamed, rank $r of $n, --cache-budget $budget"
      "$yc" bench "$url" "${flags[@]}" --cache-budget "$budget" --cache-dir "$work/root" --world-size "$n" --rank "$r" |
        grep -E "cache loader|network|checksum"
    done
  done
done
echo "== one epoch per rank (--window 4 --read-ahead 4 --batch 12 --warmup 0, --cache-budget 0.06: no eviction)"
for n in 1 2 4; do
  for r in $(seq 0 $((n - 1))); do
    echo "== rank $r of $n: $((train / 12 / n)) batches of 12"
    "$yc" bench "$url" --order windowed --window 4 --read-ahead 4 --batch 12 --warmup 0 --batches $((train / 12 / n)) \
      --threads 2 --profile-samples 0 --no-checksum --cache-budget 0.06 --cache-dir "$work/root" --world-size "$n" \
      --rank "$r" | grep -E "network"
  done
done
