#!/usr/bin/env python3
"""One markdown table across kvrun eval sweeps: per data set, full, reuse and every method at one ratio, with
F1, F1 relative to full attention, normalized F1 and gold log-likelihood recovery (95% intervals), first-token KL,
top-1 agreement, the share of recomputed tokens in gold passages and TTFT; then each sweep's full-minus-reuse gaps, which say whether normalized scores mean much.

  scripts/eval_summary.py --ratio 0.15 docs/results/eval-hotpotqa docs/results/eval-musique
"""
import argparse
import csv
import json
import os
import re
import sys


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweeps", nargs="+", help="kvrun eval output folders (each with metrics.csv, sweep.json)")
    parser.add_argument("--ratio", type=float, default=0.15, help="the selectors' recompute ratio to show")
    args = parser.parse_args()
    sweeps = [(folder, *read_sweep(folder)) for folder in args.sweeps]
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


if __name__ == "__main__":
    main()
