#!/usr/bin/env bash
# Anchor scores recorded during prefill (kvprep prefill --anchor-scores, pipeline prefill.anchor_scores):
#   1. the stored KV is the KV of a prefill without them (content hashes of independent and similarity);
#   2. kvprep compress --anchors (select) reads them for every chunk and runs no second precompute, and chooses
#      exactly the anchors it chooses when it computes the scores again (--recompute-scores): same content hash;
#   3. the store verifies.
# Usage: anchor_scores_test.sh KVPREP_BINARY
. "$(dirname "$0")/common.sh"
kvprep=$1
here=$(dirname "$0")

"$here/small_corpus.py" "$work/corpus.jsonl" 24
cat >"$work/p.yaml" <<YAML
store: $work/unset
corpus: $work/corpus.jsonl
model: smollm2
threads: 2
neighbors: {top_n: 3}
prefill: {modes: [independent, similarity], batch_tokens: 256}
YAML
hashes() {  # mode:content_hash for the named modes
  "$kvprep" inspect --store "$1" --json | python3 -c '
import json, sys
kv = json.load(sys.stdin)["kv"]
print(" ".join(m + ":" + kv[m]["content_hash"] for m in sys.argv[1:]))' "${@:2}"
}

"$kvprep" run "$work/p.yaml" --set store="$work/plain" >"$work/plain.out" 2>&1 || fail "plain run: $(cat "$work/plain.out")"
"$kvprep" run "$work/p.yaml" --set store="$work/scored" --set prefill.anchor_scores=true >"$work/scored.out" 2>&1 ||
  fail "scored run: $(cat "$work/scored.out")"
[ "$(hashes "$work/plain" independent similarity)" = "$(hashes "$work/scored" independent similarity)" ] ||
  fail "recording anchor scores changed the stored KV"

chunks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stages"][0]["counts"]["chunks"])' "$work/scored/manifest.json")
select=(compress --store "$work/scored" --from similarity --anchors 0.25 --segment 16)
"$kvprep" "${select[@]}" --to recorded >"$work/recorded.out" 2>&1 || fail "compress: $(cat "$work/recorded.out")"
grep -q "^anchor scores: $chunks chunks read as prefill recorded them, 0 computed again" "$work/recorded.out" ||
  fail "compress did not read the recorded scores of all $chunks chunks: $(cat "$work/recorded.out")"
"$kvprep" "${select[@]}" --to recomputed --recompute-scores >"$work/recomputed.out" 2>&1 ||
  fail "compress --recompute-scores: $(cat "$work/recomputed.out")"
grep -q "^anchor scores: 0 chunks read as prefill recorded them, $chunks computed again" "$work/recomputed.out" ||
  fail "--recompute-scores read recorded scores: $(cat "$work/recomputed.out")"
pair=$(hashes "$work/scored" recorded recomputed)
a=${pair%% *} b=${pair##* }
[ -n "${a#*:}" ] && [ "${a#*:}" = "${b#*:}" ] || fail "recorded and recomputed scores chose other anchors ($pair)"
"$kvprep" verify --store "$work/scored" >/dev/null || fail "the store does not verify"
echo "ok: anchor scores recorded during prefill leave the KV as it was and give compress the same anchors"
