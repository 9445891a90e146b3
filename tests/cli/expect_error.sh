#!/usr/bin/env bash
# Usage: expect_error.sh STATUS REGEX COMMAND...  Passes when COMMAND exits with STATUS (1: bad input, 2: bad
# usage) and prints exactly one line on stderr, matching REGEX (extended), and nothing on stdout: how every kvfuse
# tool must fail.
set -u
want_status=$1
regex=$2
shift 2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
status=$?
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
[ "$status" -eq "$want_status" ] || fail "exit status $status, expected $want_status"
[ ! -s "$out" ] || fail "stdout is not empty"
[ "$(wc -l <"$err")" -eq 1 ] || fail "stderr has $(wc -l <"$err") lines, expected 1"
grep -Eq "$regex" "$err" || fail "stderr does not match: $regex"
echo "ok: $(cat "$err")"
