#!/usr/bin/env python3
"""Storage against quality for compressed KV modes (bench/compress_tradeoff.sh): one row per KV mode with its
stored bytes per chunk token (from `kvprep inspect --json`) and fusion's quality over it (from a kvrun eval
sweep of fusion at one ratio): normalized gold log-likelihood recovery and normalized F1 with their 95%
intervals, and the change against the uncompressed mode with a paired bootstrap interval over questions.
Writes report.md, tradeoff.gp and tradeoff.png (if gnuplot is there) into the sweep folder.

  scripts/compress_report.py docs/results/compress-hotpotqa docs/results/compress-hotpotqa/inspect.json
"""
import argparse
import csv
import json
import os
import sys

from bootstrap_interval import percentile_interval, resamples
from report_files import write_report

RESAMPLES = 1000


def load_runs(path):
    """question id -> {(method, kv, ratio): run}"""
    out = {}
    with open(path) as f:
        for line in f:
            q = json.loads(line)
            out[q["id"]] = {(r["method"], r["kv"], round(r["ratio"], 6)): r for r in q["runs"]}
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def normalized(ids, runs, key, metric, reference):
    """(mean metric of key - reuse) / (full - reuse) over ids, reuse = Full Reuse of independent KV."""
    gap = mean([runs[i][reference["full"]][metric] - runs[i][reference["reuse"]][metric] for i in ids])
    if gap == 0:
        return float("nan")
    return mean([runs[i][key][metric] - runs[i][reference["reuse"]][metric] for i in ids]) / gap


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep", help="kvrun eval output folder (results.jsonl, sweep.json)")
    p.add_argument("inspect", help="`kvprep inspect --json` of the store")
    p.add_argument("--method", default="fusion")
    p.add_argument("--ratio", type=float, default=0.15)
    p.add_argument("--baseline", default="similarity", help="the uncompressed KV mode compared against")
    a = p.parse_args()
    results = os.path.join(a.sweep, "results.jsonl")
    if not os.path.exists(results):
        sys.exit(f"error: {results}: no such file (run kvrun eval first)")
    runs = load_runs(results)
    with open(a.inspect) as f:
        store = json.load(f)
    with open(os.path.join(a.sweep, "sweep.json")) as f:
        sweep = json.load(f)
    machine = "see report.md"
    report = os.path.join(a.sweep, "report.md")
    if os.path.exists(report):
        for line in open(report):
            if line.startswith("- Machine: "):
                machine = line[len("- Machine: "):].split(";")[0].strip()
    ratio = round(a.ratio, 6)
    reference = {"full": ("full", "-", 1.0), "reuse": ("reuse", "independent", 0.0)}
    ids = sorted(runs)
    modes = [kv for kv in sweep["kv"] if kv != "independent"]
    for kv in modes:
        if kv not in store["kv"]:
            sys.exit(f"error: {a.inspect}: no KV mode '{kv}' (was the store compressed?)")
    base_bytes = store["kv"][a.baseline]["kv_bytes_per_token"]
    samples = resamples(ids, RESAMPLES, 12345)

    rows = []
    for kv in modes:
        key = (a.method, kv, ratio)
        base = (a.method, a.baseline, ratio)
        row = {"kv": kv, "store": store["kv"][kv], "recipe": store["settings"].get("compress-" + kv, {})}
        for metric, name in (("gold_ll", "ll"), ("f1", "f1")):
            row[name] = normalized(ids, runs, key, metric, reference)
            row[name + "_ci"] = percentile_interval([normalized(s, runs, key, metric, reference) for s in samples])
            delta = lambda s: normalized(s, runs, key, metric, reference) - normalized(s, runs, base, metric, reference)
            row[name + "_delta"] = delta(ids)
            row[name + "_delta_ci"] = percentile_interval([delta(s) for s in samples])
        row["kl"] = mean([runs[i][key]["kl_first"] for i in ids])
        row["top1"] = mean([runs[i][key]["top1"] for i in ids])
        row["ttft"] = sorted(runs[i][key]["ms"]["ttft"] for i in ids)[len(ids) // 2]
        row["bytes"] = row["store"]["kv_bytes_per_token"]
        row["smaller"] = base_bytes / row["bytes"]
        rows.append(row)
    rows.sort(key=lambda r: -r["bytes"])

    def fmt(x, ci):
        return f"{x:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"

    def recipe(r):
        c = r["recipe"]
        parts = []
        if c.get("anchors"):
            score = f", {c['anchor_score']} attention" if c.get("anchor_score") else ""
            parts.append(f"anchors {c['anchor_mode']} {c['anchors']:g} (segment {c['segment']}{score})")
        shared = sum(1 for l, s in enumerate(c.get("layer_sources", [])) if l != s)
        if shared:
            parts.append(f"{shared} layers shared")
        if c.get("quant"):
            low_bit = c["quant"] in ("int4", "int3", "int2")
            kept = f", first {c['keep_first']} rows f16" if low_bit and c.get("keep_first") else ""
            parts.append(f"{c['quant']} (groups of {c['quant_group']}{kept})" if low_bit else c["quant"])
        return ", ".join(parts) or "none (f16)"

    gap_ll = mean([runs[i][reference["full"]]["gold_ll"] - runs[i][reference["reuse"]]["gold_ll"] for i in ids])
    gap_f1 = mean([runs[i][reference["full"]]["f1"] - runs[i][reference["reuse"]]["f1"] for i in ids])
    out = []
    out.append(f"# KV compression: storage against quality ({os.path.basename(sweep['dataset'])}, {len(ids)} questions)\n")
    out.append(f"{a.method} at {a.ratio:g} over each KV mode (made from the `{a.baseline}` KV by `kvprep compress`), "
               f"model `{sweep.get('model', '?')}`; machine: {machine}. Normalized values: 0 = "
               "Full Reuse of independent KV, 1 = full attention (FusionRAG eq. 11); gold LL = mean log-likelihood "
               f"of the gold answer under teacher forcing (full-minus-reuse gap {gap_ll:.3f} nats/token; F1 gap "
               f"{gap_f1:.3f}). Bytes per token: stored K, V, scales and positions per chunk token "
               f"(`kvprep inspect`, kv_bytes_per_token). Delta: against `{a.baseline}`, paired over questions; all "
               f"intervals 95% bootstrap ({RESAMPLES} resamples).\n")
    out.append("| KV mode | compression | bytes/token | x smaller | normalized gold LL | delta LL | normalized F1 | "
               "delta F1 | KL first | top-1 | TTFT ms |")
    out.append("|---|---|---:|---:|---|---|---|---|---:|---:|---:|")
    for r in rows:
        out.append(f"| {r['kv']} | {recipe(r)} | {r['bytes']:.0f} | {r['smaller']:.2f} | {fmt(r['ll'], r['ll_ci'])} | "
                   f"{fmt(r['ll_delta'], r['ll_delta_ci'])} | {fmt(r['f1'], r['f1_ci'])} | "
                   f"{fmt(r['f1_delta'], r['f1_delta_ci'])} | {r['kl']:.3f} | {r['top1']:.3f} | {r['ttft']:.0f} |")
    goal = [r for r in rows if r["smaller"] >= 8]
    out.append("")
    out.append("Goal (>= 8x fewer bytes per token than f16, <= 0.05 loss of normalized quality): " + (
        "; ".join(f"`{r['kv']}` {r['smaller']:.1f}x, delta LL {r['ll_delta']:+.2f} [{r['ll_delta_ci'][0]:+.2f}, "
                  f"{r['ll_delta_ci'][1]:+.2f}], delta F1 {r['f1_delta']:+.2f}" for r in goal) or "no mode is 8x smaller"))
    out.append("\n![bytes per token against quality](tradeoff.png)\n")
    out.append("Plot script: `tradeoff.gp`. Per-question results: `results.jsonl` (question ids, answers and scores; no data-set text).")

    data = "\n".join(f"{r['bytes']:.1f} {r['ll']:.4f} {r['ll_ci'][0]:.4f} {r['ll_ci'][1]:.4f} {r['f1']:.4f} "
                     f"{r['f1_ci'][0]:.4f} {r['f1_ci'][1]:.4f} {r['kv']}" for r in rows)
    gp = f"""set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
{data}
EOD
set title '{os.path.basename(sweep['dataset'])}: {a.method} at {a.ratio:g} over compressed KV ({len(ids)} questions, 95% CI)' noenhanced
set xlabel 'stored bytes per chunk token (log scale)'
set ylabel 'normalized quality (0 = reuse, 1 = full)'
set logscale x 2
set grid
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb 'gray'
plot $d using 1:2:3:4 with yerrorbars pt 7 lc 1 title 'gold log-likelihood recovery', \\
     $d using 1:2:8 with labels offset 0,1 font ',9' notitle noenhanced, \\
     $d using ($1*1.04):5:6:7 with yerrorbars pt 6 lc 3 title 'F1 (normalized)'
"""
    write_report(a.sweep, "tradeoff", out, gp)
    print("\n".join(out))


if __name__ == "__main__":
    main()
