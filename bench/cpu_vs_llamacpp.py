#!/usr/bin/env python3
"""CPU speed side by side: kvfuse (build/bin/kvf_prefill_bench) in both compute modes and llama.cpp
(llama-cpp-python, built from source for this CPU) with and without its repacked weight layouts.

For every model, prompt length and thread count, each configuration prefills the same fixed-seed random token ids
into an empty cache of the same GGUF; then (with --decode D) B sequences, for each B of --decode-batch, are each
prefilled with their own prompt of the first length and decoded greedily together, D steps of one token per
sequence (one forward call per step for all of them); every measurement runs in its own subprocess, one after
another (never overlapping): one warm-up and --runs timed runs, median reported. Prints a table and writes it as
markdown with the CPU model and its flags, versions, load averages and this exact command. For the prefills also
the achieved TFLOP/s of every configuration (the model FLOPs kvf_prefill_bench counts, model/model_flops.h, over
the median time) and kvfuse's share of the CPU's measured peak for the matmul kernel it runs (bench/matrix_peak.h,
measured inside kvf_prefill_bench). For the decode rows also the bytes of weights each step reads and the GB/s that
makes for every configuration, against the memory's read bandwidth measured on as many threads
(`kvf_prefill_bench --stream-mb`): decoding is bound by reading the weights.

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

import gguf
import llama_cpp
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "reference"))
from llama_cpp_options import extra_bufts  # noqa: E402
KVFUSE_HOME = Path(os.environ.get("KVFUSE_HOME", Path.home() / ".cache" / "kvfuse"))
DEFAULT_MODEL = KVFUSE_HOME / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_BIN = REPO / "build" / "bin" / "kvf_prefill_bench"
DEFAULT_OUT = REPO / "docs" / "results" / "cpu_vs_llamacpp.md"
# Configurations: (label, engine, setting)
CONFIGS = [
    ("llama.cpp", "llama", False),
    ("llama.cpp repacked", "llama", True),
    ("kvfuse f32", "kvfuse", "f32"),
    ("kvfuse fast", "kvfuse", "fast"),
]


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
    p.add_argument("--model", type=Path, action="append",
                   help=f"GGUF both engines load; repeatable (default: {DEFAULT_MODEL})")
    p.add_argument("--tokens", type=int_list, default=[128, 512, 2048],
                   help="comma-separated prompt lengths (default: 128,512,2048)")
    p.add_argument("--threads", type=int_list, default=[2], help="comma-separated thread counts (default: 2)")
    p.add_argument("--decode", type=int, default=64,
                   help="decode steps timed after a prompt of the first length; 0: none (default: 64)")
    p.add_argument("--decode-batch", type=int_list, default=[1, 4, 16],
                   help="comma-separated numbers of sequences decoded together (default: 1,4,16)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per measurement, after one warm-up (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random token ids (default: 0)")
    p.add_argument("--kvfuse-bin", type=Path, default=DEFAULT_BIN, help="kvfuse's benchmark (default: %(default)s)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report to write (default: %(default)s)")
    p.add_argument("--llama-worker", action="store_true", help=argparse.SUPPRESS)  # one llama.cpp measurement
    p.add_argument("--llama-extra-bufts", action="store_true", help=argparse.SUPPRESS)  # for the worker
    args = p.parse_args()
    args.model = args.model or [DEFAULT_MODEL]
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.decode < 0:
        p.error("--decode must be 0 or more")
    return args


# --- llama.cpp, measured inside a worker subprocess ----------------------------------------------------------

def llama_measure(model, n_tokens, threads, runs, seed, use_extra_bufts, decode, decode_batch):
    with extra_bufts(use_extra_bufts):
        llm = llama_cpp.Llama(model_path=str(model), n_ctx=n_tokens + 8, n_batch=n_tokens,
                              n_threads=threads, n_threads_batch=threads, logits_all=False, verbose=False)
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, llm.n_vocab(), n_tokens).tolist()
    prefill = []
    for _ in range(runs + 1):  # the first is the warm-up
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        prefill.append(time.perf_counter() - start)
    out = {"tokens": n_tokens, "threads": threads, "median_s": statistics.median(prefill[1:])}
    if decode:
        prompts = [tokens] + [rng.integers(0, llm.n_vocab(), n_tokens).tolist() for _ in range(decode_batch - 1)]
        rates = llama_batched_decode(llm, prompts, decode, runs)
        out["decode_tokens_per_s"] = statistics.median(rates[1:])
    return out


def llama_batched_decode(llm, prompts, steps, runs):
    """Tokens/s of each of runs + 1 rounds (the first a warm-up): every prompt prefilled as its own sequence
    (untimed), then `steps` greedy steps of all sequences together, one llama_decode of one token per sequence each,
    the logits of every sequence read for its argmax. A context of its own, made with the Llama object's settings
    and one KV stream per sequence, so that each sequence attends only to itself as in kvfuse."""
    n, count, vocab = len(prompts[0]), len(prompts), llm.n_vocab()
    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_seq_max = count
    params.n_ctx = count * (n + steps + 8)  # llama.cpp gives each sequence n_ctx / n_seq_max cells
    params.n_batch = params.n_ubatch = max(n, count)
    ctx = llama_cpp.llama_init_from_model(llm.model, params)
    if not ctx:
        raise RuntimeError(f"llama.cpp made no context for {count} sequences")
    batch = llama_cpp.llama_batch_init(max(n, count), 0, 1)

    def submit(entries):  # (token, position, sequence, wants logits) per row
        batch.n_tokens = len(entries)
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, 1, logits
            batch.seq_id[i][0] = seq
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    def greedy(row):
        return int(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, row), shape=(vocab,)).argmax())

    rates = []
    try:
        for _ in range(runs + 1):
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
            following = []
            for seq, prompt in enumerate(prompts):
                submit([(t, i, seq, i == n - 1) for i, t in enumerate(prompt)])
                following.append(greedy(-1))
            start = time.perf_counter()
            for step in range(steps):
                submit([(following[seq], n + step, seq, True) for seq in range(count)])
                following = [greedy(seq) for seq in range(count)]
            rates.append(steps * count / (time.perf_counter() - start))
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
    return rates


# --- decoding against the memory's bandwidth ----------------------------------------------------------------------

STREAM_MB = 1024  # far larger than any cache


def weight_bytes_per_step(model):
    """Bytes of weights one decode step reads, as the GGUF stores them: every tensor but the token embedding (a
    step reads only its own rows of it), which counts in full when it is also the LM head (no output.weight)."""
    tensors = {t.name: int(t.n_bytes) for t in gguf.GGUFReader(str(model)).tensors}
    embedding = tensors.pop("token_embd.weight", 0)
    return sum(tensors.values()) + (0 if "output.weight" in tensors else embedding)


def decode_gbs(decode, tokens_per_s):
    """GB/s of weights a decode row's configuration read: bytes per step times steps per second."""
    return decode["weight_bytes"] * tokens_per_s / decode["batch"] / 1e9


def stream_gbs(args, threads):
    return run_json([str(args.kvfuse_bin), "--stream-mb", str(STREAM_MB), "--threads", str(threads),
                     "--json"])["read_gbs"]


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


def measure_cmd(args, engine, setting, model, n_tokens, threads, decode, decode_batch):
    if engine == "llama":
        cmd = [sys.executable, __file__, "--llama-worker", "--model", model, "--tokens", n_tokens,
               "--threads", threads, "--runs", args.runs, "--seed", args.seed, "--decode", decode,
               "--decode-batch", decode_batch]
        return [str(c) for c in cmd] + (["--llama-extra-bufts"] if setting else [])
    # The decode rows read no prefill figures: no peak measured for them.
    return [str(c) for c in (args.kvfuse_bin, "--model", model, "--tokens", n_tokens, "--threads", threads,
                             "--runs", args.runs, "--compute", setting, "--decode", decode, "--decode-batch",
                             decode_batch, "--json")] + (["--no-peak"] if decode else [])


def measure_all(args):
    """rows: (model, tokens, threads, {label: tokens/s}, figures) with tokens a description for the decode rows and
    figures, for the prefill rows, {"model_flops": FLOPs, "tflops": {label: TFLOP/s}, "peak": {label: kvfuse's JSON}},
    for the decode rows {"batch": B, "weight_bytes": bytes per step, "stream_gbs": the memory's read GB/s}."""
    rows = []
    labels = [c[0] for c in CONFIGS]
    print(f"{'model':<40} {'tokens':>14} {'thr':>3} " + " ".join(f"{l:>19}" for l in labels), flush=True)

    def add(model, what, threads, speeds, figures):
        rows.append((model.name, what, threads, speeds, figures))
        line = f"{model.name:<40} {what:>14} {threads:>3} " + " ".join(f"{speeds[l]:>19.1f}" for l in labels)
        if figures and "weight_bytes" in figures:
            gbs = decode_gbs(figures, speeds["kvfuse fast"])
            line += f"   fast {gbs:.1f} GB/s of weights, read bandwidth {figures['stream_gbs']:.1f}"
        elif figures:
            fast = figures["peak"].get("kvfuse fast", {})
            line += f"   fast {figures['tflops']['kvfuse fast']:.4f} TFLOP/s"
            if "peak_share" in fast:
                line += f" = {fast['peak_share']:.1%} of {fast['peak_kernel']} peak"
        print(line, flush=True)

    streams = {threads: stream_gbs(args, threads) for threads in args.threads} if args.decode else {}
    for model in args.model:
        weight_bytes = weight_bytes_per_step(model)
        for threads in args.threads:
            for n_tokens in args.tokens:
                results = {label: run_json(measure_cmd(args, engine, setting, model, n_tokens, threads, 0, 1))
                           for label, engine, setting in CONFIGS}
                # kvfuse counts the model FLOPs of the prefill; every engine computes the same prefill.
                model_flops = results["kvfuse fast"].get("model_flops")
                flops = None
                if model_flops:
                    flops = {"model_flops": model_flops,
                             "tflops": {l: model_flops / r["median_s"] / 1e12 for l, r in results.items()},
                             "peak": {l: r for l, r in results.items() if "peak_share" in r}}
                add(model, n_tokens, threads, {l: n_tokens / r["median_s"] for l, r in results.items()}, flops)
            for batch in args.decode_batch if args.decode else []:
                add(model, f"decode {batch} x {args.decode} after {args.tokens[0]}", threads,
                    {label: run_json(measure_cmd(args, engine, setting, model, args.tokens[0], threads,
                                                 args.decode, batch))["decode_tokens_per_s"]
                     for label, engine, setting in CONFIGS},
                    {"batch": batch, "weight_bytes": weight_bytes, "stream_gbs": streams[threads]})
    return rows


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def cpu_flags():
    """The flags that decide which kernels either engine can use."""
    wanted = ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
              "amx_tile", "amx_bf16", "amx_int8", "avx_vnni"]
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return " ".join(w for w in wanted if w in have)
    return "unknown"


def llama_build():
    """How the llama.cpp libraries in use were built: the package's own (GGML_NATIVE=ON, scripts/setup-reference.sh),
    or those LLAMA_CPP_LIB_PATH names (setup-reference.sh --avx2-lib)."""
    lib = os.environ.get("LLAMA_CPP_LIB_PATH")
    if not lib:
        return "built with GGML_NATIVE=ON"
    return f"with the libraries in `{lib}` (LLAMA_CPP_LIB_PATH; `scripts/setup-reference.sh --avx2-lib` builds AVX2 ones)"


def load_average():
    with open("/proc/loadavg", encoding="utf-8") as f:
        return " ".join(f.read().split()[:3])


def table_head(intro, columns, labels):
    """A table's lines up to its rows: its introduction, then a header of `columns` (the first two left-aligned
    text, the rest numbers) and one number column per configuration."""
    return ["", intro, "", "| " + " | ".join(columns + labels) + " |",
            "|---|---|" + "--:|" * (len(columns) - 2 + len(labels))]


def markdown(args, rows, loads):
    command = shlex.join([sys.executable, *sys.argv])
    labels = [c[0] for c in CONFIGS]
    lines = [
        "# CPU speed: kvfuse vs llama.cpp, side by side",
        "",
        f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}",
        f"- CPU flags that matter here: {cpu_flags()}",
        f"- Models: {', '.join(f'`{m.name}`' for m in args.model)}",
        f"- llama.cpp: llama-cpp-python {llama_cpp.__version__} {llama_build()}; n_batch = prompt length, "
        "F16 KV cache; `llama.cpp` without its extra buffer types, `llama.cpp repacked` with them (weights "
        "repacked for its AMX / AVX-512 kernels where the CPU and the weight type have one)",
        "- kvfuse: `kvf_prefill_bench`, `--compute f32` (weights dequantized to f32, OpenBLAS) and `--compute fast` "
        "(weights kept as stored, the run-time chosen kernel"
        + (f"; `KVF_GEMM_KERNEL={os.environ['KVF_GEMM_KERNEL']}` names it" if os.environ.get("KVF_GEMM_KERNEL") else "")
        + ")",
        f"- Workload: prefill of {', '.join(map(str, args.tokens))} random token ids (seed {args.seed}) into an "
        "empty cache; "
        + (f"decode `B x {args.decode}`: B sequences, each prefilled (untimed) with its own "
           f"{args.tokens[0]}-token prompt, then {args.decode} greedy steps of one token per sequence, all B in one "
           "forward call per step (llama.cpp: one `llama_decode` per step, one KV stream per sequence); "
           if args.decode else "no decoding (`--decode 0`); ")
        + f"median of {args.runs} timed runs after one warm-up; each measurement in its own process, one at a time",
        f"- Load average (1, 5, 15 min) before / after: {loads[0]} / {loads[1]} (other work on the cores skews "
        "the numbers)",
        f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `{command}`",
        "",
        "Tokens per second (prefill: prompt tokens / time; decode: tokens generated by all B sequences / time); the "
        "last two columns "
        "divide kvfuse fast by each llama.cpp configuration.",
        "",
        "| model | tokens | threads | " + " | ".join(labels) + " | fast / llama.cpp | fast / repacked |",
        "|---|---|--:|" + "--:|" * len(labels) + "--:|--:|",
    ]
    for model, n, t, speeds, _ in rows:
        cells = " | ".join(f"{speeds[l]:.1f}" for l in labels)
        fast = speeds["kvfuse fast"]
        lines.append(f"| {model} | {n} | {t} | {cells} | {fast / speeds['llama.cpp']:.2f} | "
                     f"{fast / speeds['llama.cpp repacked']:.2f} |")
    prefills = [r for r in rows if r[4] and "model_flops" in r[4]]
    if prefills:
        lines += table_head(
            "Prefill: achieved TFLOP/s, the model FLOPs of the prefill (`model/model_flops.h`: the seven projections "
            "of every layer, the LM head of the last row, causal QK^T and PV) over the median time; for kvfuse, in "
            "brackets, the share of the CPU's measured peak (`kvf_matrix_peak`'s loop, run inside "
            "`kvf_prefill_bench` on as many threads after its timed runs) for the matmul kernel the mode runs.",
            ["model", "tokens", "threads", "model GFLOP"], labels)
        for model, n, t, _, flops in prefills:
            cells = []
            for label in labels:
                cell = f"{flops['tflops'][label]:.4f}"
                peak = flops["peak"].get(label)
                if peak:
                    cell += (f" ({peak['peak_share']:.1%} of {peak['peak_kernel']} "
                             f"{peak['peak_gflops']:.0f} GFLOP/s)")
                cells.append(cell)
            lines.append(f"| {model} | {n} | {t} | {flops['model_flops'] / 1e9:.1f} | " + " | ".join(cells) + " |")
    decodes = [r for r in rows if r[4] and "weight_bytes" in r[4]]
    if decodes:
        lines += table_head(
            "Decode: the weights one step reads (the GGUF's tensors, as stored, but the token embedding unless it is "
            "also the LM head) times steps per second (tokens/s over B), in GB/s, and in brackets its share of the "
            f"memory's read bandwidth (`kvf_prefill_bench --stream-mb {STREAM_MB}`, median of 5 passes, on as many "
            "threads). Each engine reads its own layout (repacked, interleaved or widened); the GGUF's bytes are "
            "what both must read at least.",
            ["model", "decode", "threads", "weights MB / step", "read GB/s"], labels)
        for model, n, t, speeds, d in decodes:
            cells = []
            for label in labels:
                gbs = decode_gbs(d, speeds[label])
                cells.append(f"{gbs:.1f} ({gbs / d['stream_gbs']:.0%})")
            lines.append(f"| {model} | {n} | {t} | {d['weight_bytes'] / 1e6:.0f} | {d['stream_gbs']:.1f} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    if args.llama_worker:
        if len(args.tokens) != 1 or len(args.threads) != 1 or len(args.model) != 1:
            sys.exit("error: a worker measures one --model, --tokens and --threads value")
        if len(args.decode_batch) != 1:
            sys.exit("error: a worker measures one --decode-batch value")
        result = llama_measure(args.model[0], args.tokens[0], args.threads[0], args.runs, args.seed,
                               args.llama_extra_bufts, args.decode, args.decode_batch[0])
        print(json.dumps(result))
        return
    for model in args.model:
        if not model.is_file():
            sys.exit(f"error: model {model} not found (scripts/setup.sh fetches the presets)")
    if not os.access(args.kvfuse_bin, os.X_OK):
        sys.exit(f"error: kvfuse benchmark {args.kvfuse_bin} not found; build it first (make)")
    load_before = load_average()
    rows = measure_all(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(args, rows, (load_before, load_average())), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
