#!/usr/bin/env bash
# kvprep run across MPI ranks (docs/scale.md). Over one small corpus and one pipeline (independent and similarity
# KV, an int8 compressed mode, shards small enough that prefill takes many rounds):
#   1. two ranks (mpirun --oversubscribe -np 2) make the store one process makes: the same chunk table,
#      embeddings, index and neighbour files (manifest hashes) and the same KV content hash in every mode;
#   2. rank 1 killed (SIGKILL) after the first committed prefill round: the job fails, the store verifies, and a
#      two-rank rerun resumes and ends with that same store;
#   3. a stage command other than run under mpirun is refused with one line;
#   and each rank keeps its own GPU of those the job inherits (cluster/rank_gpu.h).
# Usage: mpi_ranks_test.sh KVPREP_BINARY
. "$(dirname "$0")/common.sh"
kvprep=$1
here=$(dirname "$0")
job=
trap '[ -n "$job" ] && kill -9 "$job" 2>/dev/null; rm -rf "$work"' EXIT
command -v mpirun >/dev/null || fail "mpirun not found (scripts/setup.sh installs openmpi-bin)"
# Open MPI refuses root unless told; CI containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun --oversubscribe -np 2)

"$here/small_corpus.py" "$work/corpus.jsonl" 60
cat >"$work/pipeline.yaml" <<YAML
store: $work/unset
corpus: $work/corpus.jsonl
model: smollm2
threads: 1
neighbors: {top_n: 3}
prefill: {modes: [independent, similarity], batch_tokens: 192, shard_mb: 1}
compress:
  - {to: sim-q8, from: similarity, quant: int8}
YAML

# What must agree between two stores: the recorded hashes of the tables, and each KV mode's content hash.
fingerprint() {
  python3 - "$1" <<'PY'
import json, subprocess, sys
store = sys.argv[1]
m = json.load(open(f"{store}/manifest.json"))
for f in sorted(m["files"], key=lambda f: f["path"]):
    if not f["path"].startswith("kv/"):
        print(f["path"], f["xxh3"])
PY
  "$kvprep" inspect --store "$1" --json | python3 -c '
import json, sys
for mode, kv in sorted(json.load(sys.stdin)["kv"].items()):
    print("kv", mode, kv["chunks"], kv["content_hash"])'
}

"$kvprep" run "$work/pipeline.yaml" --set store="$work/one" --set threads=2 >"$work/one.out" 2>&1 ||
  fail "the one-process run failed: $(cat "$work/one.out")"
fingerprint "$work/one" >"$work/one.hashes"
grep -q "^kv similarity " "$work/one.hashes" || fail "the one-process store has no similarity KV"

# 1. Two ranks, each keeping one of the two GPUs the job inherits (the binding happens without a GPU: it only
#    narrows CUDA_VISIBLE_DEVICES, which the CPU backend ignores).
CUDA_VISIBLE_DEVICES=3,5 "${mpi[@]}" -x CUDA_VISIBLE_DEVICES "$kvprep" run "$work/pipeline.yaml" \
  --set store="$work/two" >"$work/two.out" 2>&1 || fail "the two-rank run failed: $(cat "$work/two.out")"
for rank in 0 1; do
  gpu=$((rank == 0 ? 3 : 5))
  grep -q "^rank $rank of 2: node-local rank $rank of a node with 2 GPUs uses GPU $gpu$" "$work/two.out" ||
    fail "rank $rank was not bound to GPU $gpu: $(grep "GPU" "$work/two.out")"
done
"$kvprep" verify --store "$work/two" >/dev/null || fail "the two-rank store does not verify"
fingerprint "$work/two" >"$work/two.hashes"
diff "$work/one.hashes" "$work/two.hashes" || fail "two ranks made another store than one process"
[ "$(grep -cE "^prefill independent +60 chunks computed" "$work/two.out")" -eq 1 ] || fail "the step lines are not printed once: $(cat "$work/two.out")"
shards=$(python3 -c 'import json,sys; print(sum(f["path"].startswith("kv/independent-") for f in json.load(open(sys.argv[1]))["files"]))' "$work/two/manifest.json")
[ "$shards" -ge 4 ] || fail "prefill wrote $shards independent shards: too few rounds to test"

# 2. Rank 1 killed after the first committed round of independent KV; then a rerun.
"${mpi[@]}" "$kvprep" run "$work/pipeline.yaml" --set store="$work/killed" >"$work/killed.out" 2>&1 &
job=$!
rank1=
for _ in $(seq 1 600); do
  if [ -f "$work/killed/manifest.json" ] && grep -q '"kv/independent-' "$work/killed/manifest.json"; then
    for pid in $(pgrep -f "kvprep run $work/pipeline.yaml --set store=$work/killed" || true); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$pid
    done
    break
  fi
  sleep 0.1
done
[ -n "$rank1" ] || fail "never saw a committed independent shard and rank 1: $(cat "$work/killed.out")"
kill -9 "$rank1"
status=0
wait "$job" || status=$?
job=
[ "$status" -ne 0 ] || fail "the job exited 0 after rank 1 was killed"
grep -q "process rank 1 .*exited on signal 9" "$work/killed.out" || fail "the job did not name the killed rank: $(cat "$work/killed.out")"
"$kvprep" verify --store "$work/killed" >/dev/null || fail "the store of the killed job does not verify"
"${mpi[@]}" "$kvprep" run "$work/pipeline.yaml" --set store="$work/killed" >"$work/resumed.out" 2>&1 ||
  fail "the rerun failed: $(cat "$work/resumed.out")"
"$kvprep" verify --store "$work/killed" >/dev/null || fail "the resumed store does not verify"
fingerprint "$work/killed" >"$work/resumed.hashes"
diff "$work/one.hashes" "$work/resumed.hashes" || fail "the resumed two-rank store differs from one process's"

# 3. Other commands run alone.
status=0
"${mpi[@]}" "$kvprep" verify --store "$work/two" >"$work/verify.out" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "kvprep verify under mpirun was not refused"
grep -q "^error: kvprep verify runs as one process; under mpirun or srun use \`kvprep run" "$work/verify.out" ||
  fail "no clear refusal: $(cat "$work/verify.out")"
echo "ok: two ranks make the one-process store, and resume after a killed rank"
