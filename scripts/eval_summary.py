#!/usr/bin/env python3
"""One markdown table across kvrun eval sweeps: per data set, full, reuse and every method at one ratio, with
F1, F1 relative to full attention, normalized F1 and gold log-likelihood recovery (95% intervals), first-token KL,
top-1 agreement, the share of recomputed tokens in gold passages and TTFT; then each sweep's full-minus-reuse gaps, which say whether normalized scores mean much.

  scripts/eval_summary.py --ratio 0.15 docs/results/eval-hotpotqa docs/results/eval-musique
"""
import argparse
import csv
import gzip
import json
import os
import re
import sys

from bootstrap_interval import bootstrap


def read_sweep(folder):
    metrics = os.path.join(folder, "metrics.csv")
    if not os.path.exists(metrics):
        sys.exit(f"error: {metrics}: no such file (run kvrun eval first)")
    with open(os.path.join(folder, "sweep.json")) as f:
        sweep = json.load(f)
    with open(metrics) as f:
        rows = list(csv.DictReader(f))
    gaps = {}  # "F1" / "gold LL" -> the interval text the report states
    report = os.path.join(folder, "report.md")
    if os.path.exists(report):
        for name, interval in re.findall(r"Full attention minus full reuse, (F1|gold LL): (\S+ \[\S+, \S+\])",
                                         open(report).read()):
            gaps[name] = interval
    return sweep, rows, gaps


def read_results(folder):
    """The per-question results of a sweep (results.jsonl, else results.jsonl.gz); None when it kept neither."""
    for name, opener in (("results.jsonl", open), ("results.jsonl.gz", gzip.open)):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with opener(path, "rt") as f:
                return [json.loads(line) for line in f if line.strip()]
    return None


def paired_differences(folder, ratio, resamples=1000, seed=20261124):
    """Per KV mode: fusion minus cacheblend and minus a3 at `ratio`, F1 and gold LL, paired over questions, with
    95% percentile bootstrap intervals. Needs OUT/results.jsonl or results.jsonl.gz."""
    questions = read_results(folder)
    if not questions:
        return []
    value = lambda run, metric: run[metric] if run[metric] is not None else float("nan")
    rows = []
    for kv in sorted({r["kv"] for r in questions[0]["runs"] if r["kv"] != "-"}):
        for other in ("cacheblend", "a3"):
            for metric in ("f1", "gold_ll"):
                diffs = []
                for q in questions:
                    at = {(r["method"], r["kv"]): r for r in q["runs"] if abs(r["ratio"] - ratio) < 1e-9}
                    if ("fusion", kv) in at and (other, kv) in at:
                        diffs.append(value(at[("fusion", kv)], metric) - value(at[(other, kv)], metric))
                if not diffs:
                    continue
                low, high = bootstrap(diffs, lambda s: sum(s) / len(s), resamples, seed)
                rows.append((kv, other, metric, sum(diffs) / len(diffs), low, high))
    return rows


def recovered_answers(folder, ratio):
    """Of the questions where Full Reuse (independent KV) scores a lower F1 than full attention, how many each
    point at `ratio` (and reuse per KV mode) brings back to full's F1, and on how many questions in all it scores
    below full. Needs OUT/results.jsonl or results.jsonl.gz."""
    questions = read_results(folder)
    if not questions:
        return None, []
    def run(q, method, kv):
        for r in q["runs"]:
            if r["method"] == method and r["kv"] == kv and (method in ("full", "reuse") or abs(r["ratio"] - ratio) < 1e-9):
                return r
        return None
    full_f1 = lambda q: run(q, "full", "-")["f1"]
    lost = [q for q in questions if full_f1(q) > run(q, "reuse", "independent")["f1"]]
    rows = []
    for kv in sorted({r["kv"] for r in questions[0]["runs"] if r["kv"] != "-"}):
        for method in ("reuse", "cacheblend", "a3", "fusion"):
            if run(questions[0], method, kv) is None:
                continue
            back = sum(1 for q in lost if run(q, method, kv)["f1"] >= full_f1(q))
            below = sum(1 for q in questions if run(q, method, kv)["f1"] < full_f1(q))
            rows.append((kv, method, back, below, len(questions)))
    return len(lost), rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweeps", nargs="+", help="kvrun eval output folders (each with metrics.csv, sweep.json)")
    parser.add_argument("--ratio", type=float, default=0.15, help="the selectors' recompute ratio to show")
    parser.add_argument("--paired", action="store_true",
                        help="also fusion minus cacheblend and a3 per KV mode, paired over questions, and the answers each "
                             "method brings back where Full Reuse lost them (reads results.jsonl or "
                             "results.jsonl.gz; a folder without either is named and left out)")
    args = parser.parse_args()
    sweeps = [(folder, *read_sweep(folder)) for folder in args.sweeps]
    if args.paired:
        lacking = [folder for folder in args.sweeps if read_results(folder) is None]
        if lacking:
            print(f"note: --paired reads per-question results, and {', '.join(lacking)} kept none (no results.jsonl "
                  "or results.jsonl.gz; docs/eval.md lists the committed sweeps that have them): left out of the "
                  "paired tables", file=sys.stderr)
    print("| data set | model | method | kv | ratio | F1 | F1 / full | normalized F1 | normalized gold LL | KL first "
          "| top-1 | in gold | TTFT ms | vs full |")
    print("|---|---|---|---|---:|---|---|---|---|---:|---:|---:|---:|---:|")
    for _, sweep, rows, _ in sweeps:
        name = os.path.basename(sweep["dataset"])
        n = rows[0]["n"]
        for r in rows:
            if r["method"] not in ("full", "reuse") and abs(float(r["ratio"]) - args.ratio) > 1e-9:
                continue
            interval = lambda m: f"{float(r[m]):.2f} [{float(r[m + '_low']):.2f}, {float(r[m + '_high']):.2f}]"
            relative = interval("rel_f1") if "rel_f1" in r else "-"
            gold = r.get("gold_share", "nan")
            gold = "-" if gold in ("", "nan") else f"{100 * float(gold):.0f}%"
            print(f"| {name} ({n} q) | {sweep.get('model', '?')} | {r['method']} | {r['kv']} | "
                  f"{float(r['ratio']):.2f} | {interval('f1')} | {relative} | {interval('norm_f1')} | "
                  f"{interval('norm_ll')} | {float(r['kl_first']):.3f} | {float(r['top1']):.3f} | {gold} | "
                  f"{float(r['ttft_ms']):.0f} | {float(r['speedup_vs_full']):.2f}x |")
    print("\n| data set | model | full - reuse F1 | full - reuse gold LL |")
    print("|---|---|---|---|")
    for _, sweep, rows, gaps in sweeps:
        print(f"| {os.path.basename(sweep['dataset'])} ({rows[0]['n']} q) | {sweep.get('model', '?')} | "
              f"{gaps.get('F1', '-')} | {gaps.get('gold LL', '-')} |")
    if args.paired:
        print(f"\n| data set | model | kv | fusion minus | metric | mean difference at {args.ratio} [95%] |")
        print("|---|---|---|---|---|---|")
        for folder, sweep, rows, _ in sweeps:
            for kv, other, metric, mean, low, high in paired_differences(folder, args.ratio):
                print(f"| {os.path.basename(sweep['dataset'])} | {sweep.get('model', '?')} | {kv} | {other} | "
                      f"{metric} | {mean:.3f} [{low:.3f}, {high:.3f}] |")
        print(f"\n| data set | model | kv | method (selectors at {args.ratio}) | questions Full Reuse lost, brought back to full's F1 "
              "| questions below full's F1 |")
        print("|---|---|---|---|---:|---:|")
        for folder, sweep, rows, _ in sweeps:
            lost, rows = recovered_answers(folder, args.ratio)
            for kv, method, back, below, n in rows:
                print(f"| {os.path.basename(sweep['dataset'])} | {sweep.get('model', '?')} | {kv} | {method} | "
                      f"{back} of {lost} | {below} of {n} |")


if __name__ == "__main__":
    main()
