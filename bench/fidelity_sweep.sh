#!/usr/bin/env bash
# Stored KV, bytes against fidelity (docs/compress.md, "Fidelity"): a store's similarity KV compressed by each
# candidate codec (zstd:19 on all), then one kvrun eval of reuse and fusion at 15% over the similarity KV and every
# candidate, each paired question by question against the similarity KV (--reference-kv similarity), then
# scripts/fidelity_report.py (fidelity.md, fidelity.png) from the sweep and `kvprep inspect --json`.
# Resumable: compressed modes and answered questions are kept.
# Usage: bench/fidelity_sweep.sh PIPELINE STORE OUT [LIMIT]
#   PIPELINE: an eval pipeline (pipelines/paper-hotpotqa-qwen0.5b.yaml); STORE: its store, built over LIMIT
#   questions' passages (the first line below says how); LIMIT: questions, default 200
#   env MODES: candidates, default "q4z r4z r3z 8x" (int4 g32; rotated int4 and int3 g64 with nf V; --recipe 8x);
#     16x: --recipe 16x (select anchors re-runs the model over every chunk: 1.3 chunks/s on Qwen 1.5B, 2 cores)
#   env METHODS: kvrun eval --methods, default reuse,fusion (eval answers full and reuse whatever it names)
#   env MODEL: the decoder when it is not the pipeline's (qwen1.5b: the store must be built with it, too)
#   env BUILD_DIR, THREADS
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
threads=${THREADS:-2}
[ $# -ge 3 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
pipeline=$1 store=$2 out=$3 limit=${4:-200}
model_option=()
[ -z "${MODEL:-}" ] || model_option=(--model "$MODEL")
[ -f "$store/manifest.json" ] || {
  echo "error: $store: no store; build it with: $build/bin/kvrun eval --pipeline $pipeline ${model_option[*]}" \
       "--build-store $store --build-block 0 --limit $limit --methods reuse,fusion --ratios 0.15 --kv similarity" \
       "--out OUT" >&2
  exit 1
}
codec() {  # the kvprep compress options of a candidate
  case $1 in
    q4z) echo "--quant int4 --quant-group 32 --entropy zstd:19" ;;
    r4z) echo "--quant int4 --quant-group 64 --rotate --v-levels nf --entropy zstd:19" ;;
    r3z) echo "--quant int3 --quant-group 64 --rotate --v-levels nf --entropy zstd:19" ;;
    8x | 16x) echo "--recipe $1" ;;
    *) echo "error: unknown candidate '$1' (q4z r4z r3z 8x 16x)" >&2; exit 2 ;;
  esac
}
kv=similarity
for m in ${MODES:-q4z r4z r3z 8x}; do
  options=$(codec "$m")
  # shellcheck disable=SC2086  # the options are words
  "$build/bin/kvprep" compress --store "$store" --from similarity --to "sim-$m" $options --threads "$threads"
  kv="$kv,sim-$m"
done
mkdir -p "$out"
"$build/bin/kvrun" eval --pipeline "$pipeline" "${model_option[@]}" --store "$store" --limit "$limit" \
  --methods "${METHODS:-reuse,fusion}" --ratios 0.15 --kv "$kv" --reference-kv similarity --out "$out" \
  --threads "$threads"
"$build/bin/kvprep" inspect --store "$store" --json >"$out/inspect.json"
python3 "$here/scripts/fidelity_report.py" "$out" "$out/inspect.json"
