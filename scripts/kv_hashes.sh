#!/usr/bin/env bash
# Prints the KV content hash of every KV mode of a small store built from scratch by the binaries in BUILD_DIR:
# independent, similarity, S, and compressed modes (anchors select and append, layer sharing, int8, combined).
# Two builds that must compute the same KV (a refactor) print the same lines:
#   diff <(scripts/kv_hashes.sh build-old) <(scripts/kv_hashes.sh build)
# Usage: kv_hashes.sh BUILD_DIR   (KEEP=1 keeps the work folder)
set -euo pipefail
bin=$(cd "${1:?usage: kv_hashes.sh BUILD_DIR}" && pwd)/bin
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
log="$work/log"
run() { "$@" >>"$log" 2>&1 || { cat "$log" >&2; echo "kv_hashes: failed: $*" >&2; exit 1; }; }

cat >"$work/qa.jsonl" <<'JSON'
{"id": "rings", "question": "Which planet is known for its rings?", "answers": ["Saturn"], "contexts": [{"title": "Volcano", "text": "A volcano is a rupture in the crust of a planet where hot lava, volcanic ash and gases escape from a magma chamber below the surface."}, {"title": "Saturn", "text": "Saturn is the sixth planet from the Sun and the second largest in the Solar System, known for its bright rings of ice and rock."}]}
{"id": "bow", "question": "What is the violin played with?", "answers": ["a bow", "bow"], "contexts": [{"title": "Violin", "text": "The violin is a wooden string instrument, the smallest and highest-pitched of its family, usually played with a bow drawn across its strings."}, {"title": "Saturn", "text": "Saturn is the sixth planet from the Sun and the second largest in the Solar System, known for its bright rings of ice and rock."}]}
{"id": "tea", "question": "Where does tea come from?", "answers": ["China"], "contexts": [{"title": "Tea", "text": "Tea is an aromatic beverage prepared by pouring hot water over cured leaves of Camellia sinensis, an evergreen shrub native to China and East Asia."}, {"title": "Coffee", "text": "Coffee is a beverage brewed from roasted coffee beans, the seeds of berries from certain flowering plants in the Coffea genus."}]}
JSON
store="$work/store"
run "$bin/kvrun" eval --dataset "$work/qa.jsonl" --build-store "$store" --methods full,reuse --ratios 0 \
  --max-tokens 2 --out "$work/eval"
compress() { run "$bin/kvprep" compress --store "$store" "$@"; }
compress --from similarity --to a50 --anchors 0.5 --segment 16
compress --from independent --to app25 --anchors 0.25 --segment 16 --anchor-mode append
compress --from similarity --to s6 --share-layers 6 --share-samples 3 --share-sample-tokens 16
compress --from similarity --to q8 --quant int8
compress --from a50 --to a50-s6-q8 --share-layers 6 --share-samples 3 --share-sample-tokens 16 --quant int8
run "$bin/kvprep" verify --store "$store"
"$bin/kvprep" inspect --store "$store" --json | python3 -c '
import json, sys
kv = json.load(sys.stdin)["kv"]
for mode in sorted(kv):
    print(mode, kv[mode]["content_hash"], kv[mode]["rows"])'
