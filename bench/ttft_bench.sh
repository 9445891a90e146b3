#!/usr/bin/env bash
# TTFT of kvrun's methods against full (issue: 10 chunks of ~200 tokens, SmolLM2, 2 threads, median of 5 runs).
# Builds a store (chunks of ~200 tokens, independent KV) from the passages of the first QUESTIONS questions of a
# data set, then runs build/bin/kvf_ttft_bench over them and prints its markdown table.
# Usage: bench/ttft_bench.sh [DATASET.jsonl] ; env BUILD_DIR, THREADS (2), QUESTIONS (5), RUNS (5), KVFUSE_DATA,
#   COMPUTE (fast | f32: the compute mode of the store's KV and of every query), MODEL (smollm2 | qwen0.5b | ...)
#   default data set: $KVFUSE_DATA/musique_cacheblend150.jsonl (10 passages of ~512 tokens per question)
#   Long contexts: CHUNKS (10: chunks per question), PASSAGES (each question's passages topped up with the next
#   questions' to this many), METHODS and RATIOS (kvf_ttft_bench's lists, space-separated). 16K tokens of Qwen:
#   MODEL=qwen0.5b QUESTIONS=2 RUNS=3 PASSAGES=40 CHUNKS=95 METHODS="full reuse fusion" RATIOS=0.15 \
#     bench/ttft_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
. "$here/bench/data_dir.sh"
data=$(kvf_data_dir "$here")
threads=${THREADS:-2}
questions=${QUESTIONS:-5}
runs=${RUNS:-5}
compute=${COMPUTE:-fast}
model=${MODEL:-smollm2}
dataset=${1:-$data/musique_cacheblend150.jsonl}
[ -f "$dataset" ] || { echo "error: $dataset not found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The questions (with their passages) and a corpus of exactly those passages.
chunks=${CHUNKS:-10}
"$here/bench/questions_of.py" "$dataset" "$questions" "$work" ${PASSAGES:+"$PASSAGES"}
"$build/bin/kvprep" chunk --corpus "$work/corpus.jsonl" --store "$work/store" --chunk-tokens 200 --model "$model" \
  >/dev/null
"$build/bin/kvprep" prefill --store "$work/store" --mode independent --threads "$threads" --compute "$compute" \
  --model "$model" >/dev/null 2>&1
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, flags: $(grep -o -w -E \
  'avx2|avx512f|avx512_bf16|avx512_vnni|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "data: $(basename "$dataset"); model: $model; compute: $compute"
"$build/bin/kvf_ttft_bench" --store "$work/store" --model "$model" --queries "$work/questions.jsonl" --questions "$questions" \
  --chunks "$chunks" --runs "$runs" --threads "$threads" --compute "$compute" \
  ${METHODS:+--methods $METHODS} ${RATIOS:+--ratios $RATIOS}  # the lists split into words
