#!/usr/bin/env bash
# A gzip-compressed corpus is the same corpus: kvprep chunk (and a pipeline's corpus key) make the same chunks.h5
# from corpus.jsonl.gz as from corpus.jsonl, a rerun over the other form has nothing to do, problems name the
# decompressed line, and a truncated copy is one error naming the file.
# Usage: kvprep_gzip_corpus_test.sh KVPREP
. "$(dirname "$0")/common.sh"
kvprep=$1

python3 - "$work/corpus.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(300):
        f.write(json.dumps({"id": i, "title": "Entry %d" % i,
                            "text": " ".join("word%d-%d" % (i, k) for k in range(40 + i % 30))}) + "\n")
PY
gzip -9 -c "$work/corpus.jsonl" >"$work/corpus.jsonl.gz"

"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$work/plain" >/dev/null 2>&1
"$kvprep" chunk --corpus "$work/corpus.jsonl.gz" --store "$work/packed" >/dev/null 2>&1 || fail "gzip corpus"
cmp -s "$work/plain/chunks.h5" "$work/packed/chunks.h5" || fail "chunks.h5 differs between the plain and gzip corpus"
inspect() { "$kvprep" inspect --store "$1" --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
print(d['chunks'], d['tokens'], d['model'])"; }
[ "$(inspect "$work/plain")" = "$(inspect "$work/packed")" ] || fail "inspect differs"
"$kvprep" chunk --corpus "$work/corpus.jsonl.gz" --store "$work/plain" 2>/dev/null | grep -q "^nothing to do" ||
  fail "a gzip copy of the chunked corpus was chunked again"

# A pipeline's corpus key takes the gzip file too (a few documents: the pipeline runs every stage).
head -n 5 "$work/corpus.jsonl" >"$work/small.jsonl"
gzip -c "$work/small.jsonl" >"$work/small.jsonl.gz"
"$kvprep" chunk --corpus "$work/small.jsonl" --store "$work/small" >/dev/null 2>&1
cat >"$work/pipeline.yaml" <<YAML
store: $work/piped
corpus: $work/small.jsonl.gz
model: smollm2
embedder: minilm
prefill:
  modes: [independent]
YAML
"$kvprep" run "$work/pipeline.yaml" --quiet >/dev/null 2>"$work/run.err" || { cat "$work/run.err"; fail "pipeline"; }
cmp -s "$work/small/chunks.h5" "$work/piped/chunks.h5" || fail "the pipeline's chunks.h5 differs"

# Problems name the line of the decompressed text.
printf '{"id": 1, "text": "one"}\n\n{"id": 2}\n' | gzip -c >"$work/bad.jsonl.gz"
if "$kvprep" chunk --corpus "$work/bad.jsonl.gz" --store "$work/bad" >/dev/null 2>"$work/bad.err"; then
  fail "a bad gzip corpus was chunked"
fi
grep -q "bad.jsonl.gz:3: missing field 'text'" "$work/bad.err" || fail "bad line: $(cat "$work/bad.err")"

# A truncated copy: one error naming the file, no parse errors, no chunks.
size=$(stat -c %s "$work/corpus.jsonl.gz")
head -c $((size / 2)) "$work/corpus.jsonl.gz" >"$work/cut.jsonl.gz"
head -c $((size - 4)) "$work/corpus.jsonl.gz" >"$work/tail.jsonl.gz"  # only the length trailer missing
for cut in cut tail; do
  if "$kvprep" chunk --corpus "$work/$cut.jsonl.gz" --store "$work/$cut" >/dev/null 2>"$work/$cut.err"; then
    fail "truncated gzip corpus ($cut) was chunked"
  fi
  grep -q "$cut.jsonl.gz: the gzip stream ends early" "$work/$cut.err" || fail "$cut: $(cat "$work/$cut.err")"
  [ "$(grep -c . "$work/$cut.err")" -eq 1 ] || fail "$cut: more than one line of errors: $(cat "$work/$cut.err")"
  [ ! -e "$work/$cut/chunks.h5" ] || fail "$cut: chunks written"
done
echo "ok: gzip corpus chunks as the plain one (chunk and pipeline), bad line numbered, truncated copy refused"
