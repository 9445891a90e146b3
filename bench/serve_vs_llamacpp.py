#!/usr/bin/env python3
"""kvrun serve and llama.cpp's OpenAI-compatible server side by side, in one run, on the same GGUF and questions.

Starts `kvrun serve` over a store that holds the data set's passages and loads it with bench/serve_load.py for each
--methods entry (the passages sent as kvfuse.documents), stops it, then starts llama-cpp-python's server
(`python -m llama_cpp.server`, the same GGUF, the same thread count) and loads it with the same questions, the
passages in the prompt as text (a full prefill). One server runs at a time. At every concurrency level each client
sends --requests-per-client streamed requests back to back. Writes a markdown report with the CPU, the versions,
this command, every row and the ratios llama.cpp / kvfuse.

Run it with the reference venv (scripts/setup-reference.sh installs llama-cpp-python[server]):
  $KVFUSE_HOME/venv-ref/bin/python bench/serve_vs_llamacpp.py --store stores/hq-qwen0.5b \\
      --model ~/.cache/kvfuse/models/qwen0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
      --dataset hotpotqa_dev500_ircot.jsonl --questions 32 --clients 1,4,8,16
Build the store from the first questions' passages first, e.g.
  build/bin/kvrun eval --pipeline pipelines/paper-hotpotqa-qwen0.5b.yaml --build-store stores/hq-qwen0.5b \\
      --build-block 0 --limit 32 --methods reuse --ratios 0 --kv similarity --out /tmp/hq-eval
"""
import argparse
import datetime
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import llama_cpp

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import serve_load  # noqa: E402
from cpu_vs_llamacpp import cpu_flags, cpu_model, load_average  # noqa: E402


def dataset_path(name):
    if os.path.exists(name):
        return name
    folder = subprocess.run(["bash", "-c", '. "$0/bench/data_dir.sh"; kvf_data_dir "$0"', str(REPO)], check=True,
                            capture_output=True, text=True).stdout.strip()
    return os.path.join(folder, name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, what, seconds=600):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"serve_vs_llamacpp: {what} exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit(f"serve_vs_llamacpp: {what} not ready after {seconds} s")


def stop(proc, what):
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit(f"serve_vs_llamacpp: {what} did not stop within 120 s of SIGTERM")
    if code not in (0, -signal.SIGTERM):
        print(f"serve_vs_llamacpp: warning: {what} exited with {code}", file=sys.stderr)


def load_args(args, url, kind, method):
    return argparse.Namespace(url=url, kind=kind, method=method, recompute=args.recompute, max_tokens=args.max_tokens,
                              seconds=1e9, requests_per_client=args.requests_per_client, rate=0, malformed=0,
                              server_pid=0, warmup=0, timeout=args.timeout)


def run_levels(args, questions, url, kind, method, label):
    rows = []
    for clients in args.clients:
        row = serve_load.run_level(load_args(args, url, kind, method), questions, clients)
        row["server"] = label
        print(f"serve_vs_llamacpp: {label}, {clients} clients: TTFT p50 {row.get('ttft_p50_ms', 0):.0f} ms, "
              f"p99 {row.get('ttft_p99_ms', 0):.0f} ms, {row.get('answers_per_s', 0):.2f} answers/s, "
              f"{row['errors']} errors", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def bench_kvfuse(args, questions):
    proc = subprocess.Popen([str(args.kvrun), "serve", "--store", args.store, "--model", args.model, "--kv", args.kv,
                             "--port", "0", "--threads", str(args.threads), "--max-batch", str(max(args.clients)),
                             "--max-tokens", str(args.max_tokens), "--reload-seconds", "0", "--quiet"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    found = re.search(r"listening on (http://[\d.]+:\d+)", line)
    if not found:
        proc.kill()
        sys.exit(f"serve_vs_llamacpp: kvrun serve did not start: {line!r}")
    url = found.group(1)
    wait_ready(url + "/health", proc, "kvrun serve")
    rows = []
    try:
        for method in args.methods:
            label = f"kvfuse {method}" + (f" {args.recompute:g}" if method in ("cacheblend", "a3", "fusion") else "")
            rows += run_levels(args, questions, url, "kvfuse", method, label)
    finally:
        stop(proc, "kvrun serve")
    return rows


def bench_llamacpp(args, questions):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", args.model, "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", str(args.n_ctx), "--n_threads", str(args.threads),
                             "--n_threads_batch", str(args.threads), "--verbose", "False"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url + "/v1/models", proc, "llama_cpp.server")
    try:
        return run_levels(args, questions, url, "text", "full", "llama.cpp server (full prefill)")
    finally:
        stop(proc, "llama_cpp.server")


def markdown(args, rows, loads):
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    out = [f"# kvrun serve and llama.cpp's server side by side ({datetime.date.today()})", "",
           f"- CPU: {cpu_model()}, {os.cpu_count()} cores; flags: {cpu_flags()}",
           f"- kvfuse {git}; llama-cpp-python {llama_cpp.__version__} (built from source for this CPU)",
           f"- model: {Path(args.model).name}; store: {args.store} ({args.kv} KV); {args.threads} threads each",
           f"- questions: the first {args.questions} of {args.dataset}, each with its own passages; answers up to "
           f"{args.max_tokens} tokens, greedy; {args.requests_per_client} streamed requests per client, back to back",
           f"- load average before / after: {loads[0]} / {loads[1]}",
           f"- command: `{shlex.join([sys.executable, *sys.argv])}`", "",
           "TTFT: request sent to the first content token. kvfuse reads the passages' stored KV (`kvfuse.documents`); "
           "llama.cpp's server prefills them as prompt text.", "",
           "| server | clients | requests | errors | TTFT p50 ms | TTFT p99 ms | latency p50 ms | tokens/s | answers/s |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        out.append(f"| {r['server']} | {r['clients']} | {r['requests']} | {r['errors']} | "
                   f"{r.get('ttft_p50_ms', 0):.0f} | {r.get('ttft_p99_ms', 0):.0f} | {r.get('latency_p50_ms', 0):.0f} | "
                   f"{r.get('tokens_per_s', 0):.1f} | {r.get('answers_per_s', 0):.2f} |")
    peer = {r["clients"]: r for r in rows if r["server"].startswith("llama.cpp")}
    out += ["", "Ratios at each level (llama.cpp's server / kvfuse: above 1 is kvfuse ahead); p99/p50 is kvfuse's own.", "",
            "| kvfuse | clients | TTFT p50 ratio | answers/s ratio | kvfuse TTFT p99/p50 |", "|---|--:|--:|--:|--:|"]
    for r in rows:
        p = peer.get(r["clients"])
        if r["server"].startswith("llama.cpp") or not p or "ttft_p50_ms" not in r or "ttft_p50_ms" not in p:
            continue
        out.append(f"| {r['server']} | {r['clients']} | {p['ttft_p50_ms'] / r['ttft_p50_ms']:.2f}x | "
                   f"{r['answers_per_s'] / p['answers_per_s']:.2f}x | {r['ttft_p99_ms'] / r['ttft_p50_ms']:.2f} |")
    return "\n".join(out) + "\n"


def main():
    home = Path(os.environ.get("KVFUSE_HOME", Path.home() / ".cache" / "kvfuse"))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True, help="a store holding the data set's passages")
    p.add_argument("--model", default=str(home / "models" / "qwen0.5b" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
                   help="the GGUF both servers load")
    p.add_argument("--dataset", default="hotpotqa_dev500_ircot.jsonl")
    p.add_argument("--questions", type=int, default=32)
    p.add_argument("--clients", default="1,4,8,16", type=lambda s: [int(c) for c in s.split(",")])
    p.add_argument("--requests-per-client", type=int, default=2)
    p.add_argument("--methods", default="fusion,reuse,full", type=lambda s: s.split(","),
                   help="kvfuse methods, each at every level")
    p.add_argument("--recompute", type=float, default=0.15)
    p.add_argument("--kv", default="similarity", help="the stored KV mode kvrun serve reads")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--n-ctx", type=int, default=8192, help="llama.cpp's context")
    p.add_argument("--timeout", type=float, default=1200)
    p.add_argument("--kvrun", default=str(REPO / "build" / "bin" / "kvrun"))
    p.add_argument("--out", default=str(REPO / "docs" / "results" / "serve_vs_llamacpp.md"))
    p.add_argument("--skip-llamacpp", action="store_true", help="kvfuse only (a quick look; no ratios)")
    args = p.parse_args()
    questions = serve_load.load_questions(dataset_path(args.dataset), args.questions)
    loads = [load_average()]
    rows = bench_kvfuse(args, questions)
    if not args.skip_llamacpp:
        rows += bench_llamacpp(args, questions)
    loads.append(load_average())
    report = markdown(args, rows, loads)
    Path(args.out).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
