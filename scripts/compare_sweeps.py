#!/usr/bin/env python3
"""Paired comparison of one method across kvrun eval sweeps that differ in a setting (the first chunk's KV, chunk
order, neighbour count, ...): on the questions every sweep answered, each sweep's F1, F1 / full, normalized F1
and normalized gold-LL recovery (0 = Full Reuse of independent KV, 1 = full attention, FusionRAG eq. 11), the
share of its recomputed tokens that lie in gold passages (where the data set marks them), and its
difference from the first sweep, paired over questions, with 95% percentile bootstrap intervals; also the mean
recomputed tokens, the median TTFT and the share of answers identical to the first sweep's. The gold-LL difference
is of normalized gold LL where the sweeps ran Full Reuse of the independent KV, else of the mean gold LL. Reads each
folder's results.jsonl, or results.jsonl.gz (question ids, answers and scores, none of the data set's text). Of
the sweeps under docs/results, only those docs/eval.md lists under "Per-question results" kept theirs; a folder
with neither file is refused, naming it.

A setting that leaves full attention and Full Reuse of the independent KV as they were (--exact-first-chunk) need
not run them again: with --references-from-baseline, a sweep that ran only the compared
method (`kvrun eval --methods reuse,fusion ...`) takes each question's full and Full Reuse runs from the baseline.

  kvrun eval --dataset hotpotqa_dev500_ircot.jsonl --build-store stores/hq --limit 20 --out eval/hq
  kvrun eval --dataset hotpotqa_dev500_ircot.jsonl --store stores/hq --limit 20 --no-exact-first-chunk \\
      --out eval/hq-no-exact-first
  scripts/compare_sweeps.py --method fusion --kv similarity --ratio 0.15 \\
      baseline=eval/hq no-exact-first=eval/hq-no-exact-first

A sweep written NAME=METHOD@FOLDER takes METHOD instead of --method, so two methods of different sweeps pair up
over the same questions (here fusion against cacheblend of one committed sweep that kept its results):

  scripts/compare_sweeps.py --kv similarity --ratio 0.15 \\
      fusion=fusion@docs/results/eval-musique-cacheblend-qwen1.5b \\
      cacheblend=cacheblend@docs/results/eval-musique-cacheblend-qwen1.5b
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys

from bootstrap_interval import bootstrap

METHODS = ("full", "reuse", "cacheblend", "a3", "fusion")


def results_path(folder):
    """The file holding a sweep's per-question results: results.jsonl, else results.jsonl.gz."""
    plain, packed = os.path.join(folder, "results.jsonl"), os.path.join(folder, "results.jsonl.gz")
    if os.path.exists(plain) and os.path.exists(packed):
        sys.exit(f"error: {folder} holds both results.jsonl and results.jsonl.gz; keep one")
    if os.path.exists(plain) or os.path.exists(packed):
        return plain if os.path.exists(plain) else packed
    if os.path.exists(os.path.join(folder, "sweep.json")):
        sys.exit(f"error: {folder}: no results.jsonl or results.jsonl.gz; this sweep's per-question results were "
                 "not kept (docs/eval.md lists the committed sweeps that have them); rerun its command.txt to get them")
    sys.exit(f"error: {folder}: no results.jsonl or results.jsonl.gz (run kvrun eval with --out {folder} first)")


def read_runs(folder, method, kv, ratio, needed=("x", "full")):
    """question id -> {"x": the method's run, "full": full's run, "reuse": reuse over independent KV when the sweep
    ran it}, for the questions that have every run in `needed`."""
    path = results_path(folder)
    out = {}
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"error: {path}:{n}: {e}")
            picked = {}
            for r in q["runs"]:
                if r["method"] == method and r["kv"] == kv and abs(r["ratio"] - ratio) < 1e-9:
                    picked["x"] = r
                elif r["method"] == "full":
                    picked["full"] = r
                elif r["method"] == "reuse" and r["kv"] == "independent":
                    picked["reuse"] = r
            if all(key in picked for key in needed):
                out[q["id"]] = picked
    if not out:
        wanted = "" if needed == ("x",) else " and " + " and ".join(
            {"full": "full", "reuse": "reuse over independent KV"}[k] for k in needed if k != "x")
        sys.exit(f"error: {path}: no question has {method} over {kv} at {ratio}{wanted}")
    return out


def summary(runs, ids, metric):
    """Mean of the method, full and reuse over `ids` for `metric`, and the normalized value (NaN where a sweep ran
    no reuse over independent KV)."""
    mean = lambda key: sum(runs[i][key][metric] for i in ids) / len(ids)
    x, full = mean("x"), mean("full")
    reuse = mean("reuse") if all("reuse" in runs[i] for i in ids) else float("nan")
    return x, full, reuse, (x - reuse) / (full - reuse) if full != reuse else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweeps", nargs="+", help="NAME=FOLDER or NAME=METHOD@FOLDER, the first the baseline")
    p.add_argument("--method", default="fusion", choices=METHODS, help="the method of sweeps that name none")
    p.add_argument("--kv", default="similarity")
    p.add_argument("--ratio", type=float, default=0.15)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=20261124)
    p.add_argument("--references-from-baseline", action="store_true",
                   help="take full and Full Reuse from the first sweep for every sweep (they must be unchanged by "
                   "the setting compared)")
    p.add_argument("--references-from", metavar="FOLDER",
                   help="take full and Full Reuse from this sweep for every sweep, e.g. the sweep that the compared "
                   "ones (which ran only their methods) were made beside")
    a = p.parse_args()
    reference_folder = a.references_from
    sweeps = []
    for s in a.sweeps:
        name, sep, folder = s.partition("=")
        if not sep or not name or not folder:
            sys.exit(f"error: '{s}': expected NAME=FOLDER or NAME=METHOD@FOLDER")
        method, at, rest = folder.partition("@")
        if at and method in METHODS:
            folder = rest
        else:
            method = a.method
        if a.references_from_baseline and not sweeps:
            reference_folder = folder
        needed = ("x",) if reference_folder else ("x", "full")
        sweeps.append((name, method, read_runs(folder, method, a.kv, a.ratio, needed)))
    if reference_folder:
        references = read_runs(reference_folder, "full", a.kv, 1.0, ("full", "reuse"))
        for _, _, runs in sweeps:
            for i in list(runs):
                if i not in references:
                    del runs[i]
                    continue
                runs[i]["full"], runs[i]["reuse"] = references[i]["full"], references[i]["reuse"]
    ids = sorted(set.intersection(*(set(runs) for _, _, runs in sweeps)))
    if not ids:
        sys.exit("error: the sweeps have no question in common")
    base = sweeps[0][2]
    methods = sorted({method for _, method, _ in sweeps})
    print(f"{', '.join(methods)} over {a.kv} KV at {a.ratio}; {len(ids)} questions every sweep answered; paired "
          f"differences against `{sweeps[0][0]}`, 95% bootstrap intervals ({a.resamples} resamples)\n")
    print("| sweep | F1 | F1 / full | normalized F1 | normalized gold LL | in gold | recomputed | TTFT ms | "
          "same answer | delta F1 | delta gold LL |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---|---|")
    for name, _, runs in sweeps:
        cells = [name]
        f1, full_f1, _, norm_f1 = summary(runs, ids, "f1")
        cells += [f"{f1:.3f}", f"{f1 / full_f1:.2f}" if full_f1 else "-"]
        for metric in ("f1", "gold_ll"):
            if math.isnan(summary(runs, ids, metric)[3]):
                cells.append("-")
                continue
            lo, hi = bootstrap(ids, lambda s: summary(runs, s, metric)[3], a.resamples, a.seed)
            cells.append(f"{summary(runs, ids, metric)[3]:.2f} [{lo:.2f}, {hi:.2f}]")
        shares = [runs[i]["x"].get("gold_share") for i in ids]
        shares = [s for s in shares if s is not None]
        cells.append(f"{100 * sum(shares) / len(shares):.1f}%" if shares else "-")
        recomputed = [runs[i]["x"].get("n_recomputed") for i in ids]
        cells.append(f"{sum(recomputed) / len(ids):.0f}" if None not in recomputed else "-")
        ttft = [runs[i]["x"].get("ms", {}).get("ttft") for i in ids]
        cells.append(f"{statistics.median(ttft):.0f}" if None not in ttft else "-")
        answers = [(runs[i]["x"].get("answer"), base[i]["x"].get("answer")) for i in ids]
        same = sum(mine == theirs for mine, theirs in answers)
        cells.append(f"{100 * same / len(ids):.1f}%" if all(None not in pair for pair in answers) else "-")
        if runs is base:
            cells += ["-", "-"]
        else:
            delta_f1 = lambda s: summary(runs, s, "f1")[0] - summary(base, s, "f1")[0]
            # Without the normalization's reuse, the gold-LL difference is taken unnormalized.
            column = 3 if not math.isnan(summary(base, ids, "gold_ll")[3]) else 0
            delta_ll = lambda s: summary(runs, s, "gold_ll")[column] - summary(base, s, "gold_ll")[column]
            for stat in (delta_f1, delta_ll):
                lo, hi = bootstrap(ids, stat, a.resamples, a.seed)
                cells.append(f"{stat(ids):+.3f} [{lo:+.3f}, {hi:+.3f}]")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
