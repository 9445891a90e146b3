#!/usr/bin/env bash
# kvrun eval end to end on a tiny data set: --build-store builds both KV modes from the questions' passages, the
# sweep's invariants hold (recompute 1.0 is full attention exactly; reuse and full are the normalisation's 0 and
# 1), the report, CSVs and plots are written, a rerun resumes instead of recomputing, and another sweep into
# the same folder is refused.
# Usage: kvrun_eval_test.sh KVRUN DATASET
. "$(dirname "$0")/common.sh"
kvrun=$1
dataset=$2  # three questions, four distinct passages (tests/fixtures/queries/three_questions.jsonl)

args=(--dataset "$dataset" --methods full,reuse,cacheblend,a3,fusion --ratios 0,0.3,0.5,1 --max-tokens 6
      --out "$work/eval")
"$kvrun" eval "${args[@]}" --build-store "$work/store" 2>"$work/log" || { cat "$work/log"; fail "eval"; }
for f in results.jsonl metrics.csv kv_deviation.csv report.md norm_f1.png norm_ll.png ttft.png kv_deviation.png; do
  [ -s "$work/eval/$f" ] || fail "eval wrote no $f"
done
[ "$(wc -l <"$work/store/corpus.jsonl")" -eq 4 ] || fail "corpus: 4 distinct passages expected"

python3 - "$work/eval" <<'PY' || fail "sweep invariants"
import csv, json, math, sys
out = sys.argv[1]
questions = [json.loads(l) for l in open(f"{out}/results.jsonl")]
assert [q["id"] for q in questions] == ["rings", "bow", "ice"], [q["id"] for q in questions]
for q in questions:
    assert 0 <= q["others_cpu"] <= 1, q["others_cpu"]  # other processes' share of the CPUs meanwhile
    assert "threads" in q["machine"] and "cpu backend" in q["machine"], q["machine"]  # where it was answered
    assert "question" not in q and "answers" not in q, q.keys()  # the data set's text stays in the data set
    runs = q["runs"]
    # full, then per KV mode: reuse and each selector at 0.3, 0.5 and 1.0
    assert len(runs) == 1 + 2 * (1 + 3 * 3), len(runs)
    full = runs[0]
    assert full["method"] == "full" and full["kl_first"] == 0 and full["top1"] == 1
    for r in runs:
        if r["ratio"] == 1.0:  # every selector at 1.0 computes exactly full attention's tokens over its view
            assert r["answer"] == full["answer"] and r["gold_ll"] == full["gold_ll"], (r, full)
            assert r["kl_first"] == 0 and max(r["kv_deviation"]["k"] + r["kv_deviation"]["v"]) == 0, r
        # TTFT holds every phase, also where a selector's scores were shared with another ratio.
        assert r["ms"]["ttft"] >= r["ms"]["select"] + r["ms"]["prefill"], r
        if r["method"] == "reuse":
            assert r["n_recomputed"] == 0 and max(r["kv_deviation"]["v"]) > 0, r
# Shares of tokens in gold passages: known where the data set names them; full recomputes the whole context.
for q in questions:
    share = q["gold_context_share"]
    if q["id"] == "ice":
        assert share is None and all(r["gold_share"] is None for r in q["runs"]), q
        continue
    assert 0 < share < 1, q
    for r in q["runs"]:
        if r["n_recomputed"] == 0:
            assert r["gold_share"] is None, r
        else:
            assert 0 <= r["gold_share"] <= 1, r
        if r["ratio"] == 1.0:
            assert abs(r["gold_share"] - share) < 1e-12, (r, share)
rows = list(csv.DictReader(open(f"{out}/metrics.csv")))
assert len(rows) == 21, len(rows)
by = {(r["method"], r["kv"], float(r["ratio"])): r for r in rows}
assert float(by[("full", "-", 1.0)]["norm_ll"]) == 1.0
assert float(by[("reuse", "independent", 0.0)]["norm_ll"]) == 0.0
assert abs(float(by[("fusion", "similarity", 1.0)]["norm_ll"]) - 1.0) < 1e-9
full_f1, rel = float(by[("full", "-", 1.0)]["f1"]), float(by[("full", "-", 1.0)]["rel_f1"])
assert rel == 1.0 if full_f1 > 0 else math.isnan(rel), (full_f1, rel)  # F1 / F1_full of full itself
for r in rows:
    assert int(r["n"]) == 3 and float(r["ttft_ms"]) > 0, r
report = open(f"{out}/report.md").read()
assert "| fusion | similarity | 0.50 |" in report and "![normalized F1](norm_f1.png)" in report
assert "independent KV (Full Reuse) as 0" in report and "Full attention minus full reuse, F1: " in report
assert "Other processes used " in report and "% of the CPUs while a question was answered" in report
PY

# A rerun of the same sweep answers nothing again; --report-only redraws from the results.
lines=$(wc -l <"$work/eval/results.jsonl")
"$kvrun" eval "${args[@]}" --store "$work/store" 2>"$work/log2" || { cat "$work/log2"; fail "rerun"; }
grep -q "3 of 3 questions already in" "$work/log2" || fail "rerun did not resume: $(cat "$work/log2")"
[ "$(wc -l <"$work/eval/results.jsonl")" -eq "$lines" ] || fail "rerun appended results"

# A run stopped while writing its third result leaves a half line: the rerun cuts it off and answers that
# question again, and the file stays one whole result per line.
head -n 2 "$work/eval/results.jsonl" >"$work/torn.jsonl"
printf '%s' "$(sed -n 3p "$work/eval/results.jsonl" | cut -c 1-100)" >>"$work/torn.jsonl"  # no newline
mv "$work/torn.jsonl" "$work/eval/results.jsonl"
torn_log="$work/log-torn"
"$kvrun" eval "${args[@]}" --store "$work/store" 2>"$torn_log" || { cat "$torn_log"; fail "rerun after a torn line"; }
grep -q "half-written line" "$torn_log" || fail "torn line not reported: $(cat "$torn_log")"
grep -q "2 of 3 questions already in" "$torn_log" || fail "torn line counted as answered: $(cat "$torn_log")"
three_whole_lines() {
  python3 -c 'import json, sys; assert len([json.loads(l) for l in open(sys.argv[1])]) == 3' "$work/eval/results.jsonl"
}
three_whole_lines || fail "results.jsonl after the torn-line rerun is not three whole lines"
# Stopped between the last result and its newline: the result is whole, so it is kept and its line finished.
truncate -s -1 "$work/eval/results.jsonl"
"$kvrun" eval "${args[@]}" --store "$work/store" 2>"$torn_log" || { cat "$torn_log"; fail "rerun, no newline"; }
grep -q "3 of 3 questions already in" "$torn_log" || fail "a whole last line was dropped: $(cat "$torn_log")"
three_whole_lines || fail "results.jsonl after the no-newline rerun is not three whole lines"

rm "$work/eval/report.md"
"$kvrun" eval --store "$work/store" --out "$work/eval" --report-only 2>/dev/null || fail "--report-only"
[ -s "$work/eval/report.md" ] || fail "--report-only wrote no report"

# The retrieval setting over a store built from a separate corpus (--corpus): each question's --top-k chunks come
# from the store's index, not its own passages.
cat >"$work/pool.jsonl" <<'JSON'
{"id": 1, "title": "Saturn", "text": "Saturn is the sixth planet from the Sun, known for its rings of ice and rock."}
{"id": 2, "title": "Violin", "text": "The violin is a wooden string instrument played with a bow."}
{"id": 3, "title": "Glacier", "text": "A glacier is a persistent body of dense ice that moves under its own weight."}
{"id": 4, "title": "Harp", "text": "The harp is a stringed instrument whose strings are plucked with the fingers."}
JSON
"$kvrun" eval --dataset "$dataset" --build-store "$work/pool-store" --corpus "$work/pool.jsonl" \
  --setting retrieval --top-k 3 --methods full,reuse --ratios 0 --kv independent --max-tokens 2 \
  --out "$work/retrieval" 2>"$work/log4" || { cat "$work/log4"; fail "retrieval"; }
[ ! -e "$work/pool-store/corpus.jsonl" ] || fail "--corpus: the questions' passages were written anyway"
python3 - "$work/retrieval/results.jsonl" <<'PY' || fail "retrieval setting"
import json, sys
questions = [json.loads(l) for l in open(sys.argv[1])]
assert [q["n_chunks"] for q in questions] == [3, 3, 3], [q["n_chunks"] for q in questions]
assert all(len(q["runs"]) == 2 for q in questions)
PY

# --best-last places the best retrieved chunk nearest the question; it means nothing in the fixed setting.
"$kvrun" eval --dataset "$dataset" --store "$work/pool-store" --setting retrieval --top-k 3 --best-last \
  --methods full,reuse --ratios 0 --kv independent --max-tokens 2 --out "$work/best-last" 2>"$work/log5" ||
  { cat "$work/log5"; fail "--best-last"; }
grep -q '"best_last": true' "$work/best-last/sweep.json" || fail "--best-last not recorded in sweep.json"
grep -q "setting retrieval, best chunk last" "$work/best-last/report.md" || fail "--best-last not in the report"
if "$kvrun" eval --dataset "$dataset" --store "$work/store" --best-last --methods full,reuse --ratios 0 \
  --kv independent --out "$work/fixed-best-last" 2>"$work/log6"; then
  fail "--best-last accepted in the fixed setting"
fi
grep -q "needs --setting retrieval, got 'fixed'" "$work/log6" || fail "message: $(cat "$work/log6")"

# --exact-first-chunk is recorded with the sweep and named in the report.
"$kvrun" eval --dataset "$dataset" --store "$work/store" --exact-first-chunk --methods full,reuse,fusion \
  --ratios 0.5 --kv independent --max-tokens 2 --out "$work/exact-first" 2>"$work/log7" ||
  { cat "$work/log7"; fail "--exact-first-chunk"; }
# The sweep's own settings (top level of sweep.json), not the options its provenance lists for each run.
sweep_setting() {  # sweep_setting SWEEP_JSON KEY: prints the top-level value as JSON, or nothing when absent
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(json.dumps(d[sys.argv[2]]) if sys.argv[2] in d else "")' "$@"
}
[ "$(sweep_setting "$work/exact-first/sweep.json" exact_first_chunk)" = true ] ||
  fail "--exact-first-chunk not in sweep.json"
grep -q "first chunk's independent KV in every mode" "$work/exact-first/report.md" ||
  fail "--exact-first-chunk not in the report"

# It is the default where the KV modes are independent and similarity; --no-exact-first-chunk turns it off, and
# a sweep made without it is not continued with it: the refusal names the setting and the flag.
[ "$(sweep_setting "$work/eval/sweep.json" exact_first_chunk)" = true ] ||
  fail "the first chunk's exact KV is not the default"
stored_first=(--dataset "$dataset" --store "$work/store" --methods full,reuse --ratios 0 --kv independent
              --max-tokens 2 --out "$work/stored-first")
"$kvrun" eval "${stored_first[@]}" --no-exact-first-chunk 2>"$work/log9" || { cat "$work/log9"; fail "--no-exact"; }
[ -z "$(sweep_setting "$work/stored-first/sweep.json" exact_first_chunk)" ] || fail "--no-exact-first-chunk recorded as on"
if "$kvrun" eval "${stored_first[@]}" 2>"$work/log10"; then fail "a sweep continued with another first chunk"; fi
grep -q "differs in 'exact_first_chunk'.*continues with --no-exact-first-chunk" "$work/log10" ||
  fail "message: $(cat "$work/log10")"
grep -q -- "--no-exact-first-chunk" "$work/stored-first/command.txt" ||
  fail "a refused command replaced the sweep's command.txt"

# A sweep that ran no reuse of the independent KV names the reuse its normalized scores start from.
"$kvrun" eval --dataset "$dataset" --store "$work/store" --methods full,reuse --ratios 0 --kv similarity \
  --max-tokens 2 --out "$work/similarity-only" 2>"$work/log8" || { cat "$work/log8"; fail "--kv similarity"; }
grep -q "similarity KV (this sweep ran no Full Reuse) as 0" "$work/similarity-only/report.md" &&
  grep -q "^Full attention minus reuse of the similarity KV, F1: " "$work/similarity-only/report.md" ||
  fail "the report of a sweep without Full Reuse does not name its zero"

# Another sweep into the same folder is refused, naming the way out.
if "$kvrun" eval "${args[@]}" --store "$work/store" --ratios 0.3 2>"$work/log3"; then fail "mixed sweeps accepted"; fi
grep -q "holds results of another sweep.*--fresh" "$work/log3" || fail "message: $(cat "$work/log3")"
echo "ok: kvrun eval (build store, sweep invariants, report, resume, refusal)"
