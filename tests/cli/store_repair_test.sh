#!/usr/bin/env bash
# Corruption is caught and repaired: 16 bytes flipped inside a KV shard make kvrun ask fail with one line naming
# the shard and the chunk (never an answer from damaged KV), and kvprep verify fail; verify --repair drops the
# shard, the next prefill recomputes exactly its chunks, and the store verifies with the KV content of before.
# Usage: store_repair_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2
here=$(dirname "$0")
store=$work/store
kv_hash() {
  "$kvprep" inspect --store "$store" --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)['kv']['independent']['content_hash'])"
}

"$here/small_corpus.py" "$work/corpus.jsonl" 12
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" --threads 2 >/dev/null
"$kvprep" embed --store "$store" >/dev/null 2>&1
"$kvprep" index --store "$store" >/dev/null
prefill=("$kvprep" prefill --store "$store" --shard-mb 1 --batch-tokens 256 --threads 2)
"${prefill[@]}" >/dev/null 2>&1
want=$(kv_hash)
[ -f "$store/kv/independent-00002.h5" ] || fail "expected several shards"
ask=("$kvrun" ask --store "$store" --question "Where is the old mill?" --top-k 12 --method reuse --max-tokens 2)
"${ask[@]}" >/dev/null 2>&1 || fail "ask on the sound store"

# Flip 16 bytes a quarter into a shard: inside its first chunk's K rows.
python3 - "$store/kv/independent-00001.h5" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
for i in range(len(data) // 4, len(data) // 4 + 16):
    data[i] ^= 0xFF
open(path, "wb").write(bytes(data))
PY
"$here/expect_error.sh" 1 "^error: .*kv/independent-00001.h5: chunk [0-9a-f]{16} \(index entry 0\) has checksum" \
  "${ask[@]}" || fail "kvrun ask did not refuse the damaged chunk"
if "$kvprep" verify --store "$store" >"$work/verify.out"; then fail "verify passed a damaged shard"; fi
grep -q "^problem: .*kv/independent-00001.h5" "$work/verify.out" || fail "verify did not name the shard"

"$kvprep" verify --store "$store" --repair >"$work/repair.out"
grep -q "^dropped: kv/independent-00001.h5 and the record of stage prefill-independent; rerun: kvprep prefill --mode independent" \
  "$work/repair.out" || fail "repair output: $(cat "$work/repair.out")"
[ ! -e "$store/kv/independent-00001.h5" ] || fail "the broken shard is still on disk"
"$kvprep" verify --store "$store" >/dev/null || fail "the repaired store does not verify"

"${prefill[@]}" >"$work/prefill.out" 2>&1
grep -q "^independent: 1 chunks" "$work/prefill.out" || fail "the rerun did not recompute exactly the lost chunk: $(cat "$work/prefill.out")"
"$kvprep" verify --store "$store" >/dev/null || fail "the recomputed store does not verify"
[ "$(kv_hash)" = "$want" ] || fail "recomputed KV $(kv_hash) differs from the original $want"
"${ask[@]}" >/dev/null 2>&1 || fail "ask on the repaired store"
echo "ok: damage refused by kvrun and verify, repaired, recomputed to the same KV"
