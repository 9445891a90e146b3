#!/usr/bin/env bash
# kvrun batch on a small real store: questions with gold answers get eval's scores and a summary; a rerun after a
# killed run keeps its complete lines (a torn last one dropped), answers the rest and commits OUT; a rerun with
# other settings is refused naming them unless --restart; --method full answers from a store without chunk KV.
# Usage: kvrun_batch_resume_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2

cp "$(dirname "$0")/../fixtures/four_topics.jsonl" "$work/corpus.jsonl"  # four short passages
store=$work/store
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" >/dev/null 2>&1
"$kvprep" embed --store "$store" >/dev/null 2>&1
"$kvprep" index --store "$store" >/dev/null 2>&1
"$kvprep" prefill --store "$store" --mode independent >/dev/null 2>&1

cat >"$work/q.jsonl" <<'JSON'
{"id": "a", "question": "Which planet has rings?", "answers": ["Saturn"]}
{"id": "b", "question": "What is a violin?", "answers": ["a string instrument", "instrument"]}
{"id": "c", "question": "What is a glacier?"}
{"id": "d", "question": "What escapes from a volcano?", "answers": ["lava, ash and gases"]}
JSON
batch() {  # OUT, then extra options; $method and $max_tokens change those
  local out=$1
  shift
  "$kvrun" batch --store "$store" --queries "$work/q.jsonl" --out "$out" --method "${method:-fusion}" --top-k 2 \
    --max-tokens "${max_tokens:-6}" "$@"
}

# 1. Scores: the lines with answers carry em, f1 and substring as eval computes them; the means go to stderr.
batch "$work/whole.jsonl" 2>"$work/whole.err" >/dev/null
[ ! -e "$work/whole.jsonl.partial" ] && [ ! -e "$work/whole.jsonl.partial.settings.json" ] || fail "leftovers"
python3 - "$work/whole.jsonl" "$work/whole.err" <<'PY' || fail "scores"
import json, re, string, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["id"] for r in rows] == ["a", "b", "c", "d"], rows
def norm(s):
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())
def f1(p, g):
    p, g = norm(p).split(), norm(g).split()
    common = sum(min(p.count(w), g.count(w)) for w in set(p))
    return 0.0 if common == 0 else 2 * common / (len(p) + len(g))
for r in rows:
    if r["id"] == "c":
        assert not any(k in r for k in ["em", "f1", "substring", "gold_answers"]), r
        continue
    golds = r["gold_answers"]
    assert r["em"] == max(float(norm(r["answer"]) == norm(g)) for g in golds), r
    assert abs(r["f1"] - max(f1(r["answer"], g) for g in golds)) < 1e-9, r
    assert r["substring"] == max(float(" %s " % norm(g) in " %s " % norm(r["answer"])) for g in golds), r
scored = [r for r in rows if "f1" in r]
mean = lambda k: sum(r[k] for r in scored) / len(scored)
line = "batch: 3 of 4 questions scored against their answers: F1 %.4f, exact match %.4f, substring %.4f" % (
    mean("f1"), mean("em"), mean("substring"))
assert line in open(sys.argv[2]).read(), (line, open(sys.argv[2]).read())
PY

# 2. A killed run: its settings recorded, its OUT.partial holding one whole line and a torn one. (The run is stopped
# by a store that cannot be opened, after it has recorded its settings; the lines are the whole run's.)
killed_run() {  # OUT: leaves OUT.partial (empty) and OUT.partial.settings.json as a run killed early would
  mv "$store" "$store.away"
  if batch "$1" --quiet 2>/dev/null; then fail "a batch over a missing store succeeded"; fi
  mv "$store.away" "$store"
  [ -f "$1.partial" ] && [ -f "$1.partial.settings.json" ] || fail "no partial results or settings for $1"
}
out=$work/resumed.jsonl
killed_run "$out"
head -n 1 "$work/whole.jsonl" >"$out.partial"
sed -n 2p "$work/whole.jsonl" | head -c 40 >>"$out.partial"
batch "$out" --prefetch 0 --threads 2 2>"$work/resumed.err" >/dev/null ||
  { cat "$work/resumed.err"; fail "resume"; }  # speed options may differ
grep -q "^batch: resumed 1 of 4 questions from .*resumed.jsonl.partial$" "$work/resumed.err" ||
  fail "resume not reported: $(cat "$work/resumed.err")"
grep -q "batch fusion: 3 questions" "$work/resumed.err" || fail "not 3 answered: $(cat "$work/resumed.err")"
[ ! -e "$out.partial" ] && [ ! -e "$out.partial.settings.json" ] || fail "leftovers after a resumed run"
python3 - "$work/whole.jsonl" "$out" <<'PY' || fail "resumed output"
import json, sys
whole = [json.loads(l) for l in open(sys.argv[1])]
lines = open(sys.argv[2]).read().splitlines()
resumed = [json.loads(l) for l in lines]
assert [r["id"] for r in resumed] == ["a", "b", "c", "d"], resumed
assert lines[0] == open(sys.argv[1]).read().splitlines()[0]  # kept as it was
for w, r in zip(whole, resumed):
    assert (w["answer"], w.get("f1"), w.get("em")) == (r["answer"], r.get("f1"), r.get("em")), (w, r)
PY
# The summary covers the resumed questions too.
grep -q "^batch: 3 of 4 questions scored" "$work/resumed.err" || fail "summary without the resumed lines"

# 3. Other settings are refused, naming what differs, and leave the partial results alone; --restart starts over.
out=$work/other.jsonl
killed_run "$out"
head -n 2 "$work/whole.jsonl" >"$out.partial"
cp "$out.partial" "$work/other.before"
if method=reuse max_tokens=5 batch "$out" 2>"$work/other.err" >/dev/null; then fail "other settings resumed"; fi
grep -q -- '--max-tokens (was 6)' "$work/other.err" && grep -q -- '--method (was "fusion")' "$work/other.err" &&
  grep -q -- '--restart' "$work/other.err" || fail "refusal: $(cat "$work/other.err")"
cmp -s "$out.partial" "$work/other.before" || fail "a refused rerun changed the partial results"
cp "$work/q.jsonl" "$work/q.orig"
sed -i 's/Which planet/What planet/' "$work/q.jsonl"
if batch "$out" 2>"$work/other.err" >/dev/null; then fail "another question file resumed"; fi
grep -q -- "--queries (the question file's text)" "$work/other.err" || fail "refusal: $(cat "$work/other.err")"
cp "$work/q.orig" "$work/q.jsonl"
method=reuse batch "$out" --restart --quiet >/dev/null || fail "--restart"
python3 -c "
import json, sys
rows = [json.loads(l) for l in open('$out')]
assert [r['id'] for r in rows] == ['a', 'b', 'c', 'd'] and {r['method'] for r in rows} == {'reuse'}, rows" ||
  fail "--restart output"
# A partial file without recorded settings (not this batch's, or an older kvrun's) is refused too.
head -n 1 "$work/whole.jsonl" >"$work/bare.jsonl.partial"
if batch "$work/bare.jsonl" 2>"$work/bare.err" >/dev/null; then fail "partial results without settings resumed"; fi
grep -q "settings were not recorded.*--restart" "$work/bare.err" || fail "refusal: $(cat "$work/bare.err")"

# A run that failed before its first answer leaves nothing to resume: a rerun with other settings just runs.
killed_run "$work/early.jsonl"
method=reuse batch "$work/early.jsonl" --quiet >/dev/null || fail "a failed run's empty partial file blocked a rerun"
# Two batches never write one OUT at once: the second is refused while the first holds OUT.partial's lock.
if flock "$work/locked.jsonl.partial" "$kvrun" batch --store "$store" --queries "$work/q.jsonl" \
  --out "$work/locked.jsonl" --max-tokens 2 2>"$work/locked.err" >/dev/null; then
  fail "a second batch wrote a locked OUT"
fi
grep -q "another kvrun batch is writing it" "$work/locked.err" || fail "lock refusal: $(cat "$work/locked.err")"

# 4. A real kill: whatever was written by then is resumed, and OUT holds every question once, in order.
out=$work/killed.jsonl
"$kvrun" batch --store "$store" --queries "$work/q.jsonl" --out "$out" --method fusion --top-k 2 --max-tokens 6 \
  --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ -s "$out.partial" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
batch "$out" 2>"$work/killed.err" >/dev/null || { cat "$work/killed.err"; fail "resume after kill -9"; }
python3 -c "
import json
rows = [json.loads(l) for l in open('$out')]
assert [r['id'] for r in rows] == ['a', 'b', 'c', 'd'], rows" || fail "output after kill -9"

# 5. --method full reads no chunk KV: it answers from a store whose chunk KV shards are gone (the system prompt's
# KV stays), the same answers as over the whole store; reuse there fails, so the shards were needed otherwise.
cp -r "$store" "$work/nokv"
rm "$work/nokv"/kv/independent-*.h5
method=full batch "$work/full.jsonl" --quiet >/dev/null
"$kvrun" batch --store "$work/nokv" --queries "$work/q.jsonl" --out "$work/full-nokv.jsonl" --method full --top-k 2 \
  --max-tokens 6 --json --quiet >"$work/full-nokv.summary" || fail "full over a store without chunk KV"
python3 - "$work/full.jsonl" "$work/full-nokv.jsonl" "$work/full-nokv.summary" <<'PY' || fail "full without KV"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert [(r["id"], r["answer"], r["chunk_ids"]) for r in a] == [(r["id"], r["answer"], r["chunk_ids"]) for r in b], (a, b)
assert all(r["cache"] == {"hits": 0, "misses": 0} for r in b), b
s = json.load(open(sys.argv[3]))
assert s["cache"]["misses"] == 0 and s["cache"]["chunks_held"] == 0 and s["questions"] == 4, s
PY
if "$kvrun" batch --store "$work/nokv" --queries "$work/q.jsonl" --out "$work/reuse-nokv.jsonl" --method reuse \
  --top-k 2 --max-tokens 2 --quiet 2>/dev/null >/dev/null; then
  fail "reuse answered without chunk KV"
fi
echo "ok: batch scores, resumes (torn line, kill -9), refuses other settings, --restart, full without chunk KV"
