#!/usr/bin/env bash
# scripts/compare_sweeps.py pairs sweeps over their common questions: a sweep without full attention and Full Reuse
# is refused unless --references-from-baseline (or --references-from) lends it another's, and then its paired figures
# are exact; NAME=METHOD@FOLDER pairs one sweep's method against another's.
# Usage: compare_sweeps_test.sh [REPO_ROOT]
. "$(dirname "$0")/common.sh"
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}

# Four questions. Baseline: full F1 1, Full Reuse 0, fusion 0.5 (gold LL the same). The other sweep ran only
# fusion, at 0.75, and cacheblend at 0.25, and one question more, which the baseline lacks and the pairing must
# leave out.
mkdir "$work/base" "$work/other"
# Fusion's runs also carry an answer, recomputed tokens and a TTFT: the other sweep answers q1 and q2 as the
# baseline does, recomputes 30 tokens instead of 20 and takes 200 ms instead of 100 (the median of 100/300/200/200).
run() { printf '{"method":"%s","kv":"%s","ratio":%s,"f1":%s,"gold_ll":%s%s}' "$1" "$2" "$3" "$4" "$4" "${5:-}"; }
extra() { printf ',"answer":"%s","n_recomputed":%s,"ms":{"ttft":%s}' "$1" "$2" "$3"; }
base_ttft=(0 100 100 100 100) other_ttft=(0 100 300 200 200 200) other_answer=(- a a c c c)
for q in 1 2 3 4; do
  printf '{"id":"q%s","runs":[%s,%s,%s]}\n' "$q" "$(run full - 1 1)" "$(run reuse independent 0 0)" \
    "$(run fusion similarity 0.15 0.5 "$(extra a 20 "${base_ttft[$q]}")")" >>"$work/base/results.jsonl"
done
for q in 1 2 3 4 5; do
  printf '{"id":"q%s","runs":[%s,%s]}\n' "$q" \
    "$(run fusion similarity 0.15 0.75 "$(extra "${other_answer[$q]}" 30 "${other_ttft[$q]}")")" \
    "$(run cacheblend similarity 0.15 0.25)" >>"$work/other/results.jsonl"
done

script=$root/scripts/compare_sweeps.py
if python3 "$script" base="$work/base" other="$work/other" >"$work/out" 2>&1; then
  fail "a sweep without full attention was compared without --references-from-baseline"
fi
grep -q "other/results.jsonl: no question has fusion over similarity at 0.15 and full$" "$work/out" ||
  fail "the refusal does not name the file and what it lacks"

python3 "$script" --references-from-baseline base="$work/base" other="$work/other" >"$work/out" 2>&1 ||
  fail "--references-from-baseline failed"
grep -q "; 4 questions every sweep answered" "$work/out" || fail "the pairing did not keep the 4 common questions"
grep -q "^| base | 0.500 | 0.50 | 0.50 \[0.50, 0.50\] | 0.50 \[0.50, 0.50\] | - | 20 | 100 | 100.0% | - | - |$" "$work/out" ||
  fail "the baseline's row is wrong"
grep -q "^| other | 0.750 | 0.75 | 0.75 \[0.75, 0.75\] | 0.75 \[0.75, 0.75\] | - | 30 | 200 | 50.0% | +0.250 \[+0.250, +0.250\] | +0.250 \[+0.250, +0.250\] |$" \
  "$work/out" || fail "the borrowed references did not give the other sweep's paired figures"

# The other sweep's cacheblend against its own fusion, both with the base sweep's references.
python3 "$script" --references-from "$work/base" fusion="$work/other" cacheblend=cacheblend@"$work/other" \
  >"$work/out" 2>&1 || fail "--references-from with METHOD@FOLDER failed"
grep -q "^cacheblend, fusion over similarity KV at 0.15; 4 questions" "$work/out" || fail "the header"
grep -q "^| cacheblend | 0.250 | 0.25 | 0.25 \[0.25, 0.25\] | 0.25 \[0.25, 0.25\] | - | - | - | - | -0.500 \[-0.500, -0.500\] |" \
  "$work/out" || fail "cacheblend of one sweep was not paired against fusion of the other"
echo "compare_sweeps: refusal, borrowed references and methods across sweeps ok"
