#!/usr/bin/env bash
# A damaged whole table is refused at open: one byte flipped in chunks.h5 or index.faiss makes kvrun ask fail with
# one line naming the file and both hashes (the size and XXH3 the manifest records are checked before the file is
# read), where it used to answer from it.
# Usage: table_damage_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2
here=$(dirname "$0")
store=$work/store

"$here/small_corpus.py" "$work/corpus.jsonl" 6
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" --threads 2 >/dev/null 2>&1
"$kvprep" embed --store "$store" >/dev/null 2>&1
"$kvprep" index --store "$store" >/dev/null 2>&1
"$kvprep" prefill --store "$store" --threads 2 >/dev/null 2>&1
ask=(ask --question "Where is the old mill?" --top-k 2 --method reuse --max-tokens 2)
"$kvrun" "${ask[@]}" --store "$store" >/dev/null 2>&1 || fail "ask on the sound store"

for file in chunks.h5 index.faiss; do
  rm -rf "$work/damaged"
  cp -r "$store" "$work/damaged"
  python3 - "$work/damaged/$file" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[len(data) // 2] ^= 0x01
open(path, "wb").write(bytes(data))
PY
  "$here/expect_error.sh" 1 "^error: .*/damaged/$file: damaged: [0-9]+ bytes with xxh3 [0-9a-f]{16}, the manifest records [0-9]+ bytes with xxh3 [0-9a-f]{16}" \
    "$kvrun" "${ask[@]}" --store "$work/damaged" || fail "kvrun ask did not refuse a damaged $file"
done
echo "ok: damaged chunks.h5 and index.faiss refused at open"
