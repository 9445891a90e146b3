#!/usr/bin/env bash
# A soak of kvrun serve: C clients (16) send streamed questions back to back for S seconds (600), a share of the
# requests (5%) malformed on purpose, while the server's resident memory is sampled. Passes when the server is
# still up at the end, no valid request failed, every malformed one got a 4xx with an error message, memory grew
# less than 5% after the warm-up (at least 60 s, and until the chunk KV cache has stopped growing for 60 s: its
# budget, --cache-mb, is memory the server was told to use), and SIGTERM then stops it with exit 0. Writes a
# markdown report.
#   bench/serve_soak.sh --store S [--dataset D] [--seconds 600] [--clients 16] [--malformed 0.05]
#                       [--method fusion] [--kv similarity] [--out docs/results/serve_soak.md]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
command="$0 $*"
. "$here/bench/data_dir.sh"
store= dataset=hotpotqa_dev500_ircot.jsonl seconds=600 clients=16 malformed=0.05 method=fusion kv=similarity
out="$here/docs/results/serve_soak.md" questions=32 warmup=60
while [ $# -gt 0 ]; do
  case "$1" in
    --store) store=$2 ;; --dataset) dataset=$2 ;; --seconds) seconds=$2 ;; --clients) clients=$2 ;;
    --malformed) malformed=$2 ;; --method) method=$2 ;; --kv) kv=$2 ;; --out) out=$2 ;;
    --questions) questions=$2 ;; --warmup) warmup=$2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "serve_soak: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
[ -n "$store" ] || { echo "serve_soak: --store DIR is required" >&2; exit 2; }
[ -f "$dataset" ] || dataset="$(kvf_data_dir "$here")/$dataset"
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

"$here/build/bin/kvrun" serve --store "$store" --kv "$kv" --port 0 --max-batch "$clients" --max-tokens 16 \
  --reload-seconds 0 --quiet > "$work/stdout" &
pid=$!
for _ in $(seq 600); do grep -q "listening on" "$work/stdout" 2>/dev/null && break; sleep 0.5; done
url=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/stdout" | head -1)
[ -n "$url" ] || { echo "serve_soak: kvrun serve did not start" >&2; exit 1; }
for _ in $(seq 600); do curl -sf "$url/health" > /dev/null && break; sleep 0.5; done

python3 "$here/bench/serve_load.py" --url "$url" --kind kvfuse --dataset "$dataset" --questions "$questions" \
  --clients "$clients" --seconds "$seconds" --malformed "$malformed" --method "$method" --server-pid "$pid" \
  --warmup "$warmup" --out "$work/soak.json" | tee "$work/table.md"
alive=yes; kill -0 "$pid" 2>/dev/null || alive=no
kill -TERM "$pid"; code=0; wait "$pid" || code=$?

python3 - "$work/soak.json" "$alive" "$code" "$out" "$work/table.md" "$(cd "$here" && git rev-parse --short HEAD)" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" "$(nproc)" "$command" <<'PY'
import json, sys
soak, alive, code, out, table, git, cpu, cores, command = sys.argv[1:]
row = json.load(open(soak))["rows"][0]
settled = row["warmup_end_s"] is not None
growth = 100 * (row["rss_end_mib"] / row["rss_after_warmup_mib"] - 1) if settled else float("nan")
memory = (f"resident memory {row['rss_after_warmup_mib']:.0f} MiB at the end of the warm-up "
          f"({row['warmup_end_s']:.0f} s), {row['rss_end_mib']:.0f} MiB at the end ({growth:+.1f}%; peak "
          f"{row['rss_peak_mib']:.0f} MiB)" if settled else
          f"resident memory: the chunk cache never stopped growing, so no warm-up ended ({row['rss_end_mib']:.0f} "
          f"MiB at the end)")
checks = [
    ("the server was up at the end", alive == "yes"),
    ("SIGTERM stopped it with exit 0", code == "0"),
    (f"valid requests that failed: {row['errors']}", row["errors"] == 0),
    (f"malformed requests refused with a 4xx and a message: {row['malformed_refused']} of {row['malformed']}",
     row["malformed"] > 0 and row["malformed_refused"] == row["malformed"]),
    (memory, settled and growth < 5),
]
lines = [f"# kvrun serve soak", "", f"- CPU: {cpu}, {cores} cores; kvfuse {git}", f"- command: `{command}`",
         f"- {row['clients']} clients for {row['seconds']:.0f} s, {row['requests'] + row['malformed']} requests, "
         f"{row['malformed']} of them malformed on purpose", "", open(table).read().strip(), "",
         "| check | result |", "|---|---|"]
lines += [f"| {what} | {'pass' if ok else 'FAIL'} |" for what, ok in checks]
samples = ", ".join(f"{t:.0f} s: {m:.0f} ({c / 2**20:.0f})" for t, m, c in row["rss_samples"][::12])
lines += ["", f"Resident memory (MiB) and the chunk cache's part of it (MiB), every minute: {samples}", ""]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
