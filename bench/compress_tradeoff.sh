#!/usr/bin/env bash
# KV compression trade-off (DESIGN.md §7): from a store's similarity KV, every compression alone and combined
# (int8; int4 and int2 with groups of 32 or 64, with and without the first 4 rows in f16; 8 of 30 layers shared;
# select anchors 0.5 and 0.25 ranked by summed attention, 0.25 and 0.2 ranked by mean attention; append anchors
# 0.25; int3 and int4 with groups of 64; and combinations), then kvrun eval sweeps of fusion at 15% over each
# mode, side by side in one run with the uncompressed similarity KV and Full Reuse of independent KV (the
# normalisation's 0). scripts/compress_report.py turns the store's bytes per token and each sweep's metrics into
# tradeoff.md and tradeoff.png. Resumable: compressions and answered questions are kept.
# Usage: bench/compress_tradeoff.sh [PIPELINE] [LIMIT] [OUT_PREFIX]
#   defaults: pipelines/paper-hotpotqa.yaml (its store must be built), 40 questions, docs/results/compress-hotpotqa
#   sweeps: OUT_PREFIX (summed-attention anchors, sharing, int8), OUT_PREFIX-mean (mean-attention anchors),
#   OUT_PREFIX-lowbit (int4 and int2) and OUT_PREFIX-combos (int4, int3 and int2 alone and after anchors 0.5: the
#   candidates for the 4x and 8x goals); env SWEEPS (default "main mean lowbit combos") picks some
#   env BUILD_DIR, THREADS
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
threads=${THREADS:-2}
pipeline=${1:-$here/pipelines/paper-hotpotqa.yaml}
limit=${2:-40}
out=${3:-$here/docs/results/compress-hotpotqa}
store=$(sed -n 's/^store: *\([^ #]*\).*/\1/p' "$pipeline")
model=$(sed -n 's/^model: *\([^ #]*\).*/\1/p' "$pipeline")
sweeps=${SWEEPS:-main mean lowbit combos}
case $store in /*) ;; *) store=$here/$store ;; esac
[ -f "$store/manifest.json" ] || { echo "error: $store: no store; run kvrun eval --pipeline $pipeline --build-store" >&2; exit 1; }
kvprep=$build/bin/kvprep
kvrun=$build/bin/kvrun
mkdir -p "$out"

compress() {
  echo "== kvprep compress $*" >&2
  "$kvprep" compress --store "$store" --model "$model" --threads "$threads" "$@"
}
{
  "$kvprep" share-search --store "$store" --model "$model" --layers 8 --steps --threads "$threads"
  compress --from similarity --to sim-q8 --quant int8
  compress --from similarity --to sim-s8 --share-layers 8
  compress --from similarity --to sim-a50 --anchors 0.5 --anchor-score sum
  compress --from similarity --to sim-a25 --anchors 0.25 --anchor-score sum
  compress --from similarity --to sim-app25 --anchors 0.25 --anchor-mode append
  compress --from sim-a50 --to sim-a50-q8 --quant int8
  compress --from sim-a25 --to sim-a25-q8 --quant int8
  compress --from sim-a50 --to sim-a50-s8-q8 --share-layers 8 --quant int8
  compress --from sim-a25 --to sim-a25-s8-q8 --share-layers 8 --quant int8
  compress --from similarity --to sim-a25m --anchors 0.25 --anchor-score mean
  compress --from similarity --to sim-a20m --anchors 0.2 --anchor-score mean
  compress --from sim-a25m --to sim-a25m-q8 --quant int8
  compress --from sim-a20m --to sim-a20m-q8 --quant int8
  compress --from similarity --to sim-q4 --quant int4 --quant-group 32
  compress --from similarity --to sim-q4k4 --quant int4 --quant-group 32 --keep-first 4
  compress --from similarity --to sim-q2 --quant int2 --quant-group 32
  compress --from similarity --to sim-q2k4 --quant int2 --quant-group 32 --keep-first 4
  compress --from similarity --to sim-q2g64k4 --quant int2 --quant-group 64 --keep-first 4
  compress --from sim-a50 --to sim-a50-q4 --quant int4 --quant-group 32
  compress --from similarity --to sim-q4g64 --quant int4 --quant-group 64
  compress --from similarity --to sim-q3g64 --quant int3 --quant-group 64
  compress --from similarity --to sim-q3g64k4 --quant int3 --quant-group 64 --keep-first 4
  compress --from sim-a50 --to sim-a50-q4g64 --quant int4 --quant-group 64
  compress --from sim-a50 --to sim-a50-q3g64 --quant int3 --quant-group 64
  compress --from sim-a50 --to sim-a50-q2g64k4 --quant int2 --quant-group 64 --keep-first 4
} 2>&1 | tee "$out/compress.log"
"$kvprep" inspect --store "$store" --json >"$out/inspect.json"

sweep() {  # sweep OUT MODES: fusion at 15% over each mode, full and reuse alongside
  mkdir -p "$1"
  "$kvrun" eval --pipeline "$pipeline" --limit "$limit" --methods full,reuse,fusion --ratios 0.15 --kv "$2" \
    --out "$1" --threads "$threads" --cache-mb 1024
  cp "$out/inspect.json" "$1/inspect.json"
  python3 "$here/scripts/compress_report.py" "$1" "$1/inspect.json"
}
for s in $sweeps; do
  case $s in
    main) sweep "$out" independent,similarity,sim-q8,sim-s8,sim-a50,sim-a25,sim-app25,sim-a50-q8,sim-a25-q8,sim-a50-s8-q8,sim-a25-s8-q8 ;;
    mean) sweep "$out-mean" independent,similarity,sim-q8,sim-a25m,sim-a20m,sim-a25m-q8,sim-a20m-q8 ;;
    lowbit) sweep "$out-lowbit" independent,similarity,sim-q8,sim-q4,sim-q4k4,sim-q2,sim-q2k4,sim-q2g64k4,sim-a50-q4 ;;
    combos) sweep "$out-combos" independent,similarity,sim-q8,sim-q4,sim-q4g64,sim-q3g64,sim-q3g64k4,sim-q2k4,sim-q2g64k4,sim-a50,sim-a50-q4g64,sim-a50-q3g64,sim-a50-q2g64k4 ;;
    *) echo "error: SWEEPS: unknown sweep '$s' (main, mean, lowbit, combos)" >&2; exit 2 ;;
  esac
done
