#!/usr/bin/env bash
# Readers see the last complete commit while a writer works: `kvrun ask --top-k 2` loops (two readers side by side)
# while `kvprep run` updates the store several times over a changed corpus (documents added and edited). Every ask
# must answer: no crash (a signal, exit status > 128) and no failure (any other non-zero status), over at least
# MIN_ASKS asks and until the last update is done. Then the store verifies and an ask retrieves an added document.
# Usage: readers_during_update_test.sh KVPREP KVRUN [ROUNDS] [MIN_ASKS]
. "$(dirname "$0")/common.sh"
set +e  # each step's status is checked by hand
kvprep=$1 kvrun=$2 rounds=${3:-3} min_asks=${4:-120}
here=$(dirname "$0")
store=$work/store

# Round r's corpus: the 3 first documents, the second one edited in every round, and 12 more documents per round.
corpus() {  # corpus ROUND OUT
  python3 - "$1" "$2" <<'PY'
import json, sys
r, out = int(sys.argv[1]), sys.argv[2]
words = "river bridge valley mill station harbour tower market garden castle forest meadow".split()
with open(out, "w") as f:
    for i in range(3 + 12 * r):
        text = " ".join(f"The {words[(i + j) % len(words)]} number {i * 7 + j} stands near the old road." for j in range(6))
        if i == 1 and r > 0:
            text += f" It was rebuilt in round {r}, by the new owner of the {words[r % len(words)]}."
        f.write(json.dumps({"id": f"d{i}", "title": f"Place {i}", "text": text}) + "\n")
PY
}
corpus 0 "$work/corpus.jsonl"
cat >"$work/p.yaml" <<YAML
store: $store
corpus: $work/corpus.jsonl
model: smollm2
threads: 1
prefill: {modes: [independent], batch_tokens: 256, shard_mb: 1}
YAML
"$kvprep" run "$work/p.yaml" >"$work/run0.out" 2>&1 || fail "the first run: $(cat "$work/run0.out")"

questions=("Where is the old mill?" "Who rebuilt it?" "What stands near the old road?" "Which tower is number 40?")
reader() {  # reader ID: asks until $work/done exists and at least MIN_ASKS/2 were asked; one line per ask
  local id=$1 n=0 status
  while [ ! -e "$work/done" ] || [ "$n" -lt $((min_asks / 2)) ]; do
    status=0
    "$kvrun" ask --store "$store" --question "${questions[$((n % 4))]}" --top-k 2 --method reuse --max-tokens 2 \
      --threads 1 >"$work/ask$id.out" 2>"$work/ask$id.err" || status=$?
    echo "$status" >>"$work/status$id"
    if [ "$status" -ne 0 ]; then
      { echo "reader $id ask $n: exit $status"; head -c 600 "$work/ask$id.err"; } >>"$work/failures"
    fi
    n=$((n + 1))
  done
}
reader 1 & reader 2 &
for r in $(seq 1 "$rounds"); do
  corpus "$r" "$work/corpus.jsonl.new"
  mv "$work/corpus.jsonl.new" "$work/corpus.jsonl"
  "$kvprep" run "$work/p.yaml" >"$work/run$r.out" 2>&1 || fail "update $r: $(cat "$work/run$r.out")"
done
touch "$work/done"
wait $(jobs -p)

statuses=$(cat "$work"/status1 "$work"/status2)
asks=$(echo "$statuses" | wc -l)
crashes=$(echo "$statuses" | awk '$1 > 128' | wc -l)
failures=$(echo "$statuses" | awk '$1 != 0' | wc -l)
echo "readers: $asks asks during $rounds updates, $crashes crashed, $failures failed"
if [ "$failures" -ne 0 ]; then
  head -c 3000 "$work/failures"
  fail "$failures of $asks asks failed ($crashes crashed)"
fi
"$kvprep" verify --store "$store" >"$work/verify.out" 2>&1 || fail "verify after the updates: $(cat "$work/verify.out")"
"$kvrun" ask --store "$store" --question "Which tower is number $((7 * (3 + 12 * rounds - 1)))?" --top-k 1 \
  --method reuse --max-tokens 2 --json --threads 1 >"$work/last.json" 2>"$work/last.err" ||
  fail "ask after the updates: $(cat "$work/last.err")"
echo "ok: $asks asks during $rounds updates, none crashed or failed"
