#!/usr/bin/env bash
# scripts/fidelity_report.py joins a --reference-kv sweep's metrics with the store's bytes per mode and checks the
# storage goals: a mode 8x smaller on disk with 96% identical answers and an F1 interval within +-0.02 meets the
# 8x goal, one with 50% does not, a 16x mode is judged by its F1 ratio; a sweep without a reference is refused.
# Usage: fidelity_report_test.sh [REPO_ROOT]
. "$(dirname "$0")/common.sh"
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
script=$root/scripts/fidelity_report.py
sweep=$work/sweep
mkdir "$sweep"
cols="method,kv,ratio,n,f1,f1_low,f1_high,ttft_ms,ref_n"
for m in ref_identical ref_kl ref_gold_ll_delta ref_f1_delta; do cols="$cols,$m,${m}_low,${m}_high"; done
cat >"$sweep/metrics.csv" <<CSV
$cols
full,-,1,4,0.5,0.4,0.6,1000,0,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan
fusion,similarity,0.15,4,0.4,0.3,0.5,300,4,1,1,1,0,0,0,0,0,0,0,0,0
fusion,good8,0.15,4,0.4,0.3,0.5,310,4,0.96,0.9,1,0.001,0,0.002,-0.01,-0.02,0,0.0,-0.01,0.01
fusion,bad8,0.15,4,0.3,0.2,0.4,320,4,0.5,0.3,0.7,0.3,0.2,0.4,-0.2,-0.3,-0.1,-0.1,-0.15,-0.05
fusion,x16,0.15,4,0.39,0.3,0.5,330,4,0.6,0.4,0.8,0.2,0.1,0.3,-0.1,-0.2,0,-0.01,-0.05,0.03
CSV
echo '{"dataset": "/data/q.jsonl", "model": "m", "kv": ["similarity", "good8", "bad8", "x16"], "reference_kv": "similarity"}' \
  >"$sweep/sweep.json"
mode() { printf '"%s": {"dtype": "%s", "entropy": "%s", "kv_bytes_per_token": %s, "disk_kv_bytes_per_token": %s}' "$@"; }
echo "{\"kv\": {$(mode similarity f16 none 1600 1600), $(mode good8 int2 zstd:19 250 200), $(mode bad8 int2 none 200 199), $(mode x16 int2 zstd:19 120 100)}}" \
  >"$work/inspect.json"

python3 "$script" "$sweep" "$work/inspect.json" >"$work/out" 2>&1 || fail "the report failed"
grep -q "^| fusion | good8 | int2 | zstd:19 | 250 | 6.40 | 200 | 8.00 | 4 | 0.960 \[0.900, 1.000\] |" "$sweep/fidelity.md" ||
  fail "good8's row: $(grep good8 "$sweep/fidelity.md")"
grep -q "over \`good8\`: 8x goal met (8.00x on disk: yes; identical 96.0%: yes;" "$sweep/fidelity.md" ||
  fail "good8 should meet the 8x goal: $(cat "$sweep/fidelity.md")"
grep -q "over \`bad8\`: 8x goal not met (8.04x on disk: yes; identical 50.0%: no; F1 delta interval \[-0.150, -0.050\] within +-0.02: no)" \
  "$sweep/fidelity.md" || fail "bad8"
grep -q "over \`x16\`: 16x goal met (16.00x on disk; F1 0.97x similarity's)" "$sweep/fidelity.md" || fail "x16"
grep -q "over \`x16\`: 8x goal not met (16.00x on disk: yes; identical 60.0%: no" "$sweep/fidelity.md" || fail "x16 at 8x"
[ -f "$sweep/fidelity.gp" ] || fail "no plot script"

echo '{"dataset": "/data/q.jsonl", "kv": ["similarity"]}' >"$sweep/sweep.json"
if python3 "$script" "$sweep" "$work/inspect.json" >"$work/out" 2>&1; then fail "a sweep without a reference"; fi
grep -q "no reference_kv" "$work/out" || fail "the refusal does not say why"
echo "fidelity_report: rows, goals and refusal ok"
