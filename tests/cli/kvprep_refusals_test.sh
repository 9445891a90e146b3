#!/usr/bin/env bash
# kvprep touches no user file and runs on no bad number: every writer refuses an existing folder that is no store
# and leaves everything in it as it was (they used to delete every *.tmp there and in kv/); a store's stale
# temporaries go only when they are kvfuse's own (<store file>.<pid>.tmp) and their writer is gone; NaN, infinite,
# negative and huge option values are refused naming the option; a pipeline's compress entries are checked before
# its first stage. No model is needed: every refusal comes before one is loaded.
# Usage: kvprep_refusals_test.sh KVPREP
. "$(dirname "$0")/common.sh"
kvprep=$1
here=$(dirname "$0")
refused() { "$here/expect_error.sh" "$@" >/dev/null || { "$here/expect_error.sh" "$@"; fail "not refused: ${*:3}"; }; }

# A folder of someone's files, given as a store.
home=$work/home
mkdir -p "$home/kv"
for f in notes.txt draft.tmp kv/mine.tmp report.pdf.77.tmp; do echo "mine" >"$home/$f"; done
echo '{"id": "a", "text": "Some text."}' >"$work/corpus.jsonl"
not_a_store="^error: store $home: the folder is not a kvfuse store .* it holds 3 other entries \(draft.tmp, notes.txt, report.pdf.77.tmp\)"
refused 1 "$not_a_store" "$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$home"
for stage in embed index neighbors prefill; do refused 1 "$not_a_store" "$kvprep" "$stage" --store "$home"; done
refused 1 "$not_a_store" "$kvprep" compress --store "$home" --from independent --to x --quant int8
refused 1 "$not_a_store" "$kvprep" verify --store "$home" --repair
for f in notes.txt draft.tmp kv/mine.tmp report.pdf.77.tmp; do
  [ "$(cat "$home/$f")" = mine ] || fail "$home/$f was changed or removed"
done
[ ! -e "$home/kvprep.lock" ] || fail "a refused writer created kvprep.lock in $home"

# A store under construction (a chunk run killed before its first commit): only kvfuse's own temporaries of
# writers that are gone are removed.
store=$work/store
mkdir -p "$store/kv"
: >"$store/kvprep.lock"
sleep 0 & gone=$!; wait "$gone"
own=(chunks.h5.$gone.tmp kv/independent-00000.h5.$gone.tmp)
others=(notes.tmp kv/notes.tmp chunks.h5.tmp chunks.h5.$$.tmp)  # $$: this shell, alive
for f in "${own[@]}" "${others[@]}"; do echo x >"$store/$f"; done
"$kvprep" embed --store "$store" >/dev/null 2>&1 && fail "embed ran on a store without a manifest"
for f in "${own[@]}"; do [ ! -e "$store/$f" ] || fail "the stale temporary $f was kept"; done
for f in "${others[@]}"; do [ -e "$store/$f" ] || fail "$f was removed"; done

# Numbers: NaN and infinities fail every range; negatives and huge values are out of range. Usage errors (exit 2).
for bad in "prefill --shard-mb nan" "prefill --shard-mb inf" "prefill --shard-mb -1" "prefill --neighbor-cache-mb nan" \
  "prefill --neighbor-cache-mb -5" "prefill --batch-tokens 0" "prefill --batch-tokens 1000000000" \
  "prefill --threads -1" "compress --share-threshold nan" "compress --share-threshold 2" "compress --shard-mb nan" \
  "compress --anchors nan" "compress --batch-tokens -3" "compress --share-samples 0" "compress --threads 1000000" \
  "share-search --threshold nan" "share-search --layers 0" "embed --checkpoint-seconds nan" \
  "embed --checkpoint-seconds -1" "index --ivf-nlist -1" "index --pq-refine 100000" "index --train-sample -5" \
  "index --hnsw-m 1" "chunk --threads -2"; do
  read -r command option value <<<"$bad"
  args=("$kvprep" "$command" --store "$store" "$option" "$value")
  case $command in
    chunk) args+=(--corpus "$work/corpus.jsonl") ;;
    compress) args+=(--from independent --to x) ;;
    share-search) [ "$option" = --layers ] || args+=(--layers 2) ;;
  esac
  refused 2 "^error: $option: .*$value" "${args[@]}"
done

# A pipeline's compress entries are checked before the first stage runs: nothing is created.
cat >"$work/pipeline.yaml" <<YAML
store: $work/new-store
corpus: $work/corpus.jsonl
compress:
  - {to: sim-int8, from: similarity, quant: int8}
  - {to: sim-shared, from: similarity, share_layers: 2, share_threshold: .nan}
YAML
refused 1 "^error: $work/pipeline.yaml: compress\[1\] \(to: sim-shared\): --share-threshold must be a cosine similarity in \[-1, 1\], got nan" \
  "$kvprep" run "$work/pipeline.yaml"
[ ! -e "$work/new-store" ] || fail "the pipeline created its store before refusing a compress entry"
sed -i 's/share_threshold: .nan/share_threshold: 0.5, quant: int9/' "$work/pipeline.yaml"
refused 1 "compress\[1\] \(to: sim-shared\): --quant must be int8, int4, int3 or int2, got 'int9'" "$kvprep" run "$work/pipeline.yaml"
[ ! -e "$work/new-store" ] || fail "the pipeline created its store before refusing a compress entry"
sed -i 's/share_threshold: 0.5, quant: int9/recipe: 8x, quant: int4/' "$work/pipeline.yaml"
refused 1 "compress\[1\]: 'recipe' sets 'quant'; give the recipe or the keys, not both" "$kvprep" run "$work/pipeline.yaml"
sed -i 's/recipe: 8x, quant: int4/recipe: 9x/' "$work/pipeline.yaml"
refused 1 "compress\[1\].recipe: unknown recipe '9x' \(recipes: 8x, 16x\)" "$kvprep" run "$work/pipeline.yaml"
sed -i 's/recipe: 9x/quant: int4, entropy: zstd:30/' "$work/pipeline.yaml"
refused 1 "compress\[1\].entropy: compression 'zstd:30' needs a level 1..22" "$kvprep" run "$work/pipeline.yaml"
[ ! -e "$work/new-store" ] || fail "the pipeline created its store before refusing a compress entry"
echo "ok: no user file touched, no bad number or pipeline entry accepted"
