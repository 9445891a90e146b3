#!/usr/bin/env python3
"""Prefill speed on CPU, side by side: kvfuse (build/bin/kvf_prefill_bench) and llama.cpp (llama-cpp-python).

For every prompt length and thread count, each engine prefills the same number of fixed-seed random token ids into
an empty cache of the same GGUF, in its own subprocess, one measurement after another (never overlapping). llama.cpp
gets one warm-up and --runs timed evaluations (median); kvfuse's binary does the same with its --runs. Prints a table
and writes it as markdown with the machine, versions and this exact command.

Run it with the reference venv (scripts/setup-reference.sh), e.g. `make bench`.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import llama_cpp
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "reference"))
from llama_cpp_options import extra_bufts  # noqa: E402
KVFUSE_HOME = Path(os.environ.get("KVFUSE_HOME", Path.home() / ".cache" / "kvfuse"))
DEFAULT_MODEL = KVFUSE_HOME / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_BIN = REPO / "build" / "bin" / "kvf_prefill_bench"
DEFAULT_OUT = REPO / "docs" / "results" / "prefill_cpu.md"


def int_list(text):
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                   help="GGUF both engines load, e.g. the F32 copy (default: %(default)s)")
    p.add_argument("--tokens", type=int_list, default=[128, 512, 2048],
                   help="comma-separated prompt lengths (default: 128,512,2048)")
    p.add_argument("--threads", type=int_list, default=[1, 2], help="comma-separated thread counts (default: 1,2)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per measurement, after one warm-up (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random token ids (default: 0)")
    p.add_argument("--kvfuse-bin", type=Path, default=DEFAULT_BIN, help="kvfuse's benchmark (default: %(default)s)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report to write (default: %(default)s)")
    p.add_argument("--llama-extra-bufts", action="store_true",
                   help="let llama.cpp repack weights into its extra CPU buffer types (AMX on CPUs that have it). "
                        "Off by default: in llama-cpp-python 0.3.16 the AMX kernels give wrong logits for batches "
                        "of 32+ tokens (ggml-org/llama.cpp#16315), so that speed is not a correct prefill's")
    p.add_argument("--llama-worker", action="store_true", help=argparse.SUPPRESS)  # one llama.cpp measurement
    args = p.parse_args()
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


# --- llama.cpp, measured inside a worker subprocess ----------------------------------------------------------

def llama_measure(model, n_tokens, threads, runs, seed, use_extra_bufts):
    with extra_bufts(use_extra_bufts):
        llm = llama_cpp.Llama(model_path=str(model), n_ctx=n_tokens + 8, n_batch=n_tokens, n_threads=threads,
                              n_threads_batch=threads, logits_all=False, verbose=False)
    tokens = np.random.default_rng(seed).integers(0, llm.n_vocab(), n_tokens).tolist()
    times = []
    for _ in range(runs + 1):  # the first is the warm-up
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        times.append(time.perf_counter() - start)
    return {"tokens": n_tokens, "threads": threads, "median_s": statistics.median(times[1:]), "runs_s": times[1:]}


# --- the driver ------------------------------------------------------------------------------------------------

def run_json(cmd):
    """Run one measurement; its stdout ends with one JSON object."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {shlex.join(map(str, cmd))} exited with {proc.returncode}:\n{proc.stderr.strip()}")
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        sys.exit(f"error: {shlex.join(map(str, cmd))} printed no JSON object on its last line:\n{proc.stdout}")


def llama_cmd(args, n_tokens, threads):
    cmd = [sys.executable, __file__, "--llama-worker", "--model", args.model, "--tokens", n_tokens,
           "--threads", threads, "--runs", args.runs, "--seed", args.seed]
    return [str(c) for c in cmd] + (["--llama-extra-bufts"] if args.llama_extra_bufts else [])


def kvfuse_cmd(args, n_tokens, threads):
    return [str(c) for c in (args.kvfuse_bin, "--model", args.model, "--tokens", n_tokens, "--threads", threads,
                             "--runs", args.runs, "--json")]


def measure_all(args):
    rows = []
    print(f"{'tokens':>6} {'threads':>7} {'llama.cpp tok/s':>16} {'kvfuse tok/s':>13} {'kvfuse/llama.cpp':>17}")
    for n_tokens in args.tokens:
        for threads in args.threads:
            llama = run_json(llama_cmd(args, n_tokens, threads))
            kvfuse = run_json(kvfuse_cmd(args, n_tokens, threads))
            row = (n_tokens, threads, n_tokens / llama["median_s"], n_tokens / kvfuse["median_s"])
            rows.append(row)
            print(f"{row[0]:>6} {row[1]:>7} {row[2]:>16.1f} {row[3]:>13.1f} {row[3] / row[2]:>17.2f}", flush=True)
    return rows


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def load_average():
    with open("/proc/loadavg", encoding="utf-8") as f:
        return " ".join(f.read().split()[:3])


def markdown(args, rows, loads):
    command = shlex.join([sys.executable, *sys.argv])
    extra = "on (AMX / repacked weights where the CPU has them)" if args.llama_extra_bufts else \
        "off (in 0.3.16 its AMX kernels give wrong logits for batches of 32+ tokens, ggml-org/llama.cpp#16315)"
    lines = [
        "# Prefill speed on CPU: kvfuse vs llama.cpp",
        "",
        f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}",
        f"- Model: `{args.model.name}`",
        f"- llama.cpp: llama-cpp-python {llama_cpp.__version__} (built with GGML_NATIVE=ON), n_batch = prompt "
        f"length, n_ubatch 512 (default), F16 KV cache (default), extra buffer types {extra}",
        f"- kvfuse: `{args.kvfuse_bin.name}`",
        f"- Workload: prefill of {', '.join(map(str, args.tokens))} random token ids (seed {args.seed}) into an "
        f"empty cache; median of {args.runs} timed runs after one warm-up; each measurement in its own process, "
        "one at a time",
        f"- Load average (1, 5, 15 min) before / after: {loads[0]} / {loads[1]} (other work on the cores skews "
        "the numbers)",
        f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `{command}`",
        "",
        "| tokens | threads | llama.cpp tok/s | kvfuse tok/s | kvfuse / llama.cpp |",
        "|-------:|--------:|----------------:|-------------:|-------------------:|",
    ]
    lines += [f"| {n} | {t} | {lt:.1f} | {kt:.1f} | {kt / lt:.2f} |" for n, t, lt, kt in rows]
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    if args.llama_worker:
        if len(args.tokens) != 1 or len(args.threads) != 1:
            sys.exit("error: a worker measures one --tokens and one --threads value")
        result = llama_measure(args.model, args.tokens[0], args.threads[0], args.runs, args.seed,
                               args.llama_extra_bufts)
        print(json.dumps(result))
        return
    if not args.model.is_file():
        sys.exit(f"error: model {args.model} not found (scripts/setup.sh fetches it)")
    if not os.access(args.kvfuse_bin, os.X_OK):
        sys.exit(f"error: kvfuse benchmark {args.kvfuse_bin} not found; build it first (make)")
    load_before = load_average()
    rows = measure_all(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(args, rows, (load_before, load_average())), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
