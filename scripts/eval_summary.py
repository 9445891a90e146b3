#!/usr/bin/env python3
"""One markdown table across kvrun eval sweeps: per data set, full, reuse and every method at one ratio, with
normalized F1 and gold log-likelihood recovery (95% intervals), first-token KL, top-1 agreement and TTFT.

  scripts/eval_summary.py --ratio 0.15 docs/results/eval-hotpotqa docs/results/eval-musique
"""
import argparse
import csv
import json
import os
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweeps", nargs="+", help="kvrun eval output folders (each with metrics.csv, sweep.json)")
    parser.add_argument("--ratio", type=float, default=0.15, help="the selectors' recompute ratio to show")
    args = parser.parse_args()
    print("| data set | method | kv | ratio | normalized F1 | normalized gold LL | KL first | top-1 | TTFT ms | vs full |")
    print("|---|---|---|---:|---|---|---:|---:|---:|---:|")
    for sweep in args.sweeps:
        metrics = os.path.join(sweep, "metrics.csv")
        if not os.path.exists(metrics):
            sys.exit(f"error: {metrics}: no such file (run kvrun eval first)")
        with open(os.path.join(sweep, "sweep.json")) as f:
            name = os.path.basename(json.load(f)["dataset"])
        with open(metrics) as f:
            rows = list(csv.DictReader(f))
        n = rows[0]["n"]
        for r in rows:
            if r["method"] not in ("full", "reuse") and abs(float(r["ratio"]) - args.ratio) > 1e-9:
                continue
            interval = lambda m: f"{float(r[m]):.2f} [{float(r[m + '_low']):.2f}, {float(r[m + '_high']):.2f}]"
            print(f"| {name} ({n} q) | {r['method']} | {r['kv']} | {float(r['ratio']):.2f} | {interval('norm_f1')} | "
                  f"{interval('norm_ll')} | {float(r['kl_first']):.3f} | {float(r['top1']):.3f} | "
                  f"{float(r['ttft_ms']):.0f} | {float(r['speedup_vs_full']):.2f}x |")


if __name__ == "__main__":
    main()
