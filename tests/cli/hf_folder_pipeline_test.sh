#!/usr/bin/env bash
# kvprep and kvrun on a Hugging Face folder, end to end: `model: DIR` in a pipeline builds a store, `kvrun ask
# --model DIR` answers from it, and the answers equal those of the same model as a GGUF (qwen0.5b-hf is the
# qwen0.5b GGUF dequantized, so both run the same weights in the f32 compute mode).
# Usage: hf_folder_pipeline_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2
models=${KVFUSE_HOME:-$HOME/.cache/kvfuse}/models
[ -d "$models/qwen0.5b-hf" ] || { echo "qwen0.5b-hf is not installed (scripts/setup.sh qwen0.5b-hf)"; exit 0; }

cat >"$work/corpus.jsonl" <<'JSON'
{"id": 1, "title": "Volcano", "text": "A volcano is a rupture in the crust where lava, ash and gases escape."}
{"id": 2, "title": "Glacier", "text": "A glacier is a persistent body of dense ice that moves under its own weight."}
{"id": 3, "title": "Saturn", "text": "Saturn is the sixth planet from the Sun, known for its rings of ice and rock."}
JSON
for model in qwen0.5b "$models/qwen0.5b-hf"; do
  name=$(basename "$model")
  cat >"$work/$name.yaml" <<YAML
store: $work/store-$name
corpus: $work/corpus.jsonl
model: $model
embedder: minilm
index: {kind: flat}
neighbors: {top_n: 2}
prefill: {modes: [independent, similarity], compute: f32}
YAML
  "$kvprep" run "$work/$name.yaml" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "kvprep run with model: $model"; }
  for method in full reuse fusion; do
    "$kvrun" ask --store "$work/store-$name" --model "$model" --compute f32 --kv similarity --top-k 2 \
      --method "$method" --max-tokens 12 --question "Which planet has rings?" --json >"$work/$name-$method.json"
  done
done
for method in full reuse fusion; do
  python3 - "$work/qwen0.5b-$method.json" "$work/qwen0.5b-hf-$method.json" <<'PY' || fail "$method answers differ"
import json, sys
gguf, folder = (json.load(open(p)) for p in sys.argv[1:])
print(f"{gguf['method']}: GGUF {gguf['answer']!r}, folder {folder['answer']!r}")
assert gguf["answer"] == folder["answer"] and gguf["answer"].strip(), (gguf["answer"], folder["answer"])
PY
done
echo "ok: kvprep run and kvrun ask with model: DIR give the GGUF's answers (full, reuse, fusion)"
