#!/usr/bin/env bash
# Where low-bit KV (int4/int3/int2) is decoded, side by side: in each layer's key gather (kvrun's default; the
# chunk cache holds the chunks as stored) against once at load (--decode-low-bit-at-load; the cache holds f32).
# For each mode, `kvrun batch` answers the first QUESTIONS questions of the pipeline's data set with fusion at 15%
# (chunk KV cached across the RUNS passes over them, as a server would), both ways in alternating order; the
# table gives the cache's size per chunk, median TTFT and median decoding time per generated token of the passes
# after the first (the cache warm).
# Usage: bench/low_bit_decode_bench.sh PIPELINE MODES   e.g. pipelines/paper-hotpotqa-qwen0.5b.yaml sim-q4,sim-q3g64
#   env BUILD_DIR, THREADS (2), QUESTIONS (10), RUNS (3), KVFUSE_DATA
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
. "$here/bench/data_dir.sh"
data=$(kvf_data_dir "$here")
threads=${THREADS:-2}
questions=${QUESTIONS:-10}
runs=${RUNS:-3}
[ $# -eq 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
pipeline=$1
modes=$2
store=$(sed -n 's/^store: *\([^ #]*\).*/\1/p' "$pipeline")
case $store in /*) ;; *) store=$here/$store ;; esac
model=$(sed -n 's/^model: *\([^ #]*\).*/\1/p' "$pipeline")
dataset=$data/$(sed -n 's/^ *dataset: *\([^ #]*\).*/\1/p' "$pipeline")
[ -f "$store/manifest.json" ] || { echo "error: $store: no store; run kvrun eval --pipeline $pipeline --build-store" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/bench/questions_of.py" "$dataset" "$questions" "$work"
# RUNS passes over the questions in one file: the later passes find every chunk in the cache.
for _ in $(seq "$runs"); do cat "$work/questions.jsonl"; done >"$work/passes.jsonl"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $threads threads"
echo "store: $store ($model); $questions questions, $runs passes (the first not counted), fusion at 0.15"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| KV mode | decoded | cache MiB per chunk | TTFT ms | prefill ms | decode ms/token |"
echo "|---|---|---:|---:|---:|---:|"
for mode in ${modes//,/ }; do
  for decode in gather load gather load; do  # twice each, alternating; the medians pool both
    flags=()
    [ "$decode" = load ] && flags+=(--decode-low-bit-at-load)
    "$build/bin/kvrun" batch --store "$store" --model "$model" --kv "$mode" --method fusion --recompute 0.15 \
      --queries "$work/passes.jsonl" --out "$work/$mode-$decode-$RANDOM.jsonl" --json --threads "$threads" \
      --max-tokens 32 --cache-mb 4096 "${flags[@]}" >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
    grep '^batch: chunk KV cache' "$work/log" >"$work/$mode-$decode-cache-$RANDOM" || true
  done
  python3 - "$work" "$mode" "$questions" <<'PY'
import glob, json, re, statistics, sys
work, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for decode in ("gather", "load"):
    ttft, prefill, per_token, per_chunk = [], [], [], []
    for path in glob.glob(f"{work}/{mode}-{decode}-[0-9]*.jsonl"):
        rows = [json.loads(line) for line in open(path)][n:]  # the first pass loads the chunks
        ttft += [r["timings_ms"]["ttft"] for r in rows]
        prefill += [r["timings_ms"]["prefill"] for r in rows]
        per_token += [r["timings_ms"]["decode"] / (r["generated_tokens"] - 1) for r in rows if r["generated_tokens"] > 1]
    for path in glob.glob(f"{work}/{mode}-{decode}-cache-*"):
        m = re.search(r"holds (\d+) chunks in ([0-9.]+) MiB", open(path).read())
        per_chunk.append(float(m.group(2)) / int(m.group(1)))
    print(f"| {mode} | {decode} | {statistics.median(per_chunk):.2f} | {statistics.median(ttft):.0f} | "
          f"{statistics.median(prefill):.0f} | {statistics.median(per_token):.1f} |")
PY
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
