#!/usr/bin/env bash
# Every stage killed at its commit steps resumes to the same content. Each stage (chunk, embed with a checkpoint
# after every batch, index, neighbors, prefill independent and similarity, compress) runs from the store the
# stage before left, and is killed (SIGKILL, through the LD_PRELOAD hook kill_at_rename) just before and just
# after its 1st, 2nd, 3rd, 5th, 8th, ... rename: with a temporary written but not in place, and with a file in
# place whose manifest record is not written yet. After each kill the store must verify; rerun, the stage must
# leave no temporary, verify, and hold the same files (bytes and XXH3 as the manifest records them) and the same
# KV content as an uninterrupted run.
# Usage: kill_resume_test.sh KVPREP KILL_AT_RENAME_LIBRARY
set -euo pipefail
kvprep=$1 hook=$2
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$here/small_corpus.py" "$work/corpus.jsonl" 8
stages=(
  "chunk --corpus $work/corpus.jsonl --threads 2"
  "embed --batch 2 --checkpoint-seconds 0.000001 --threads 2"
  "index"
  "neighbors --top-n 3"
  "prefill --mode independent --shard-mb 1 --batch-tokens 256 --threads 2"
  "prefill --mode similarity --top-n 3 --shard-mb 1 --batch-tokens 256 --threads 2"
  "compress --from independent --to q8 --quant int8 --shard-mb 1 --threads 2"
)
# What a finished stage must have produced: the manifest's non-KV file records and stages, each KV mode's content.
content() {
  python3 - "$1/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(sorted((f["path"], f["bytes"], f["xxh3"]) for f in m["files"] if not f["path"].startswith("kv/")))
print(sorted(s["stage"] for s in m["stages"]))
PY
  "$kvprep" inspect --store "$1" --json | python3 -c '
import json, sys
print(sorted((m, kv["chunks"], kv["content_hash"]) for m, kv in json.load(sys.stdin)["kv"].items()))'
}

# The uninterrupted run: the store after each stage is the start of the next stage's trials.
mkdir -p "$work/ref0"
for i in "${!stages[@]}"; do
  cp -r "$work/ref$i" "$work/ref$((i + 1))"
  # shellcheck disable=SC2086
  "$kvprep" ${stages[$i]} --store "$work/ref$((i + 1))" >/dev/null 2>&1 || fail "uninterrupted: ${stages[$i]}"
done

kills=0
for i in "${!stages[@]}"; do
  stage=${stages[$i]}
  want=$(content "$work/ref$((i + 1))")
  for when in before after; do
    for n in 1 2 3 5 8 13 21 34 55; do
      rm -rf "$work/store"
      cp -r "$work/ref$i" "$work/store"
      status=0
      # shellcheck disable=SC2086
      KVF_KILL_AT="$when-rename:$n" LD_PRELOAD="$hook" "$kvprep" $stage --store "$work/store" >/dev/null 2>&1 ||
        status=$?
      [ "$status" -eq 0 ] && break  # fewer renames than n: every kill point of this kind is covered
      [ "$status" -eq 137 ] || fail "$stage, $when rename $n: exit status $status, not a kill"
      kills=$((kills + 1))
      trial="$stage, killed $when rename $n"
      if [ -f "$work/store/manifest.json" ]; then
        "$kvprep" verify --store "$work/store" >"$work/verify.out" || fail "$trial: the store does not verify: $(cat "$work/verify.out")"
      fi
      # shellcheck disable=SC2086
      "$kvprep" $stage --store "$work/store" >"$work/resume.out" 2>&1 || fail "$trial: resume failed: $(cat "$work/resume.out")"
      [ -z "$(find "$work/store" -name '*.tmp')" ] || fail "$trial: temporaries left: $(find "$work/store" -name '*.tmp')"
      "$kvprep" verify --store "$work/store" >/dev/null || fail "$trial: the resumed store does not verify"
      got=$(content "$work/store")
      [ "$got" = "$want" ] || fail "$trial: resumed to other content:
$got
uninterrupted:
$want"
    done
  done
  echo "ok: stage $((i + 1)): ${stage%% --[cst][ho]*}"
done
echo "ok: $kills kills, every stage resumed to the uninterrupted content"
