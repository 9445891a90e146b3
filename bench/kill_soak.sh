#!/usr/bin/env bash
# Kill soak: every stage of tests/cli/kill_stages.sh (chunk, embed, index, neighbors, prefill independent and
# similarity, compress) killed with SIGKILL KILLS times at random moments of its run, on the small test corpus and
# the default decoder (SmolLM2). After each kill the store must verify, and the resumed stage must leave the content
# of an uninterrupted run (kill_stages.sh's check_killed_store). A run that finishes before its kill is not counted
# and is tried again. Prints one line per stage and the machine; exits 1 at the first failure.
# Usage: bench/kill_soak.sh [BUILD_DIR] [KILLS] [DOCUMENTS]   (defaults: build 50 8; SEED=N fixes the moments)
set -euo pipefail
kvprep=$(cd "${1:-build}" && pwd)/bin/kvprep
kills_per_stage=${2:-50}
documents=${3:-8}
RANDOM=${SEED:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=../tests/cli/kill_stages.sh
source "$(dirname "$0")/../tests/cli/kill_stages.sh"

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "command: bench/kill_soak.sh ${1:-build} $kills_per_stage $documents (SEED=${SEED:-1})"
build_reference_stores "$documents"
total_start=$SECONDS
for i in "${!kill_stages[@]}"; do
  start=$SECONDS kills=0 finished=0 min_ms=-1 max_ms=0
  limit_ms=$(awk -v s="${ref_seconds[i]}" 'BEGIN { printf "%d", s * 1000 }')
  while [ "$kills" -lt "$kills_per_stage" ]; do
    rm -rf "$work/store"
    cp -r "$work/ref$i" "$work/store"
    delay_ms=$(((RANDOM * 32768 + RANDOM) % (limit_ms + 1)))
    # shellcheck disable=SC2086
    "$kvprep" ${kill_stages[$i]} --store "$work/store" >/dev/null 2>&1 &
    pid=$!
    sleep "$(awk -v ms="$delay_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
    kill -KILL "$pid" 2>/dev/null || true
    status=0
    { wait "$pid"; } 2>/dev/null || status=$?  # quiet: bash would report the kill on stderr
    if [ "$status" -eq 0 ]; then
      finished=$((finished + 1))
      [ "$finished" -le $((10 * kills_per_stage)) ] || fail "${kill_stages[$i]}: never killed in $finished runs"
      continue
    fi
    [ "$status" -eq 137 ] || fail "${kill_stages[$i]}: exit status $status before the kill at $delay_ms ms"
    kills=$((kills + 1))
    [ "$min_ms" -ge 0 ] && [ "$min_ms" -le "$delay_ms" ] || min_ms=$delay_ms
    [ "$max_ms" -ge "$delay_ms" ] || max_ms=$delay_ms
    check_killed_store "$i" "killed after $delay_ms ms"
  done
  printf '%-28s %3d kills at %d..%d ms of a %.2f s run, %d runs finished first, 0 failures, %d s\n' \
    "$(stage_name "${kill_stages[$i]}")" "$kills" "$min_ms" "$max_ms" "${ref_seconds[i]}" "$finished" \
    $((SECONDS - start))
done
echo "ok: $((kills_per_stage * ${#kill_stages[@]})) kills, every killed store verified and resumed to the uninterrupted content in $((SECONDS - total_start)) s"
