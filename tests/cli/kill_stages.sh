# Sourced by tests/cli/kill_resume_test.sh and bench/kill_soak.sh: the stages that build a store, in order, an
# uninterrupted reference run, and the checks a killed stage must pass. The caller sets $kvprep and $work (a scratch
# folder) and defines fail().

# Every stage, each run on the store the one before left (embed commits a checkpoint after every batch).
kill_stages=(
  "chunk --corpus $work/corpus.jsonl --threads 2"
  "embed --batch 2 --checkpoint-seconds 0.000001 --threads 2"
  "index"
  "neighbors --top-n 3"
  "prefill --mode independent --shard-mb 1 --batch-tokens 256 --threads 2"
  "prefill --mode similarity --top-n 3 --shard-mb 1 --batch-tokens 256 --threads 2"
  "compress --from independent --to q8 --quant int8 --shard-mb 1 --threads 2"
)

# A stage's short name: "chunk", "prefill --mode independent", ...
stage_name() { local s=${1%% --[cst][ho]*}; echo "${s% --batch*}"; }

# What a finished stage must have produced: the manifest's non-KV file records and stages, each KV mode's content.
store_content() {
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

# The uninterrupted run over N documents: $work/ref<i> is the store before stage i (ref0 empty), and
# ref_seconds[i] how long stage i took.
ref_seconds=()
build_reference_stores() {
  "$(dirname "${BASH_SOURCE[0]}")/small_corpus.py" "$work/corpus.jsonl" "$1"
  mkdir -p "$work/ref0"
  local i start
  for i in "${!kill_stages[@]}"; do
    cp -r "$work/ref$i" "$work/ref$((i + 1))"
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    "$kvprep" ${kill_stages[$i]} --store "$work/ref$((i + 1))" >/dev/null 2>&1 || fail "uninterrupted: ${kill_stages[$i]}"
    ref_seconds[i]=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.3f", ns / 1e9 }')
  done
}

# After stage i was killed in $work/store ($2 says how): the store verifies, the rerun completes, leaves no
# temporary, verifies, and holds what the uninterrupted run made.
check_killed_store() {
  local i=$1 trial="${kill_stages[$1]}, $2" got want
  if [ -f "$work/store/manifest.json" ]; then
    "$kvprep" verify --store "$work/store" >"$work/verify.out" ||
      fail "$trial: the store does not verify: $(cat "$work/verify.out")"
  fi
  # shellcheck disable=SC2086
  "$kvprep" ${kill_stages[$i]} --store "$work/store" >"$work/resume.out" 2>&1 ||
    fail "$trial: resume failed: $(cat "$work/resume.out")"
  [ -z "$(find "$work/store" -name '*.tmp')" ] || fail "$trial: temporaries left: $(find "$work/store" -name '*.tmp')"
  "$kvprep" verify --store "$work/store" >/dev/null || fail "$trial: the resumed store does not verify"
  got=$(store_content "$work/store")
  want=$(store_content "$work/ref$((i + 1))")
  [ "$got" = "$want" ] || fail "$trial: resumed to other content:
$got
uninterrupted:
$want"
}
