#!/usr/bin/env bash
# kvprep embed --checkpoint-seconds holds on a small store: with a checkpoint due after every batch, embeddings.h5
# appears after the first batch; killed then, the store verifies and the rerun embeds only the chunks the
# checkpoint did not hold (more than none, fewer than all).
# Usage: embed_checkpoint_test.sh KVPREP_BINARY
. "$(dirname "$0")/common.sh"
kvprep=$1
here=$(dirname "$0")

"$here/small_corpus.py" "$work/corpus.jsonl" 200
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$work/store" --threads 2 >/dev/null
"$kvprep" embed --store "$work/store" --batch 4 --checkpoint-seconds 0.000001 --threads 1 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  [ -e "$work/store/embeddings.h5" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[ -e "$work/store/embeddings.h5" ] || fail "no checkpoint was written"
"$kvprep" verify --store "$work/store" >/dev/null || fail "the checkpointed store does not verify"
"$kvprep" embed --store "$work/store" >"$work/rerun.out" 2>&1
done_now=$(sed -n 's/^embedded \([0-9]*\) of 200 chunks.*/\1/p' "$work/rerun.out")
[ -n "$done_now" ] && [ "$done_now" -gt 0 ] && [ "$done_now" -lt 200 ] ||
  fail "the rerun should embed what the checkpoint lacked: $(cat "$work/rerun.out")"
"$kvprep" verify --store "$work/store" >/dev/null || fail "the resumed store does not verify"
echo "ok: checkpoint after the first batch; the rerun embedded $done_now of 200"
