#!/usr/bin/env bash
# make demo: writes the demo corpus (FOLDOC entries from the Debian package dict-foldoc, scripts/foldoc_corpus.py),
# builds the demo store (every kvprep stage, both KV modes; a rerun skips what is done), then answers the demo
# questions with every kvrun method and prints the answers and time to first token side by side.
# env: BUILD_DIR (build), MODEL (the decoder preset, qwen0.5b), STORE (stores/demo-MODEL), LIMIT (corpus entries,
#   150), THREADS (all cores)
# The corpus ($STORE/foldoc.jsonl) is rewritten when the dictionary, data/demo/foldoc_entries.txt or the script is
# newer than it; delete it to apply a new LIMIT.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${BUILD_DIR:-build}
model=${MODEL:-qwen0.5b}
store=${STORE:-stores/demo-$model}
limit=${LIMIT:-150}
threads=${THREADS:-0}
questions=data/demo/questions.jsonl
entries=data/demo/foldoc_entries.txt
dictd=/usr/share/dictd
corpus=$store/foldoc.jsonl
start=$SECONDS
step() { echo "== [$((SECONDS - start)) s] $*"; }

fresh=1
for input in "$dictd/foldoc.index" "$dictd/foldoc.dict.dz" "$entries" scripts/foldoc_corpus.py; do
  [ -f "$corpus" ] && [ "$corpus" -nt "$input" ] || fresh=0
done
if [ $fresh = 1 ]; then
  step "demo corpus $corpus is up to date"
else
  step "writing the demo corpus $corpus ($limit FOLDOC entries)"
  python3 scripts/foldoc_corpus.py --entries "$entries" --limit "$limit" --out "$corpus"
fi

step "building the demo store $store on $model (kvprep run pipelines/demo.yaml)"
"$build/bin/kvprep" run pipelines/demo.yaml --set "store=$store" --set "corpus=$corpus" --set "model=$model"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n_questions=$(grep -c . "$questions")
runs=("independent full")
for kv in independent similarity; do
  for method in reuse cacheblend a3 fusion; do runs+=("$kv $method"); done  # full reads no stored KV: once
done
i=0
for run in "${runs[@]}"; do
  read -r kv method <<<"$run"
  i=$((i + 1))
  step "answering $n_questions questions ($i/${#runs[@]}): --method $method --kv $kv"
  "$build/bin/kvrun" batch --store "$store" --model "$model" --queries "$questions" --out "$work/$kv-$method.jsonl" \
    --kv "$kv" --method "$method" --recompute 0.15 --top-k 5 --max-tokens 32 --threads "$threads" --json \
    >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
done
step "done"
python3 - "$work" "$model" <<'PY'
import glob, json, os, statistics, sys
print(f"\nmodel: {sys.argv[2]}")
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    rows += [json.loads(l) for l in open(path)]
order = {"full": 0, "reuse": 1, "cacheblend": 2, "a3": 3, "fusion": 4}
key = lambda r: (r["kv_mode"] != "independent", order[r["method"]])
hit = lambda r: any(a.lower() in r["answer"].lower() for a in r["gold_answers"])
print("\nanswers (top 5 chunks retrieved; recompute 0.15; ok = the answer contains an expected answer)")
for qid in sorted({r["id"] for r in rows}, key=lambda q: (len(q), q)):
    mine = sorted((r for r in rows if r["id"] == qid), key=key)
    print(f"\n{qid}: {mine[0]['question']}\n  expected: {'; '.join(mine[0]['gold_answers'])}")
    print(f"  {'method':<11} {'kv':<12} {'recomp':>6} {'ttft ms':>8} {'ok':>3}  answer")
    for r in mine:
        answer = " ".join(r["answer"].split())
        print(f"  {r['method']:<11} {r['kv_mode']:<12} {r['n_recomputed']:>6} {r['timings_ms']['ttft']:>8.0f} "
              f"{'yes' if hit(r) else '-':>3}  {answer[:80]}")
print(f"\n  {'method':<11} {'kv':<12} {'ok':>5} {'median ttft ms':>15}")
for first in sorted({(r["method"], r["kv_mode"]): r for r in rows}.values(), key=key):
    method, kv = first["method"], first["kv_mode"]
    mine = [r for r in rows if r["method"] == method and r["kv_mode"] == kv]
    ok = f"{sum(map(hit, mine))}/{len(mine)}"
    print(f"  {method:<11} {kv:<12} {ok:>5} {statistics.median(r['timings_ms']['ttft'] for r in mine):>15.0f}")
PY
