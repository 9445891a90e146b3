#!/usr/bin/env bash
# Bytes per token in memory and on disk of the quantizers worth their bytes, with and without entropy coding
# (kvprep compress --entropy, --recipe), each compressed from one stored mode of a store: the table of
# docs/compress.md, "Entropy coding and recipes". Only sizes: the answers' fidelity is kvrun eval --reference-kv's.
# Usage: bench/entropy_sizes.sh STORE [FROM]   (FROM: the mode compressed, default similarity)
#   env BUILD_DIR, SIXTEEN (0: leave out --recipe 16x); the modes are written into STORE as ez-* (a rerun reuses them)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
store=${1:?usage: bench/entropy_sizes.sh STORE [FROM]}
from=${2:-similarity}
kvprep=$build/bin/kvprep
modes=(
  "ez-f16-zstd --entropy zstd:19"
  "ez-int4g32 --quant int4 --quant-group 32"
  "ez-int4g32-zstd --quant int4 --quant-group 32 --entropy zstd:19"
  "ez-rot4g64 --quant int4 --quant-group 64 --rotate --v-levels nf"
  "ez-rot4g64-zstd --quant int4 --quant-group 64 --rotate --v-levels nf --entropy zstd:19"
  "ez-rot3g64-zstd --quant int3 --quant-group 64 --rotate --v-levels nf --entropy zstd:19"
  "ez-int2g64-zstd --quant int2 --quant-group 64 --entropy zstd:19"
  "ez-rot2g64 --quant int2 --quant-group 64 --rotate --v-levels nf"
  "ez-rot2g64-deflate --quant int2 --quant-group 64 --rotate --v-levels nf --entropy deflate:9"
  "ez-rot2g64-zstd3 --quant int2 --quant-group 64 --rotate --v-levels nf --entropy zstd:3"
  "ez-8x --recipe 8x"
)
# 16x selects anchors, which re-runs the model over every chunk (minutes per hundred chunks on 2 cores).
[ "${SIXTEEN:-1}" = 0 ] || modes+=("ez-16x --recipe 16x")
for m in "${modes[@]}"; do
  read -r -a args <<<"$m"
  "$kvprep" compress --store "$store" --from "$from" --to "${args[0]}" "${args[@]:1}" --quiet >/dev/null
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; store: $store, from $from"
"$kvprep" inspect --store "$store" --json | python3 -c '
import json, sys
s, source = json.load(sys.stdin), sys.argv[1]
base = s["kv"][source]
f16 = base["kv_bytes_per_token"]
print("%d chunks, %d tokens; x smaller: against %s (f16) in memory" % (base["chunks"], base["tokens"], source))
print()
print("| KV mode | recipe | coding | in memory B/token | x smaller | on disk B/token | x smaller |")
print("|---|---|---|---:|---:|---:|---:|")
for mode, kv in s["kv"].items():
    if mode != source and not mode.startswith("ez-"):
        continue
    r = s["settings"].get("compress-" + mode, {})
    recipe = " ".join("%s=%s" % (k, r[k]) for k in ("anchors", "quant", "quant_group", "rotate", "v_levels") if r.get(k))
    mem, disk = kv["kv_bytes_per_token"], kv["disk_kv_bytes_per_token"]
    print("| %s | %s | %s | %s | %.2f | %s | %.2f |" % (mode, recipe or "-", kv["entropy"], format(round(mem), ","),
                                                  f16 / mem, format(round(disk), ","), f16 / disk))
' "$from"
