#!/usr/bin/env bash
# kvrun eval --build-store over the questions' own passages builds the KV of --build-block questions at a time,
# just before they are answered: each block computes only the chunks it adds, and the sweep's answers, scores and
# KV deviations equal those of a sweep over the store built whole first (--build-block 0).
# Usage: kvrun_eval_build_blocks_test.sh KVRUN DATASET
. "$(dirname "$0")/common.sh"
kvrun=$1
dataset=$2  # three questions, four distinct passages (tests/fixtures/queries/three_questions.jsonl)

args=(--dataset "$dataset" --model smollm2 --methods full,reuse,cacheblend,fusion --ratios 0,0.5 --max-tokens 4)
"$kvrun" eval "${args[@]}" --build-store "$work/blocks" --build-block 1 --out "$work/eval-blocks" 2>"$work/log" ||
  { cat "$work/log"; fail "eval --build-block 1"; }
[ "$(grep -c '^eval: the KV of the next 1 questions' "$work/log")" -eq 3 ] || fail "three blocks: $(cat "$work/log")"
# Similarity KV per block: rings' two passages, then bow's new one (Saturn is there), then ice's new one.
computed=$(grep '^  prefill similarity ' "$work/log" | sed 's/.*similarity *//' | tr '\n' ',')
[ "$computed" = "2 chunks computed,1 chunks computed,1 chunks computed," ] || fail "per block: $computed"
"$kvrun" eval "${args[@]}" --build-store "$work/whole" --build-block 0 --out "$work/eval-whole" 2>"$work/log2" ||
  { cat "$work/log2"; fail "eval --build-block 0"; }
grep -q 'the KV of the next' "$work/log2" && fail "--build-block 0 built in blocks"

python3 - "$work/eval-blocks/results.jsonl" "$work/eval-whole/results.jsonl" <<'PY' || fail "blocks differ from whole"
import json, sys
def load(path):
    out = []
    for line in open(path):
        q = json.loads(line)
        q.pop("others_cpu")
        for r in q["runs"]:
            r.pop("ms")
        out.append(q)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
assert [q["id"] for q in a] == ["rings", "bow", "ice"], [q["id"] for q in a]
assert a == b, "the sweeps differ"
PY
for s in blocks whole; do
  python3 -c "import json,sys; st={s['stage']:s for s in json.load(open(sys.argv[1]))['stages']}; \
assert all('missing' not in st['prefill-'+m]['counts'] for m in ('independent','similarity')), st" \
    "$work/$s/manifest.json" || fail "$s: chunks left without KV"
done
echo "ok: eval builds the KV block by block, each block only what it adds, with the whole store's results"
