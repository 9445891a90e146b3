# Sourced first by the CLI tests: strict mode, a scratch folder $work that is removed on exit (kept with KEEP=1, to
# look at after a failure), background jobs stopped on exit, and fail(), which prints the message and, when the last
# command's output was saved in $work/out, that output.
set -euo pipefail
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  if [ -f "$work/out" ]; then echo "--- output ($work/out)"; cat "$work/out"; fi
  exit 1
}
