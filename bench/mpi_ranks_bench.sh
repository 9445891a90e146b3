#!/usr/bin/env bash
# One process against MPI ranks on the same machine and pipeline: `kvprep run` (independent and similarity KV of
# SmolLM2 over the first DOCS passages of the HotpotQA corpus) as 1 rank x 2 threads and as 2 ranks x 1 thread,
# wall time of each and whether the stores' KV content hashes agree. On a machine of C cores the ranks cannot be
# faster than the threads; what this shows is the cost of splitting and committing across ranks.
# Usage: bench/mpi_ranks_bench.sh [OUT.md]   (env: BUILD_DIR=build, KVFUSE_DATA (bench/data_dir.sh), DOCS=200)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
. "$here/bench/data_dir.sh"
data=$(kvf_data_dir "$here")
docs=${DOCS:-200}
out=${1:-$here/docs/results/mpi_ranks_cpu.md}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
head -"$docs" "$data/corpus_hotpotqa.jsonl" >"$work/corpus.jsonl"
cat >"$work/p.yaml" <<YAML
store: $work/unset
corpus: $work/corpus.jsonl
model: smollm2
neighbors: {top_n: 10}
prefill: {modes: [independent, similarity], shard_mb: 64}
YAML
run() {  # label, store, threads, launcher...: the wall seconds
  local label=$1 store=$2 threads=$3 t0
  shift 3
  t0=$(date +%s.%N)
  "$@" "$build/bin/kvprep" run "$work/p.yaml" --set store="$store" --set threads="$threads" >"$work/$label.log" 2>&1 ||
    { cat "$work/$label.log" >&2; exit 1; }
  python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0"
}
hashes() {  # every KV mode's content hash, one line; fails when the store has none
  "$build/bin/kvprep" inspect --store "$1" --json | python3 -c '
import json, sys
kv = json.load(sys.stdin)["kv"]
assert kv, "no KV modes"
print(" ".join(mode + ":" + kv[mode]["content_hash"] for mode in sorted(kv)))'
}
one=$(run one "$work/one" 2)
two=$(run two "$work/two" 1 mpirun --oversubscribe -np 2)
one_hashes=$(hashes "$work/one")
two_hashes=$(hashes "$work/two")
same=no
[ "$one_hashes" = "$two_hashes" ] && same=yes
chunks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stages"][0]["counts"]["chunks"])' "$work/one/manifest.json")
{
  echo "# kvprep run: one process against two MPI ranks on one machine"
  echo
  echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%d)."
  echo "Pipeline: SmolLM2-135M, the first $docs HotpotQA passages ($chunks chunks), independent and similarity KV."
  echo
  echo "| run | wall s |"
  echo "|---|---:|"
  echo "| 1 process x 2 threads | $one |"
  echo "| 2 ranks x 1 thread (mpirun --oversubscribe -np 2) | $two |"
  echo
  echo "Two ranks / one process: $(python3 -c "print(f'{$two / $one:.2f}x')") the time. Same KV content in every mode: $same"
  echo "(one process: \`$one_hashes\`; two ranks: \`$two_hashes\`)."
  echo
  echo "Command: \`bench/mpi_ranks_bench.sh\`"
} >"$out"
cat "$out"
