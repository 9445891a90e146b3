#!/usr/bin/env bash
# Anchors chosen during prefill against a second precompute: over the first DOCS HotpotQA passages (SmolLM2),
# the similarity prefill with and without --anchor-scores (its cost), then kvprep compress --anchors 0.25
# (select) reading the recorded scores and computing them again (--recompute-scores), with the content hashes of
# both results (they must be equal). Writes a markdown report.
# Usage: bench/anchor_scores_bench.sh [OUT.md]   (env: BUILD_DIR=build, KVFUSE_DATA (bench/data_dir.sh), DOCS=200)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
. "$here/bench/data_dir.sh"
data=$(kvf_data_dir "$here")
docs=${DOCS:-200}
out=${1:-$here/docs/results/anchor_scores_cpu.md}
kvprep=$build/bin/kvprep
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -"$docs" "$data/corpus_hotpotqa.jsonl" >"$work/corpus.jsonl"
seconds() {  # the wall seconds of a command (its output to the log)
  local t0
  t0=$(date +%s.%N)
  "$@" >>"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
  python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0"
}
for s in plain scored; do
  "$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$work/$s" >>"$work/log"
  "$kvprep" embed --store "$work/$s" >>"$work/log" 2>&1
  "$kvprep" index --store "$work/$s" >>"$work/log"
  "$kvprep" neighbors --store "$work/$s" >>"$work/log" 2>&1
done
ind_plain=$(seconds "$kvprep" prefill --store "$work/plain" --mode independent)
ind_scored=$(seconds "$kvprep" prefill --store "$work/scored" --mode independent --anchor-scores)
sim_plain=$(seconds "$kvprep" prefill --store "$work/plain" --mode similarity)
sim_scored=$(seconds "$kvprep" prefill --store "$work/scored" --mode similarity --anchor-scores)
select=(compress --store "$work/scored" --from similarity --anchors 0.25)
recorded=$(seconds "$kvprep" "${select[@]}" --to a25-recorded)
recomputed=$(seconds "$kvprep" "${select[@]}" --to a25-recomputed --recompute-scores)
hash() { "$kvprep" inspect --store "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kv"][sys.argv[1]]["content_hash"])' "$2"; }
chunks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stages"][0]["counts"]["chunks"])' "$work/scored/manifest.json")
ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
{
  echo "# Anchor scores recorded during prefill"
  echo
  echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, default threads; $(date -u +%Y-%m-%d)."
  echo "SmolLM2-135M over the first $docs HotpotQA passages ($chunks chunks); anchors: select, 25% of each 100-token segment."
  echo
  echo "| step | plain s | with anchor scores s | ratio |"
  echo "|---|---:|---:|---:|"
  echo "| prefill independent | $ind_plain | $ind_scored | $(ratio "$ind_scored" "$ind_plain") |"
  echo "| prefill similarity | $sim_plain | $sim_scored | $(ratio "$sim_scored" "$sim_plain") |"
  echo
  echo "| compress --anchors 0.25 (select) from similarity | s |"
  echo "|---|---:|"
  echo "| scores computed again (--recompute-scores) | $recomputed |"
  echo "| scores read as prefill recorded them | $recorded |"
  echo
  echo "Select with recorded scores: $(ratio "$recomputed" "$recorded") faster. Same anchors: content hash"
  echo "$(hash "$work/scored" a25-recorded) (recorded) and $(hash "$work/scored" a25-recomputed) (computed again). Stored"
  echo "KV unchanged by recording: similarity $(hash "$work/plain" similarity) (plain) and $(hash "$work/scored" similarity) (with scores)."
  echo
  echo "Command: \`bench/anchor_scores_bench.sh\`"
} >"$out"
cat "$out"
