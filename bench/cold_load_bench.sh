#!/usr/bin/env bash
# Cold-load TTFT for every KV mode of a store: build/bin/kvf_ttft_bench --cold (each mode's shard files dropped
# from the page cache before every query, so chunk KV comes from the disk) and warm, reuse and fusion at 15%, the
# first QUESTIONS questions of the store's data set with 10 chunks each. Fewer bytes per token should load faster
# (CacheBlend §5, FusionRAG Fig. 19); the table gives load and TTFT medians per mode side by side. Low-bit modes
# (int4/int3/int2) run twice: decoded where each layer gathers them (kvrun's default) and decoded to f32 at load
# (--decode-low-bit-at-load).
# Usage: bench/cold_load_bench.sh [PIPELINE] [MODES]
#   defaults: pipelines/paper-hotpotqa.yaml (its store built, e.g. by bench/compress_tradeoff.sh) and every KV mode
#   the store holds; env BUILD_DIR, THREADS (2), QUESTIONS (5), RUNS (5), KVFUSE_DATA
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
. "$here/bench/data_dir.sh"
data=$(kvf_data_dir "$here")
threads=${THREADS:-2}
questions=${QUESTIONS:-5}
runs=${RUNS:-5}
pipeline=${1:-$here/pipelines/paper-hotpotqa.yaml}
store=$(sed -n 's/^store: *\([^ #]*\).*/\1/p' "$pipeline")
case $store in /*) ;; *) store=$here/$store ;; esac
model=$(sed -n 's/^model: *\([^ #]*\).*/\1/p' "$pipeline")
dataset=$data/$(sed -n 's/^ *dataset: *\([^ #]*\).*/\1/p' "$pipeline")
[ -f "$store/manifest.json" ] || { echo "error: $store: no store; run kvrun eval --pipeline $pipeline --build-store" >&2; exit 1; }
modes=${2:-$("$build/bin/kvprep" inspect --store "$store" --json |
  python3 -c 'import json, sys; print(",".join(m for m in json.load(sys.stdin)["kv"] if m != "system"))')}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/bench/questions_of.py" "$dataset" "$questions" "$work"
"$build/bin/kvprep" inspect --store "$store" --json >"$work/inspect.json"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; disk: $(df --output=source "$store" | tail -1)"
echo "store: $store ($model); $questions questions x 10 chunks, $runs runs after a warm-up, $threads threads"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| KV mode | bytes/token | low-bit decoded | page cache | reuse load ms | reuse TTFT ms | fusion 0.15 load ms | fusion 0.15 TTFT ms |"
echo "|---|---:|---|---|---:|---:|---:|---:|"
for mode in ${modes//,/ }; do
  read -r bytes dtype < <(python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["kv"][sys.argv[2]]
print(round(m["bytes_per_token"]), m["dtype"])' "$work/inspect.json" "$mode")
  decodes=-
  case $dtype in int4 | int3 | int2) decodes="gather load" ;; esac
  for decode in $decodes; do
    for cache in cold warm; do
      flags=()
      [ "$cache" = cold ] && flags+=(--cold)
      [ "$decode" = load ] && flags+=(--decode-low-bit-at-load)
      "$build/bin/kvf_ttft_bench" --store "$store" --queries "$work/questions.jsonl" --model "$model" --kv "$mode" \
        --methods reuse,fusion --ratios 0.15 --questions "$questions" --chunks 10 --runs "$runs" --threads "$threads" \
        "${flags[@]}" 2>/dev/null >"$work/table"
      python3 - "$work/table" "$mode" "$bytes" "$decode" "$cache" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 8 and cells[0] in ("reuse", "fusion"):
        rows[cells[0]] = (cells[3], cells[2])  # load, ttft
mode, bytes_, decode, cache = sys.argv[2:6]
print(f"| {mode} | {bytes_} | {decode} | {cache} | {rows['reuse'][0]} | {rows['reuse'][1]} | {rows['fusion'][0]} | {rows['fusion'][1]} |")
PY
    done
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
