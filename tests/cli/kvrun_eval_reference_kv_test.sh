#!/usr/bin/env bash
# kvrun eval --reference-kv on a real store with compressed modes made from the similarity KV: a100 (anchors keeping
# every row: the similarity KV's exact bytes) compared with similarity gives identical answers and answer KL 0
# exactly at every point, and int2 KV gives KL above 0; the reference's own runs, full attention's and a sweep without
# the option carry no ref_* keys, and the option changes none of the other results (the reference mode runs first
# here, though --kv names it second). The report's "Fidelity against similarity" table, metrics.csv's ref_* columns
# and --json's points hold the comparison, --report-only keeps it, a resumed sweep with another reference is
# refused, and a reference outside --kv is refused before any work.
# Usage: kvrun_eval_reference_kv_test.sh KVPREP KVRUN DATASET
. "$(dirname "$0")/common.sh"
kvprep=$1
kvrun=$2
dataset=$3  # three questions, four distinct passages (tests/fixtures/queries/three_questions.jsonl)
store="$work/store"

"$kvrun" eval --dataset "$dataset" --build-store "$store" --kv similarity --methods full,reuse --ratios 0 \
  --max-tokens 2 --out "$work/eval0" 2>"$work/log" || { cat "$work/log"; fail "store build"; }
compress() { "$kvprep" compress --store "$store" "$@" 2>>"$work/log" || { cat "$work/log"; fail "compress $*"; }; }
compress --from similarity --to a100 --anchors 1 --segment 16  # every row kept: the similarity KV's bytes
compress --from similarity --to q2 --quant int2 --quant-group 64

sweep=(--dataset "$dataset" --store "$store" --kv q2,similarity,a100 --methods full,reuse,fusion --ratios 0.5
       --max-tokens 8)
"$kvrun" eval "${sweep[@]}" --reference-kv similarity --out "$work/ref" --json >"$work/ref.json" 2>>"$work/log" \
  || { cat "$work/log"; fail "eval --reference-kv similarity"; }
"$kvrun" eval "${sweep[@]}" --out "$work/plain" 2>>"$work/log" || { cat "$work/log"; fail "eval without it"; }

python3 - "$work/ref" "$work/plain" "$work/ref.json" <<'PY' || fail "fidelity against the reference"
import csv, json, sys
ref_dir, plain_dir, summary = sys.argv[1:]
ref = [json.loads(l) for l in open(f"{ref_dir}/results.jsonl")]
plain = [json.loads(l) for l in open(f"{plain_dir}/results.jsonl")]
assert len(ref) == len(plain) == 3
kl_q2 = []
for q, p in zip(ref, plain):
    assert len(q["runs"]) == len(p["runs"]) == 1 + 3 * 2, len(q["runs"])
    for r, s in zip(q["runs"], p["runs"]):
        # The same results in the same order with and without the option, less the comparison and the timings.
        for key in ("method", "kv", "ratio", "answer", "f1", "gold_ll", "kl_first", "top1", "n_recomputed",
                    "kv_deviation"):
            assert r[key] == s[key], (key, r, s)
        assert "ref_identical" not in s and "ref_kl" not in s, s
        if r["kv"] in ("-", "similarity"):
            assert "ref_identical" not in r and "ref_kl" not in r, r
            continue
        assert r["ref_identical"] in (0, 1) and r["ref_kl"] >= 0, r
        if r["kv"] == "a100":  # the reference's own bytes: the same answer and distributions, exactly
            assert r["ref_identical"] == 1 and r["ref_kl"] == 0, r
        else:
            kl_q2.append(r["ref_kl"])
assert len(kl_q2) == 6 and min(kl_q2) > 0, kl_q2

rows = {(r["method"], r["kv"], r["ratio"]): r for r in csv.DictReader(open(f"{ref_dir}/metrics.csv"))}
a100 = rows[("reuse", "a100", "0")]
assert a100["ref_n"] == "3" and float(a100["ref_identical"]) == 1 and float(a100["ref_kl"]) == 0, a100
assert float(a100["ref_f1_delta"]) == 0 and float(a100["ref_gold_ll_delta_low"]) == 0, a100
q2 = rows[("fusion", "q2", "0.5")]
assert float(q2["ref_kl"]) > 0 and float(q2["ref_kl_low"]) > 0, q2
assert rows[("reuse", "similarity", "0")]["ref_n"] == "0" and rows[("full", "-", "1")]["ref_kl"] == "nan"
plain_header = open(f"{plain_dir}/metrics.csv").readline()
assert "ref_" not in plain_header and open(f"{ref_dir}/metrics.csv").readline().startswith(plain_header.strip())

points = {(p["method"], p["kv"], p["ratio"]): p for p in json.load(open(summary))["points"]}
assert points[("reuse", "a100", 0)]["ref_kl"] == 0 and points[("fusion", "q2", 0.5)]["ref_kl"] > 0, points
assert points[("reuse", "similarity", 0)]["ref_kl"] is None
PY

report="$work/ref/report.md"
grep -q "^## Fidelity against similarity$" "$report" || fail "report: no fidelity table"
grep -q "^| method | kv | ratio | n | identical | answer KL | gold LL delta | F1 delta |$" "$report" \
  || fail "report: the table's header"
grep -qF "| reuse | a100 | 0.00 | 3 | 1.000 [1.000, 1.000] | 0 [0, 0] | +0.000 [+0.000, +0.000] | +0.000 [+0.000, +0.000] |" \
  "$report" || fail "report: a100 row: $(grep '| a100 |' "$report")"
grep -q "^| fusion | q2 | 0.50 | 3 |" "$report" || fail "report: q2 row"
if grep -q "| similarity |" <(sed -n '/^## Fidelity/,/^## Time/p' "$report"); then fail "the reference compared with itself"; fi
if grep -q "Fidelity against" "$work/plain/report.md"; then fail "a sweep without --reference-kv has the table"; fi
# The quality table and its gaps are as without the option.
diff <(sed -n '/^## Quality/,/^## /p' "$report" | sed '$d') <(sed -n '/^## Quality/,/^## /p' "$work/plain/report.md" \
  | sed '$d') || fail "--reference-kv changed the quality table"

# --report-only redraws it from the results; a resumed sweep with another reference is refused, naming the key.
cp "$report" "$work/report.before"
"$kvrun" eval "${sweep[@]}" --out "$work/ref" --report-only 2>>"$work/log" || { cat "$work/log"; fail "--report-only"; }
diff <(sed -n '/^## Fidelity/,/^## Time/p' "$work/report.before") <(sed -n '/^## Fidelity/,/^## Time/p' "$report") \
  || fail "--report-only changed the fidelity table"
if "$kvrun" eval "${sweep[@]}" --reference-kv a100 --out "$work/ref" --limit 3 2>"$work/err"; then
  fail "another reference resumed the sweep"
fi
grep -q "differs in 'reference_kv'" "$work/err" || fail "message: $(cat "$work/err")"
# A reference that is not one of --kv: one error line, nothing written.
if "$kvrun" eval "${sweep[@]}" --reference-kv independent --out "$work/bad" 2>"$work/err"; then
  fail "--reference-kv outside --kv accepted"
fi
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "stderr: $(cat "$work/err")"
grep -q "^error: eval: --reference-kv 'independent' is not one of --kv (q2,similarity,a100)" "$work/err" \
  || fail "message: $(cat "$work/err")"
[ ! -e "$work/bad/results.jsonl" ] || fail "a refused sweep wrote results"
echo "ok: kvrun eval --reference-kv: a copy of the reference is identical with KL 0, int2 has KL > 0"
