#!/usr/bin/env bash
# kill -9 during `kvprep prefill`, ten times at random moments: each time the committed store must verify, and once
# resumed it must hold exactly the KV of an uninterrupted run (same content hash per KV mode).
# Usage: prefill_crash_test.sh KVPREP_BINARY
. "$(dirname "$0")/common.sh"
kvprep=$1

# A corpus of 40 short documents: enough chunks for several small shards.
"$(dirname "$0")/small_corpus.py" "$work/corpus.jsonl"
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$work/base" --threads 2 >/dev/null
cp -r "$work/base" "$work/reference"
"$kvprep" prefill --store "$work/reference" --shard-mb 1 --batch-tokens 256 >/dev/null
want=$("$kvprep" inspect --store "$work/reference" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['kv']['independent']['content_hash'])")

for trial in $(seq 1 10); do
  rm -rf "$work/store"
  cp -r "$work/base" "$work/store"
  "$kvprep" prefill --store "$work/store" --shard-mb 1 --batch-tokens 256 >/dev/null 2>&1 &
  pid=$!
  sleep "$(python3 -c "import random; print(random.uniform(0.3, 4.0))")"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  "$kvprep" verify --store "$work/store" >/dev/null || { echo "trial $trial: the killed store does not verify"; exit 1; }
  "$kvprep" prefill --store "$work/store" --shard-mb 1 --batch-tokens 256 >/dev/null
  "$kvprep" verify --store "$work/store" >/dev/null || { echo "trial $trial: the resumed store does not verify"; exit 1; }
  got=$("$kvprep" inspect --store "$work/store" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['kv']['independent']['content_hash'])")
  [ "$got" = "$want" ] || { echo "trial $trial: resumed KV $got differs from the uninterrupted $want"; exit 1; }
  echo "trial $trial: ok"
done
