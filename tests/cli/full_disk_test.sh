#!/usr/bin/env bash
# A full disk (files limited with ulimit -f; SIGXFSZ ignored, so writes fail with EFBIG as with ENOSPC) during
# kvprep index and kvprep prefill: exit 1 with one error line naming the file, no temporary left, the manifest
# as it was and the store verifying; with room again, the same command completes.
# Usage: full_disk_test.sh KVPREP
. "$(dirname "$0")/common.sh"
kvprep=$1
here=$(dirname "$0")
store=$work/store

"$here/small_corpus.py" "$work/corpus.jsonl" 12
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" --threads 2 >/dev/null
"$kvprep" embed --store "$store" >/dev/null 2>&1

# Runs the command with files limited to $1 KiB, expecting one error line naming $2.
full_disk() {
  local kib=$1 names=$2
  shift 2
  cp "$store/manifest.json" "$work/manifest.before"
  (trap '' XFSZ && ulimit -f "$kib" && exec "$here/expect_error.sh" 1 "^error: .*$names" "$@") ||
    fail "$*: not one error line naming $names"
  cmp -s "$store/manifest.json" "$work/manifest.before" || fail "$*: the manifest changed"
  [ -z "$(find "$store" -name '*.tmp')" ] || fail "$*: temporaries left: $(find "$store" -name '*.tmp')"
  "$kvprep" verify --store "$store" >/dev/null || fail "$*: the store does not verify"
  "$@" >/dev/null 2>&1 || fail "$*: fails with room on the disk"
  "$kvprep" verify --store "$store" >/dev/null || fail "$*: the completed store does not verify"
}
full_disk 8 "index.faiss.*(File too large|No space)" "$kvprep" index --store "$store"
full_disk 1024 "kv/[a-z]+-00000.h5.*(File too large|No space)" "$kvprep" prefill --store "$store" --threads 2
echo "ok: a full disk is one error line and the store stays at its last commit"
