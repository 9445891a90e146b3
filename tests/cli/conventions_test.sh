#!/usr/bin/env bash
# The conventions every kvprep and kvrun command shares (docs/kvrun.md, README "Options"): --version on both tools
# names the version, commit, build type and this CPU's kernels; every subcommand takes --threads 1 --json --quiet,
# prints one JSON object on stdout that parses, and nothing on stderr when it succeeds; ask, generate, batch and
# eval name the same timings alike.
# Usage: conventions_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1 kvrun=$2

for tool in "$kvprep" "$kvrun"; do
  name=$(basename "$tool")
  "$tool" --version >"$work/version" 2>"$work/version.err" || fail "$name --version: status $?"
  [ ! -s "$work/version.err" ] || fail "$name --version wrote to stderr: $(cat "$work/version.err")"
  grep -Eq "^$name [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7}(-dirty)?|unknown), [A-Za-z]+ build\)$" \
    "$work/version" || fail "$name --version first line: $(head -1 "$work/version")"
  grep -q '^cpu: ' "$work/version" || fail "$name --version names no CPU"
  grep -Eq '^kernels: matmul [a-z0-9-]+' "$work/version" || fail "$name --version names no kernels"
done

# Runs one command with the common options: status 0, stdout one JSON object (saved as $work/$1.json), stderr empty.
quiet_json() {
  local label=$1
  shift
  "$@" --threads 1 --json --quiet >"$work/$label.json" 2>"$work/$label.err" ||
    fail "$label: status $?: $(cat "$work/$label.err")"
  [ ! -s "$work/$label.err" ] || fail "$label --quiet wrote to stderr: $(cat "$work/$label.err")"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert isinstance(d, dict), d' "$work/$label.json" ||
    fail "$label --json: not one JSON object: $(head -c 300 "$work/$label.json")"
}

cp "$(dirname "$0")/../fixtures/four_topics.jsonl" "$work/corpus.jsonl"  # four short passages
store=$work/store
quiet_json chunk "$kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" --chunk-tokens 32
quiet_json embed "$kvprep" embed --store "$store"
quiet_json index "$kvprep" index --store "$store"
quiet_json neighbors "$kvprep" neighbors --store "$store" --top-n 2
quiet_json search "$kvprep" search --store "$store" --query "rings" --top-k 2
quiet_json prefill "$kvprep" prefill --store "$store" --mode independent
quiet_json prefill-similarity "$kvprep" prefill --store "$store" --mode similarity --top-n 2
quiet_json compress "$kvprep" compress --store "$store" --from independent --to ind-int8 --quant int8
quiet_json share-search "$kvprep" share-search --store "$store" --layers 1 --samples 2 --sample-tokens 8
quiet_json verify "$kvprep" verify --store "$store"
quiet_json inspect "$kvprep" inspect --store "$store"
quiet_json prune "$kvprep" prune --store "$store" --dry-run
cat >"$work/pipeline.yaml" <<EOF2
store: $store
corpus: $work/corpus.jsonl
chunk:
  chunk_tokens: 32
prefill:
  modes: [independent]
EOF2
quiet_json run "$kvprep" run "$work/pipeline.yaml"
python3 - "$work" <<'PY' || fail "kvprep --json fields"
import json, sys
w = sys.argv[1]
d = lambda name: json.load(open(f"{w}/{name}.json"))
assert d("chunk")["chunks"] >= 4 and d("chunk")["new_chunks"] == d("chunk")["chunks"], d("chunk")
assert d("embed")["embedded"] == d("chunk")["chunks"], d("embed")
assert d("index")["vectors"] == d("chunk")["chunks"], d("index")
assert len(d("search")["hits"]) == 2 and d("search")["hits"][0]["title"] == "Saturn", d("search")
assert d("prefill")["computed"] == d("chunk")["chunks"] and d("prefill")["tokens"] > 0, d("prefill")
assert d("compress")["mode"] == "ind-int8" and d("compress")["computed"] > 0, d("compress")
assert d("verify")["ok"] is True and d("verify")["problems"] == [], d("verify")
assert "ind-int8" in d("inspect")["kv"], d("inspect")
assert d("prune")["dry_run"] is True and d("prune")["dropped"] == 0 and d("prune")["kept"] > 0, d("prune")
steps = d("run")["steps"]
assert steps and all(set(s) == {"name", "outcome"} for s in steps), steps
PY

# A store that fails verify: the JSON object still comes, then the error line and status 1.
cp -r "$store" "$work/broken"
shard=$(ls "$work/broken"/kv/independent-*.h5 | head -1)
printf 'x' | dd of="$shard" bs=1 seek=4096 conv=notrunc status=none
set +e
"$kvprep" verify --store "$work/broken" --json --quiet --threads 1 >"$work/broken.json" 2>"$work/broken.err"
status=$?
set -e
[ "$status" -eq 1 ] && grep -q '^error: ' "$work/broken.err" || fail "damaged store: status $status, $(cat "$work/broken.err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["ok"] is False and d["problems"], d' \
  "$work/broken.json" || fail "damaged store --json"

quiet_json ask "$kvrun" ask --store "$store" --question "Which planet has rings?" --top-k 2 --max-tokens 4
printf '{"id": "a", "question": "What is a glacier?", "answers": ["ice"]}\n{"id": "b", "question": "What is a violin?", "answers": ["instrument"]}\n' \
  >"$work/questions.jsonl"
quiet_json batch "$kvrun" batch --store "$store" --queries "$work/questions.jsonl" --out "$work/answers.jsonl" \
  --top-k 2 --max-tokens 4
quiet_json generate "$kvrun" generate --model smollm2 --prompt "Once upon a time" --max-tokens 4
quiet_json eval "$kvrun" eval --store "$store" --dataset "$work/questions.jsonl" --out "$work/eval" --setting retrieval \
  --top-k 2 --methods full,reuse --ratios 0 --kv independent --max-tokens 4 --limit 2
python3 - "$work" <<'PY' || fail "kvrun timing names"
import json, sys
w = sys.argv[1]
d = lambda name: json.load(open(f"{w}/{name}.json"))
ask, gen, batch, ev = d("ask"), d("generate"), d("batch"), d("eval")
phases = {"retrieve", "load", "select", "prefill", "ttft", "decode"}
assert set(ask["timings_ms"]) == phases, ask["timings_ms"]
assert "decode" in ask["tokens_per_s"], ask
assert {"prefill", "ttft", "decode"} <= set(gen["timings_ms"]) and gen["timings_ms"]["ttft"] > 0, gen
assert set(gen["tokens_per_s"]) == {"prefill", "decode"}, gen
assert gen["n_prompt_tokens"] > 0 and gen["generated_tokens"] >= 1, gen
rows = [json.loads(l) for l in open(f"{w}/answers.jsonl")]
assert batch["questions"] == 2 and len(rows) == 2, batch
assert all(set(r["timings_ms"]) == phases for r in rows), rows
assert ev["points"] and all(set(p["timings_ms"]) == phases for p in ev["points"]), ev
assert {p["method"] for p in ev["points"]} == {"full", "reuse"}, ev
PY
echo "ok: --version on both tools; --threads 1 --json --quiet on every subcommand; the same timing names"
