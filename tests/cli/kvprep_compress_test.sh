#!/usr/bin/env bash
# kvprep compress end to end with the real model on a tiny data set: anchors (select and append), layer sharing
# (share-search, then compress using its result), int8, int4, int3 and int2 (also Hadamard-rotated with nf V levels),
# alone and combined, each a new KV mode that verifies
# (anchors keeping every row store the source's exact bytes; zstd-coded shards (--entropy, --recipe) the same KV
# as uncoded ones, in fewer bytes on disk),
# that inspect reports with its bytes per token, and that kvrun ask (every method) and kvrun eval read. Bad
# requests are refused with messages that name the option and value.
# Usage: kvprep_compress_test.sh KVPREP KVRUN
. "$(dirname "$0")/common.sh"
kvprep=$1
kvrun=$2

cat >"$work/qa.jsonl" <<'JSON'
{"id": "rings", "question": "Which planet is known for its rings?", "answers": ["Saturn"], "contexts": [{"title": "Volcano", "text": "A volcano is a rupture in the crust of a planet where hot lava, volcanic ash and gases escape from a magma chamber below the surface."}, {"title": "Saturn", "text": "Saturn is the sixth planet from the Sun and the second largest in the Solar System, known for its bright rings of ice and rock."}]}
{"id": "bow", "question": "What is the violin played with?", "answers": ["a bow", "bow"], "contexts": [{"title": "Violin", "text": "The violin is a wooden string instrument, the smallest and highest-pitched of its family, usually played with a bow drawn across its strings."}, {"title": "Saturn", "text": "Saturn is the sixth planet from the Sun and the second largest in the Solar System, known for its bright rings of ice and rock."}]}
JSON
store="$work/store"
"$kvrun" eval --dataset "$work/qa.jsonl" --build-store "$store" --methods full,reuse --ratios 0 --max-tokens 2 \
  --out "$work/eval0" 2>"$work/log" || { cat "$work/log"; fail "store build"; }

compress() { "$kvprep" compress --store "$store" "$@" 2>>"$work/log" || { cat "$work/log"; fail "compress $*"; }; }
compress --from similarity --to a50 --anchors 0.5 --segment 16
compress --from independent --to app25 --anchors 0.25 --segment 16 --anchor-mode append
"$kvprep" share-search --store "$store" --layers 6 --samples 3 --sample-tokens 16 --steps >"$work/search" \
  2>>"$work/log" || { cat "$work/log"; fail "share-search"; }
grep -q "^shared 6 of 6 layers asked" "$work/search" || fail "share-search: $(cat "$work/search")"
compress --from similarity --to s6 --share-layers 6 --share-samples 3 --share-sample-tokens 16
compress --from similarity --to q8 --quant int8
compress --from similarity --to q4 --quant int4 --quant-group 32 --keep-first 2
compress --from similarity --to q2 --quant int2 --quant-group 64
compress --from similarity --to q3 --quant int3 --quant-group 64
compress --from similarity --to q4r --quant int4 --quant-group 32 --keep-first 2 --rotate --v-levels nf
compress --from similarity --to q4rz --quant int4 --quant-group 32 --keep-first 2 --rotate --v-levels nf --entropy zstd:19
compress --from similarity --to simz --entropy zstd:3   # f16 as it is, zstd-coded: lossless
compress --from similarity --to q2r --quant int2 --quant-group 64 --rotate --v-levels nf
compress --from similarity --to r8 --recipe 8x --json >"$work/r8.json"
python3 - "$work/r8.json" <<'PY' || fail "compress --json: $(cat "$work/r8.json")"
import json, sys
r = json.load(open(sys.argv[1]))
# zstd codes 2-bit KV smaller than it is held in memory; the summary names both.
assert 0 < r["file_bytes"] < r["stored_bytes"] < r["source_bytes"], r
PY
compress --from s6 --to s6-q4 --quant int4 --quant-group 32   # shared layers read through the encoding's layer map
compress --from similarity --to a100 --anchors 1 --segment 16   # keeps every row: the same bytes as its source
compress --from a50 --to a50-s6-q8 --share-layers 6 --share-samples 3 --share-sample-tokens 16 --quant int8
# A rerun has nothing to do.
"$kvprep" compress --store "$store" --from similarity --to q8 --quant int8 >"$work/again" 2>&1
grep -q "nothing to do" "$work/again" || fail "rerun recompressed: $(cat "$work/again")"

"$kvprep" verify --store "$store" >"$work/verify" || { cat "$work/verify"; fail "verify"; }
"$kvprep" inspect --store "$store" --json >"$work/inspect.json"
python3 - "$work/inspect.json" <<'PY' || fail "inspect"
import json, sys
s = json.load(open(sys.argv[1]))
kv = s["kv"]
full = kv["similarity"]["kv_bytes_per_token"]
tokens = kv["similarity"]["tokens"]
assert kv["similarity"]["rows"] == tokens, kv["similarity"]
for mode in ["a50", "app25", "s6", "q8", "a50-s6-q8", "q4", "q3", "q2", "q4r"]:
    assert kv[mode]["chunks"] == kv["similarity"]["chunks"] and kv[mode]["tokens"] == tokens, (mode, kv[mode])
assert full == 30 * 3 * 64 * 2 * 2 + 4, full  # f16 K and V of 30 layers x 3 heads x 64, and the position
ratio = {m: full / kv[m]["kv_bytes_per_token"] for m in kv if m != "system"}
# Rows kept: half of each 16-token segment (rounded up), a quarter for append; 6 of 30 layers shared; int8 halves.
assert 1.85 < ratio["a50"] < 2.0, ratio
assert 3.3 < ratio["app25"] < 4.0, ratio
assert abs(ratio["s6"] - 30 / 24) < 0.02, ratio
assert 1.9 < ratio["q8"] < 1.96, ratio
assert 4.4 < ratio["a50-s6-q8"] < 4.8, ratio
# int4 with groups of 32: 4 bits of K and V and an f16 scale and minimum per 32 values of each (3.2x for long
# chunks), less here: the first 2 rows of each ~33-row chunk stay f16 and K's last group is short. int2 with groups
# of 64: 6.4x for long chunks, about 5.9x with one K group per chunk.
assert 2.5 < ratio["q4"] < 3.2, ratio
assert 5.5 < ratio["q2"] < 6.4, ratio
# int3 with groups of 64: 4.57x for long chunks, about 4.3x here.
assert 3.9 < ratio["q3"] < 4.6, ratio
# Rotated int4 with nf V levels: q4's bytes less one f16 minimum per V group of 32 values: 30 * 3 * 64 / 32 * 2 = 360
# bytes per row (every row here is a token).
assert abs(kv["q4"]["kv_bytes_per_token"] - kv["q4r"]["kv_bytes_per_token"] - 360) < 1e-6, (kv["q4"], kv["q4r"])
assert kv["q4"]["dtype"] == "int4" and kv["q3"]["dtype"] == "int3" and kv["q2"]["dtype"] == "int2", kv
assert kv["a50"]["rows"] < tokens and kv["app25"]["rows"] < kv["a50"]["rows"], kv
assert kv["a100"]["content_hash"] == kv["similarity"]["content_hash"], (kv["a100"], kv["similarity"])
# Entropy coding keeps the very bytes (checksums are over the uncoded KV) and takes fewer on disk.
for coded, plain, entropy in [("q4rz", "q4r", "zstd:19"), ("simz", "similarity", "zstd:3"), ("r8", "q2r", "zstd:19")]:
    assert kv[coded]["content_hash"] == kv[plain]["content_hash"], (coded, kv[coded], kv[plain])
    assert kv[coded]["entropy"] == entropy and kv[plain]["entropy"] == "none", (kv[coded], kv[plain])
    assert kv[coded]["kv_bytes_per_token"] == kv[plain]["kv_bytes_per_token"], (kv[coded], kv[plain])
    assert kv[coded]["disk_kv_bytes_per_token"] < 0.97 * kv[plain]["disk_kv_bytes_per_token"], (kv[coded], kv[plain])
    assert kv[plain]["disk_kv_bytes_per_token"] >= kv[plain]["kv_bytes_per_token"], kv[plain]
assert s["settings"]["compress-r8"] == dict(s["settings"]["compress-q2r"], **{"from": "similarity"}), s["settings"]
PY

# kvrun reads every compressed mode with every method.
for mode in a50 app25 s6 q8 a50-s6-q8 q4 q3 q2 q4r; do
  for method in full reuse cacheblend a3 fusion; do
    "$kvrun" ask --store "$store" --kv "$mode" --method "$method" --recompute 0.3 --max-tokens 3 \
      --question "Which planet is known for its rings?" >"$work/ask" 2>>"$work/log" \
      || { cat "$work/log"; fail "ask --kv $mode --method $method"; }
  done
done
"$kvrun" eval --dataset "$work/qa.jsonl" --store "$store" --methods full,reuse,fusion --ratios 0.15 \
  --kv independent,similarity,a50-s6-q8 --max-tokens 2 --out "$work/eval1" 2>>"$work/log" \
  || { cat "$work/log"; fail "eval over a compressed mode"; }
grep -q "| fusion | a50-s6-q8 | 0.15 |" "$work/eval1/report.md" || fail "eval report lacks the compressed mode"

# Over low-bit KV too, recomputing every context token is full attention and recomputing none is reuse.
answer() {
  "$kvrun" ask --store "$store" --kv "$kv" --max-tokens 8 --json --question "Which planet is known for its rings?" "$@" \
    2>>"$work/log" | python3 -c 'import json, sys; print(json.load(sys.stdin)["answer"])'
}
# Read through the zstd filter: the same answers as the uncoded mode.
for pair in "q4rz q4r" "simz similarity" "r8 q2r"; do
  set -- $pair
  [ "$(kv=$1 answer --method fusion --recompute 0.3)" = "$(kv=$2 answer --method fusion --recompute 0.3)" ] \
    || fail "$1 answers differently from $2"
done
for kv in q4 q3 s6-q4 q4r; do
  [ "$(answer --method fusion --recompute 1)" = "$(answer --method full)" ] || fail "$kv: fusion at 1.0 is not full"
  [ "$(answer --method cacheblend --recompute 0)" = "$(answer --method reuse)" ] || fail "$kv: cacheblend at 0 is not reuse"
  # Rows decoded where each layer gathers them answer as rows decoded to f32 when the chunk is read.
  for method in reuse cacheblend fusion; do
    [ "$(answer --method $method --recompute 0.3)" = "$(answer --method $method --recompute 0.3 --decode-low-bit-at-load)" ] \
      || fail "$kv: $method answers differently with --decode-low-bit-at-load"
  done
done

expect_error() {  # expect_error REGEX ARGS...: exit 1 and a message matching REGEX
  local regex=$1
  shift
  if "$kvprep" compress --store "$store" "$@" >"$work/out" 2>&1; then fail "compress $* succeeded"; fi
  grep -Eq -e "$regex" "$work/out" || fail "compress $*: message '$(cat "$work/out")' does not match '$regex'"
}
expect_error "--to 'similarity' is a mode kvprep prefill writes" --from independent --to similarity --quant int8
expect_error "--anchors needs every token's row, but 'a50' already keeps anchors only" --from a50 --to x --anchors 0.25
expect_error "no 'nosuch' KV to compress" --from nosuch --to x --quant int8
expect_error "nothing to do; give --anchors, --share-layers, --quant or --entropy" --from similarity --to x
expect_error "--recipe 8x sets --quant; give the recipe or the options, not both" --from similarity --to x --recipe 8x \
  --quant int4
expect_error "--entropy: unknown compression 'lz4:1'" --from similarity --to x --quant int8 --entropy lz4:1
expect_error "--entropy: compression 'zstd:23' needs a level 1..22" --from similarity --to x --quant int8 --entropy zstd:23
expect_error "group size 48 must be 4..4096 and divide the head dimension 64" --from similarity --to x --quant int4 --quant-group 48
expect_error "group size 4 must be a multiple of 8 for 3 bits" --from similarity --to x --quant int3 --quant-group 4
expect_error "--rotate needs --quant int4, int3 or int2 \(got --quant int8\)" --from similarity --to x --quant int8 --rotate
expect_error "--v-levels nf needs --quant int4, int3 or int2 \(got no --quant\)" --from similarity --to x --anchors 0.5 \
  --v-levels nf
expect_error "compress-q4r settings differ .*rotate = true in the store, absent now" --from similarity --to q4r \
  --quant int4 --quant-group 32 --keep-first 2
expect_error "--share-layers needs every layer's KV, but 's6' already shares layers" --from s6 --to x --share-layers 2
echo "ok"
