#!/usr/bin/env bash
# Which modes a store keeps (docs/store.md): `kvprep prune --drop-mode independent` removes the independent KV
# whole (shards and completion) and leaves a store that verifies; kvrun then recomputes the exact first chunk with
# the question, answering as `--first-chunk-kv recompute` did before the drop, and says how to get the stored KV
# back when asked for it. Refusals name the mode.
# Usage: drop_mode_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2
store=$work/store

python3 - "$work/corpus.jsonl" <<'PY'
import json, sys
docs = [("Volcano", "A volcano is a rupture in the crust where lava, ash and gases escape from below the surface."),
        ("Violin", "The violin is a wooden string instrument played with a bow, the smallest of its family."),
        ("Saturn", "Saturn is the sixth planet from the Sun, known for its bright system of rings."),
        ("Chess", "Chess is a board game for two players on a checkered board of sixty-four squares.")]
with open(sys.argv[1], "w") as f:
    for i, (title, text) in enumerate(docs):
        f.write(json.dumps({"id": f"d{i}", "title": title, "text": text}) + "\n")
PY
cat >"$work/p.yaml" <<YAML
store: $store
corpus: $work/corpus.jsonl
model: smollm2
threads: 2
neighbors: {top_n: 2}
prefill: {modes: [independent, similarity], batch_tokens: 64}
YAML
"$kvprep" run "$work/p.yaml" >"$work/out" 2>&1 || fail "kvprep run"

ask() {  # ask NAME [OPTION...]: the answer's JSON in $work/NAME.json
  local name=$1
  shift
  "$kvrun" ask --store "$store" --kv similarity --method fusion --recompute 0.2 --top-k 3 --max-tokens 6 --json \
    --question "Which planet is known for its rings?" "$@" >"$work/$name.json" 2>"$work/out" || fail "ask $name"
}
field() { python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$@"; }
ask stored
ask recomputed --first-chunk-kv recompute
[ "$(field "$work/stored.json" recomputed_per_chunk | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])')" = 0 ] ||
  fail "the stored first chunk was recomputed: $(cat "$work/stored.json")"
python3 - "$work/recomputed.json" <<'PY' || fail "the recomputed first chunk: $(cat "$work/recomputed.json")"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["recomputed_per_chunk"][0] == a["chunk_tokens"][0], a
PY

kv_before=$(du -sb "$store/kv" | cut -f1)
"$kvprep" prune --store "$store" --drop-mode independent --dry-run --json >"$work/dry.json" 2>"$work/out" ||
  fail "prune --drop-mode --dry-run"
[ "$(du -sb "$store/kv" | cut -f1)" = "$kv_before" ] || fail "a dry run changed the store"
"$kvprep" prune --store "$store" --drop-mode independent --json >"$work/drop.json" 2>"$work/out" ||
  fail "prune --drop-mode"
python3 - "$work/dry.json" "$work/drop.json" "$store" <<'PY' || fail "prune --drop-mode: $(cat "$work/drop.json")"
import glob, json, sys
dry, drop = (json.load(open(p)) for p in sys.argv[1:3])
store = sys.argv[3]
assert drop["mode_entries"] == 4 and drop["modes"] == ["independent"], drop
assert dry["mode_entries"] == drop["mode_entries"] and dry["bytes_after"] == drop["bytes_after"], (dry, drop)
assert drop["bytes_after"] < drop["bytes_before"], drop
assert not glob.glob(f"{store}/kv/independent-*.h5"), "independent shards left"
m = json.load(open(f"{store}/manifest.json"))
assert not any(s["stage"] == "prefill-independent" for s in m["stages"]), m["stages"]
assert any(s["stage"] == "prefill-similarity" for s in m["stages"]), m["stages"]
PY
"$kvprep" verify --store "$store" >"$work/out" 2>&1 || fail "verify after the drop"

# The default now recomputes the first chunk: the same answer and logits as --first-chunk-kv recompute before.
ask dropped
for f in answer recomputed_per_chunk; do
  [ "$(field "$work/dropped.json" $f)" = "$(field "$work/recomputed.json" $f)" ] ||
    fail "$f after the drop: $(field "$work/dropped.json" $f), before: $(field "$work/recomputed.json" $f)"
done
if "$kvrun" ask --store "$store" --kv similarity --first-chunk-kv stored --question "Which planet?" >"$work/out" 2>&1; then
  fail "the stored first chunk was read from a store without it"
fi
grep -q "needs the store's independent KV.*--first-chunk-kv recompute" "$work/out" || fail "message"
if "$kvrun" ask --store "$store" --kv independent --question "Which planet?" >"$work/out" 2>&1; then
  fail "a dropped mode answered"
fi

# Refusals: a mode the store does not hold, and the system prompt's KV.
if "$kvprep" prune --store "$store" --drop-mode independent >"$work/out" 2>&1; then fail "dropped twice"; fi
grep -q "holds no 'independent' KV (it holds: similarity)" "$work/out" || fail "message"
if "$kvprep" prune --store "$store" --drop-mode system >"$work/out" 2>&1; then fail "dropped the system prompt"; fi
grep -q "system prompt's KV ('system') is read by every mode" "$work/out" || fail "message"
if "$kvrun" ask --store "$store" --kv similarity --first-chunk-kv sometimes --question "?" >"$work/out" 2>&1; then
  fail "a bad --first-chunk-kv was accepted"
fi
grep -q "sometimes" "$work/out" || fail "message"
echo "ok"
