#!/usr/bin/env bash
# One writer per store. A prefill takes the store lock and is paused (SIGSTOP) while it holds it: a second
# prefill and an embed exit 1 at once with one line naming the holder (pid, host, command), a reader (verify)
# reads the last commit meanwhile, and a prefill with --wait-lock waits until the holder finishes, then finds
# nothing to do. The store verifies and holds the KV of one uninterrupted run.
# Usage: store_lock_test.sh KVPREP_BINARY
. "$(dirname "$0")/common.sh"
kvprep=$1
here=$(dirname "$0")
holder=
trap '[ -n "$holder" ] && kill -9 "$holder" 2>/dev/null; rm -rf "$work"' EXIT

"$here/small_corpus.py" "$work/corpus.jsonl"
"$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$work/store" --threads 2 >/dev/null
prefill=("$kvprep" prefill --store "$work/store" --shard-mb 1 --batch-tokens 256 --threads 2)

"${prefill[@]}" >"$work/first.out" 2>&1 &
holder=$!
for _ in $(seq 1 300); do
  grep -q "^pid $holder on host " "$work/store/kvprep.lock" 2>/dev/null && break
  sleep 0.1
done
grep -q "^pid $holder on host " "$work/store/kvprep.lock" 2>/dev/null || fail "the first prefill never took the lock"
kill -STOP "$holder"

regex="^error: store $work/store is being written by another kvprep \(pid $holder on host [^:]+: .*kvprep prefill --store $work/store .*\); .*--wait-lock"
"$here/expect_error.sh" 1 "$regex" "${prefill[@]}" || fail "a second prefill was not refused"
"$here/expect_error.sh" 1 "$regex" "$kvprep" embed --store "$work/store" || fail "an embed was not refused"
"$kvprep" verify --store "$work/store" >/dev/null || fail "a reader could not verify the last commit"

"${prefill[@]}" --wait-lock >"$work/second.out" 2>&1 &
waiter=$!
sleep 1
kill -0 "$waiter" 2>/dev/null || fail "--wait-lock did not wait: $(cat "$work/second.out")"
kill -CONT "$holder"
wait "$holder" || fail "the first prefill failed: $(cat "$work/first.out")"
holder=
wait "$waiter" || fail "the waiting prefill failed: $(cat "$work/second.out")"
grep -q "^nothing to do" "$work/second.out" || fail "the waiting prefill did work again: $(cat "$work/second.out")"
"$kvprep" verify --store "$work/store" >/dev/null || fail "the store does not verify"
echo "ok: one writer at a time"
