#!/usr/bin/env bash
# Deletions and edits (docs/store.md, "Deletions and edits"): `kvprep run` over a corpus from which one document was
# removed and another edited drops their old chunks from every table and reclaims their KV (shards rewritten or
# removed), counts the similarity KV whose neighbours changed as stale, and leaves a store that verifies and
# answers; `chunk.keep_removed` (a feed of new documents) removes nothing.
# Usage: deletions_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2
store=$work/store

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
docs = [("Volcano", "A volcano is a rupture in the crust where lava, ash and gases escape from below the surface."),
        ("Glacier", "A glacier is a persistent body of dense ice that moves slowly under its own weight."),
        ("Violin", "The violin is a wooden string instrument played with a bow, the smallest of its family."),
        ("Cello", "The cello is a bowed string instrument, larger than the viola, played seated between the knees."),
        ("Saturn", "Saturn is the sixth planet from the Sun, known for its bright system of rings."),
        ("Chess", "Chess is a board game for two players on a checkered board of sixty-four squares.")]
def write(name, rows):
    with open(f"{work}/{name}", "w") as f:
        for i, (title, text) in rows:
            f.write(json.dumps({"id": f"d{i}", "title": title, "text": text}) + "\n")
write("before.jsonl", list(enumerate(docs)))
after = [(i, d) for i, d in enumerate(docs) if i != 2]  # d2 removed
after[2] = (3, ("Cello", "The cello was rebuilt in Cremona by a luthier named Paolo in the spring of 1702."))  # d3 edited
write("after.jsonl", after)
write("feed.jsonl", [(6, ("Marathon", "The marathon is a long-distance foot race of about forty-two kilometres."))])
PY
cat >"$work/p.yaml" <<YAML
store: $store
corpus: $work/corpus.jsonl
model: smollm2
threads: 2
neighbors: {top_n: 2}
prefill: {modes: [independent, similarity], batch_tokens: 64, shard_mb: 1}
YAML
cp "$work/before.jsonl" "$work/corpus.jsonl"
"$kvprep" run "$work/p.yaml" >"$work/run1.out" 2>&1 || fail "first run: $(cat "$work/run1.out")"
kv_before=$(du -sb "$store/kv" | cut -f1)
"$kvprep" search --store "$store" --query "The violin is a wooden string instrument" --top-k 1 | grep -q "\[d2\] Violin" ||
  fail "the violin document is not found before its removal"

cp "$work/after.jsonl" "$work/corpus.jsonl"
"$kvprep" run "$work/p.yaml" >"$work/run2.out" 2>&1 || fail "second run: $(cat "$work/run2.out")"
grep -Eq "^chunk +1 new chunks, 2 removed$" "$work/run2.out" || fail "chunk step: $(cat "$work/run2.out")"
grep -Eq "^prefill similarity +1 chunks computed, [1-9][0-9]* stale" "$work/run2.out" ||
  fail "no stale similarity KV counted: $(cat "$work/run2.out")"
grep -Eq "^prune +4 KV entries of removed chunks" "$work/run2.out" || fail "prune step: $(cat "$work/run2.out")"
kv_after=$(du -sb "$store/kv" | cut -f1)
[ "$kv_after" -lt "$kv_before" ] || fail "KV on disk did not shrink: $kv_before -> $kv_after bytes"

hits=$("$kvprep" search --store "$store" --query "The violin is a wooden string instrument" --top-k 5)
echo "$hits" | grep -q "\[d2\]" && fail "the removed document is still found: $hits"
echo "$hits" | grep -q "bowed string instrument" && fail "the edited document's old text is still found: $hits"
echo "$hits" | grep -q "rebuilt in Cremona" || fail "the edited document's new text is not found: $hits"
"$kvprep" inspect --store "$store" >"$work/inspect.out"
grep -Eq "^chunks +5," "$work/inspect.out" || fail "chunk table: $(cat "$work/inspect.out")"
for mode in independent similarity; do
  grep -Eq "^kv +$mode +5 chunks," "$work/inspect.out" || fail "$mode KV: $(cat "$work/inspect.out")"
done
"$kvprep" verify --store "$store" >"$work/verify.out" 2>&1 || fail "verify: $(cat "$work/verify.out")"
grep -q "note:" "$work/verify.out" && fail "files left behind: $(cat "$work/verify.out")"
"$kvprep" prune --store "$store" --dry-run | grep -q "nothing to reclaim" || fail "a second prune finds more"
"$kvrun" ask --store "$store" --question "Who rebuilt the cello?" --top-k 2 --max-tokens 4 --threads 2 \
  >"$work/ask.out" 2>"$work/ask.err" || fail "ask: $(cat "$work/ask.err")"
grep -q "d3 (Cello)" "$work/ask.err" || fail "ask's sources: $(cat "$work/ask.err")"

cp "$work/feed.jsonl" "$work/corpus.jsonl"
"$kvprep" run "$work/p.yaml" --set chunk.keep_removed=true >"$work/run3.out" 2>&1 || fail "feed run: $(cat "$work/run3.out")"
grep -Eq "^chunk +1 new chunks$" "$work/run3.out" || fail "feed chunk step: $(cat "$work/run3.out")"
grep -Eq "^prune +nothing to reclaim$" "$work/run3.out" || fail "feed prune step: $(cat "$work/run3.out")"
"$kvprep" inspect --store "$store" | grep -Eq "^chunks +6," || fail "the feed run removed chunks"
echo "ok: removed and edited documents leave the store ($kv_before -> $kv_after KV bytes); a feed keeps them"
