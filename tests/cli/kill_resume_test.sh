#!/usr/bin/env bash
# Every stage killed at its commit steps resumes to the same content. Each stage (chunk, embed with a checkpoint
# after every batch, index, neighbors, prefill independent and similarity, compress) runs from the store the
# stage before left, and is killed (SIGKILL, through the LD_PRELOAD hook kill_at_rename) just before and just
# after its 1st, 2nd, 3rd, 5th, 8th, ... rename: with a temporary written but not in place, and with a file in
# place whose manifest record is not written yet. After each kill the store must verify; rerun, the stage must
# leave no temporary, verify, and hold the same files (bytes and XXH3 as the manifest records them) and the same
# KV content as an uninterrupted run (kill_stages.sh).
# Usage: kill_resume_test.sh KVPREP KILL_AT_RENAME_LIBRARY
. "$(dirname "$0")/common.sh"
kvprep=$1 hook=$2
# shellcheck source=kill_stages.sh
source "$(dirname "$0")/kill_stages.sh"

build_reference_stores 8
kills=0
for i in "${!kill_stages[@]}"; do
  for when in before after; do
    for n in 1 2 3 5 8 13 21 34 55; do
      rm -rf "$work/store"
      cp -r "$work/ref$i" "$work/store"
      status=0
      # shellcheck disable=SC2086
      KVF_KILL_AT="$when-rename:$n" LD_PRELOAD="$hook" "$kvprep" ${kill_stages[$i]} --store "$work/store" \
        >/dev/null 2>&1 || status=$?
      [ "$status" -eq 0 ] && break  # fewer renames than n: every kill point of this kind is covered
      [ "$status" -eq 137 ] || fail "${kill_stages[$i]}, $when rename $n: exit status $status, not a kill"
      kills=$((kills + 1))
      check_killed_store "$i" "killed $when rename $n"
    done
  done
  echo "ok: stage $((i + 1)): $(stage_name "${kill_stages[$i]}")"
done
echo "ok: $kills kills, every stage resumed to the uninterrupted content"
