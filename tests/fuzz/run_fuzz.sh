#!/usr/bin/env bash
# Runs one fuzz target from its committed seeds, new inputs going to a scratch corpus (never into the seeds), and
# prints one summary line: runs, seconds, executions per second, coverage, and whether it found anything.
# Usage: run_fuzz.sh FUZZER SEEDS_DIR CORPUS_DIR [libFuzzer options...]   (crash inputs land in CORPUS_DIR/..)
set -euo pipefail
fuzzer=$1 seeds=$2 corpus=$3
shift 3
mkdir -p "$corpus"
log="$corpus.log"
status=0
start=$(date +%s%N)
"$fuzzer" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$corpus-" "$@" "$corpus" "$seeds" >"$log" 2>&1 || status=$?
ms=$((($(date +%s%N) - start) / 1000000))
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
name=$(basename "$fuzzer")
if [ "$status" -ne 0 ] || [ -z "$runs" ]; then
  tail -60 "$log"
  echo "FAIL: $name: exit status $status after ${runs:-?} runs (log: $log)"
  exit 1
fi
awk -v n="$name" -v r="$runs" -v ms="$ms" -v c="$cov" \
  'BEGIN { printf "%s: %d runs in %.0f s (%.0f/s), %s, no crash\n", n, r, ms / 1000, r * 1000 / (ms ? ms : 1), c }'
