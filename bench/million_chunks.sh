#!/usr/bin/env bash
# Corpus scale: chunk, index and neighbours over a synthetic corpus of about a million chunks, each stage a
# process of its own with its wall time and peak memory (GNU time's maximum resident set), then recall@10 of the
# neighbour lists against exact search on 1,000 sample rows. Embeddings are synthetic (clustered unit vectors,
# bench/scale_tool.cpp): the real embedder would take hours here. Writes a markdown report.
# Usage: bench/million_chunks.sh [OUT.md]
#   env: BUILD_DIR=build, WORK=/tmp/kvf-million (corpus and store; kept for reruns), DOCS=250000, WORDS=800,
#        THREADS=2, INDEX="kind=ivfpq ivf_nlist=4096 ivf_nprobe=16 pq_m=48 pq_refine=4 train_sample=131072"
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
work=${WORK:-/tmp/kvf-million}
docs=${DOCS:-250000}
words=${WORDS:-800}
threads=${THREADS:-2}
index=${INDEX:-kind=ivfpq ivf_nlist=4096 ivf_nprobe=16 pq_m=48 pq_refine=4 train_sample=131072}
out=${1:-$here/docs/results/million_chunks.md}
mkdir -p "$work"
corpus=$work/corpus-$docs-$words.jsonl
store=$work/store
log=$work/log
: >"$log"

[ -f "$corpus" ] || { "$here/bench/synthetic_corpus.py" "$corpus.partial" "$docs" "$words" && mv "$corpus.partial" "$corpus"; }
rm -rf "$store"
rows=()
stage() {  # name, command...: one report row "| name | wall s | peak GiB |"
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
  read -r wall kb <"$work/time"
  rows+=("| $name | $wall | $(python3 -c "print(f'{$kb / 2**20:.2f}')") |")
  echo "$name: $wall s, $kb KB" >&2
}
set -- $index
index_args=()
for kv in "$@"; do index_args+=("--${kv%%=*}" "${kv#*=}"); done
index_args=("${index_args[@]/#--kind/--index}")
index_args=("${index_args[@]//_/-}")

stage chunk "$build/bin/kvprep" chunk --corpus "$corpus" --store "$store" --threads "$threads"
stage "embed (synthetic)" "$build/bin/kvf_scale_tool" embed-synthetic --store "$store"
stage "index ($index)" "$build/bin/kvprep" index --store "$store" "${index_args[@]}"
stage "neighbors (top 10)" "$build/bin/kvprep" neighbors --store "$store" --top-n 10
recall=$("$build/bin/kvf_scale_tool" recall --store "$store" --samples 1000 --k 10 --threads "$threads")
chunks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stages"][0]["counts"]["chunks"])' "$store/manifest.json")
tokens=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stages"][0]["counts"]["tokens"])' "$store/manifest.json")
{
  echo "# Corpus scale: a million chunks through chunk, index and neighbours"
  echo
  echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $threads threads;"
  echo "$(date -u +%Y-%m-%d). Corpus: $docs synthetic documents of about $words words ($(du -h "$corpus" | cut -f1)),"
  echo "$chunks chunks, $tokens tokens (SmolLM2 tokenizer, 256-token chunks). Embeddings: clustered synthetic 384-d"
  echo "unit vectors (100 chunks per centre). Each stage is one process; peak = maximum resident set."
  echo
  echo "| stage | wall s | peak GiB |"
  echo "|---|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Recall@10 of the stored neighbour lists against exact search (1,000 evenly spaced rows): \`$recall\`"
  echo
  echo "Store files:"
  echo
  echo '```'
  (cd "$store" && du -h chunks.h5 embeddings.h5 index.faiss neighbors.h5)
  echo '```'
  echo
  echo "Command: \`bench/million_chunks.sh\` (INDEX=\"$index\")"
} >"$out"
cat "$out"
