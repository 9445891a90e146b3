#!/usr/bin/env bash
# make demo: builds the demo store (every kvprep stage, both KV modes; a rerun skips what is done), then answers
# the demo questions with every kvrun method and prints the answers and time to first token side by side.
# env: BUILD_DIR (build), KVFUSE_DATA (../shared/data), STORE (stores/demo), THREADS (all cores)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${BUILD_DIR:-build}
data=${KVFUSE_DATA:-$here/../shared/data}
store=${STORE:-stores/demo}
threads=${THREADS:-0}
corpus=$data/corpus_demo_hotpotqa30.jsonl
[ -f "$corpus" ] || { echo "error: demo corpus $corpus not found (set KVFUSE_DATA to the data folder)" >&2; exit 1; }

echo "== building the demo store $store (kvprep run pipelines/demo.yaml)"
"$build/bin/kvprep" run pipelines/demo.yaml --set "store=$store" --set "corpus=$corpus"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for kv in independent similarity; do
  for method in full reuse cacheblend a3 fusion; do
    [ "$kv" = similarity ] && [ "$method" = full ] && continue  # full reads no stored KV
    "$build/bin/kvrun" batch --store "$store" --queries data/demo/questions.jsonl --out "$work/$kv-$method.jsonl" \
      --kv "$kv" --method "$method" --recompute 0.15 --top-k 5 --max-tokens 32 --threads "$threads" --json \
      >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
  done
done
python3 - "$work" <<'PY'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    rows += [json.loads(l) for l in open(path)]
order = {"full": 0, "reuse": 1, "cacheblend": 2, "a3": 3, "fusion": 4}
for qid in sorted({r["id"] for r in rows}):
    mine = sorted((r for r in rows if r["id"] == qid), key=lambda r: (r["kv_mode"], order[r["method"]]))
    print(f"\n{qid}: {mine[0]['question']}\n  expected: {'; '.join(mine[0]['gold_answers'])}")
    print(f"  {'method':<11} {'kv':<12} {'recomp':>6} {'ttft ms':>8}  answer")
    for r in mine:
        answer = r["answer"].replace("\n", " ")
        print(f"  {r['method']:<11} {r['kv_mode']:<12} {r['n_recomputed']:>6} {r['timings_ms']['ttft']:>8.0f}  {answer[:70]}")
PY
