#!/usr/bin/env bash
# kvrun ask and batch end to end on a small real store: every method answers, --json carries the documented
# fields, batch writes one line per question through OUT.partial, and given chunk ids are used in their order.
# Usage: kvrun_cli_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2

cp "$(dirname "$0")/../fixtures/four_topics.jsonl" "$work/corpus.jsonl"  # four short passages
store=$work/store
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" >/dev/null
"$kvprep" embed --store "$store" >/dev/null 2>&1
"$kvprep" index --store "$store" >/dev/null
"$kvprep" prefill --store "$store" --mode independent >/dev/null 2>&1

for method in full reuse cacheblend a3 fusion; do
  "$kvrun" ask --store "$store" --question "Which planet has rings?" --top-k 2 --method "$method" --max-tokens 4 \
    --json >"$work/$method.json"
  python3 - "$work/$method.json" "$method" <<'PY' || fail "ask --method $2 output"
import json, sys
d = json.load(open(sys.argv[1]))
for key in ["answer", "method", "recompute", "kv_mode", "chunk_ids", "n_context_tokens", "n_recomputed",
            "generated_tokens", "timings_ms"]:
    assert key in d, key
for key in ["retrieve", "load", "select", "prefill", "ttft", "decode"]:
    assert key in d["timings_ms"], key
assert d["method"] == sys.argv[2] and len(d["chunk_ids"]) == 2 and d["generated_tokens"] >= 1, d
# Every chunk cites its document: ids, titles and texts of the corpus, in chunk_ids' order; Saturn is retrieved.
corpus = {str(c["id"]): c for c in map(json.loads, open(sys.argv[1].rsplit("/", 1)[0] + "/corpus.jsonl"))}
assert [s["chunk_id"] for s in d["sources"]] == d["chunk_ids"], d["sources"]
for s in d["sources"]:
    assert s["title"] == corpus[s["doc_id"]]["title"] and s["text"] == corpus[s["doc_id"]]["text"], s
assert "Saturn" in [s["title"] for s in d["sources"]], d["sources"]
PY
done
# Text output names the sources on stderr.
"$kvrun" ask --store "$store" --question "Which planet has rings?" --top-k 1 --max-tokens 2 2>"$work/err" >/dev/null
grep -q '^\[sources: 4 (Saturn)\]$' "$work/err" || { cat "$work/err"; fail "ask names no sources"; }

ids=$(python3 -c "import json; print(','.join(reversed(json.load(open('$work/full.json'))['chunk_ids'])))")
"$kvrun" ask --store "$store" --question "Which planet has rings?" --chunks "$ids" --method reuse --max-tokens 2 \
  --json >"$work/given.json"
python3 -c "import json; d = json.load(open('$work/given.json')); assert ','.join(d['chunk_ids']) == '$ids', d" ||
  fail "--chunks order"

printf '{"id": "a", "question": "What is a glacier?"}\n{"id": "b", "question": "What is a violin?", "answers": ["instrument"]}\n' \
  >"$work/questions.jsonl"
"$kvrun" batch --store "$store" --queries "$work/questions.jsonl" --out "$work/answers.jsonl" --method fusion \
  --top-k 2 --max-tokens 4 --json >/dev/null 2>&1
[ -f "$work/answers.jsonl" ] && [ ! -e "$work/answers.jsonl.partial" ] || fail "batch output not committed"
python3 - "$work/answers.jsonl" <<'PY' || fail "batch output"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["id"] for r in rows] == ["a", "b"], rows
assert rows[1]["gold_answers"] == ["instrument"]
PY
# A name the library's parser refuses is a usage error (status 2) naming the option and the value.
for bad in "--method blend" "--compute f16"; do
  set +e
  "$kvrun" ask --store "$store" --question "q" $bad 2>"$work/bad.err"
  status=$?
  set -e
  read -r option value <<<"$bad"
  [ "$status" -eq 2 ] && grep -q -- "$option: .*'$value'" "$work/bad.err" || fail "$bad: status $status, $(cat "$work/bad.err")"
done
echo "ok: kvrun ask (5 methods), --chunks, batch, bad option names"
