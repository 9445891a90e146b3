#!/usr/bin/env bash
# kvrun on hostile names and paths (docs/safety.md), no model needed: nothing from data or a path runs as a
# command (the report's gnuplot scripts), OUT is locked while a command writes it, outputs replace only regular
# files and never an input, and question files that would be read short or ambiguously are refused.
# Usage: kvrun_safety_test.sh KVRUN EXPECT_ERROR
. "$(dirname "$0")/common.sh"
kvrun=$1
expect_error=$2
command -v gnuplot >/dev/null || fail "gnuplot is missing (scripts/setup.sh installs it): the report's scripts cannot be checked"
cd "$work"

# A sweep's results, made up: full, reuse and cacheblend at 0.3 over one KV mode named `kv`, for 2 questions.
results() {
  python3 - "$1" "$2" <<'PY'
import json, sys
out, kv = sys.argv[1], sys.argv[2]
def run(method, kv, ratio, f1):
    return {"method": method, "kv": kv, "ratio": ratio, "answer": "a", "em": 0, "f1": f1, "substring": 0,
            "gold_ll": -f1, "kl_first": 0.1, "top1": 0.5, "n_recomputed": 3,
            "ms": {"retrieve": 1, "load": 1, "select": 1, "prefill": 1, "ttft": 4, "decode": 1},
            "kv_deviation": {"k": [0.1, 0.2], "v": [0.1, 0.2]}}
with open(f"{out}/results.jsonl", "w") as f:
    for i in range(2):
        q = {"id": f"q{i}", "n_chunks": 2, "n_context_tokens": 10, "n_question_tokens": 3, "n_gold_tokens": 1,
             "runs": [run("full", "-", 1.0, 0.9 - i * 0.1), run("reuse", kv, 0.0, 0.1 + i * 0.1),
                      run("cacheblend", kv, 0.3, 0.5)]}
        f.write(json.dumps(q) + "\n")
with open(f"{out}/sweep.json", "w") as f:
    json.dump({"dataset": "d.jsonl", "store": "s", "model": "m"}, f)
PY
}

# 1. The data set's name goes into every plot title: a quote in it must not end the string.
mkdir -p "$work/r1"
results "$work/r1" independent
"$kvrun" eval --report-only --store s --dataset "t';system(\"touch PWNED1\");#.jsonl" --out "$work/r1" 2>log \
  || { cat log; fail "report-only with a hostile data set name"; }
[ ! -e PWNED1 ] && [ ! -e "$work/r1/PWNED1" ] || fail "the data set's name ran a command through gnuplot"
[ -s "$work/r1/norm_f1.png" ] || fail "no plot drawn"
grep -q "t'';system" "$work/r1/norm_f1.gp" || fail "the title is not quoted in norm_f1.gp"

# 2. A KV mode name read back from results.jsonl.
mkdir -p "$work/r2"
results "$work/r2" "x');system(\"touch PWNED2\");#"
"$kvrun" eval --report-only --store s --dataset d.jsonl --out "$work/r2" 2>log || { cat log; fail "report-only"; }
[ ! -e PWNED2 ] && [ ! -e "$work/r2/PWNED2" ] || fail "a KV mode name from results.jsonl ran a command"

# 3. The --out folder's own name: gnuplot is started without a shell.
out3="$work/o'\$(touch PWNED3)'"
mkdir -p "$out3"
results "$out3" independent
"$kvrun" eval --report-only --store s --dataset d.jsonl --out "$out3" 2>log || { cat log; fail "report-only"; }
[ ! -e PWNED3 ] && [ ! -e "$out3/PWNED3" ] || fail "the --out path ran a command through a shell"
[ -s "$out3/ttft.png" ] || fail "no plot drawn in a folder with quotes in its name"

# 4. One eval per OUT: a second process is refused while the first holds the folder.
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); f.write("pid 1 on host h: the holder\n"); f.flush()
time.sleep(60)' "$work/r1/.kvrun-eval.lock" >/dev/null 2>&1 &
holder=$!
sleep 1
"$expect_error" 1 "^error: eval --out .*r1 is in use by another kvrun eval \(pid 1 on host h: the holder\)" \
  "$kvrun" eval --report-only --store s --dataset d.jsonl --out "$work/r1"
kill $holder; wait $holder 2>/dev/null || true

# 5. Outputs: never the input, never a device, FIFO or folder (all refused before any model or store is read).
printf '{"id": "a", "question": "Who?"}\n' >q.jsonl
cp q.jsonl q.copy
ln -s q.jsonl q.link
for out in q.jsonl q.link; do
  "$expect_error" 1 "^error: --out $out .*is the input q.jsonl" \
    "$kvrun" batch --store /nonexistent/store --queries q.jsonl --out "$out"
done
cmp -s q.jsonl q.copy || fail "the question file changed"
mkfifo fifo
"$expect_error" 1 "^error: --out /dev/null is a character device" \
  "$kvrun" batch --store /nonexistent/store --queries q.jsonl --out /dev/null
"$expect_error" 1 "^error: --out fifo is a FIFO" \
  "$kvrun" batch --store /nonexistent/store --queries q.jsonl --out fifo
"$expect_error" 1 "^error: --out $work is a folder" \
  "$kvrun" batch --store /nonexistent/store --queries q.jsonl --out "$work"
"$expect_error" 1 "^error: eval --out .*/report.md is a FIFO" \
  bash -c "mkdir -p '$work/r5' && mkfifo '$work/r5/report.md' && '$kvrun' eval --store s --dataset q.jsonl --out '$work/r5'"
"$expect_error" 1 "^error: eval --out .*results.jsonl is the input" \
  "$kvrun" eval --store s --dataset "$work/r1/results.jsonl" --out "$work/r1"

# 6. Question files: two questions with one id; a gzip copy cut short.
printf '{"id": "a", "question": "Who?"}\n{"id": "a", "question": "Where?"}\n' >dup.jsonl
"$expect_error" 1 "dup.jsonl:2: id 'a' is also the id of line 1" \
  "$kvrun" batch --store /nonexistent/store --queries dup.jsonl --out answers.jsonl
for i in $(seq 1 50); do printf '{"id": "q%d", "question": "What is %d? %s"}\n' "$i" "$i" "$(head -c 300 /dev/zero | tr '\0' x)"; done \
  | gzip -c >whole.jsonl.gz
head -c $(( $(stat -c %s whole.jsonl.gz) - 4 )) whole.jsonl.gz >cut.jsonl.gz
"$expect_error" 1 "cut.jsonl.gz: the gzip stream ends early" \
  "$kvrun" batch --store /nonexistent/store --queries cut.jsonl.gz --out answers.jsonl
[ ! -e answers.jsonl ] || fail "answers written for a refused question file"
echo "ok: kvrun safety"
