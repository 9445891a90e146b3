#!/usr/bin/env bash
# kvrun eval --build-store builds what the requested KV modes read: --kv similarity alone also prefills the
# independent KV (the neighbours' context of similarity mode), and the sweep then reads similarity KV only. A
# mode nothing makes is refused before any work, naming --kv and the mode.
# Usage: kvrun_eval_kv_modes_test.sh KVRUN DATASET
. "$(dirname "$0")/common.sh"
kvrun=$1
dataset=$2  # three questions, four distinct passages (tests/fixtures/queries/three_questions.jsonl)

"$kvrun" eval --dataset "$dataset" --model smollm2 --build-store "$work/store" --kv similarity --methods full,reuse,fusion \
  --ratios 0,0.5 --max-tokens 2 --out "$work/eval" 2>"$work/log" || { cat "$work/log"; fail "eval --kv similarity"; }
python3 - "$work/store/manifest.json" "$work/eval/results.jsonl" <<'PY' || fail "modes built or read"
import json, sys
stages = [s["stage"] for s in json.load(open(sys.argv[1]))["stages"]]
assert "prefill-independent" in stages and "prefill-similarity" in stages, stages
for line in open(sys.argv[2]):
    runs = json.loads(line)["runs"]
    assert {r["kv"] for r in runs if r["method"] != "full"} == {"similarity"}, runs
PY

# A KV mode that is neither a prefill mode nor made by the pipeline's compress list: one error line, no store.
if "$kvrun" eval --dataset "$dataset" --build-store "$work/store2" --kv sim-a25 --out "$work/eval2" \
  2>"$work/err"; then fail "--kv sim-a25 accepted"; fi
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "stderr: $(cat "$work/err")"
grep -q "^error: eval --kv: KV mode 'sim-a25' is neither a prefill mode" "$work/err" || fail "message: $(cat "$work/err")"
echo "ok: kvrun eval --kv similarity builds independent first; unknown modes are named"
