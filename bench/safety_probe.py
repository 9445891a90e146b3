#!/usr/bin/env python3
"""Runs a table of hostile and careless inputs against the built kvprep and kvrun and prints, per case, what
happened: OK (accepted, nothing harmed), refused (exit status 1 or 2 with one "error:" line, nothing harmed) or
DAMAGED (a command ran from data, a file outside the folders given was read or printed, a user file was lost or
replaced, a store was left failing `kvprep verify`, input was silently cut short, or the tool hung or crashed).
Exits 1 when any case is DAMAGED. docs/safety.md states the rules the cases check.

  bench/safety_probe.py                      # build/bin, the smollm2 preset for the cases that need a model
  bench/safety_probe.py --bin build/bin --only gnuplot,out
  bench/safety_probe.py --markdown docs/results/safety_probe.md

Cases that need a decoder use the smollm2 preset and the model-folder cases qwen0.5b-hf's config and tokenizer
(scripts/setup.sh smollm2 qwen0.5b-hf); without them those cases are skipped.
"""
import argparse
import gzip
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HOME = os.environ.get("KVFUSE_HOME", os.path.expanduser("~/.cache/kvfuse"))
SMOLLM2 = os.path.join(HOME, "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
QWEN_HF = os.path.join(HOME, "models/qwen0.5b-hf")
CORPUS = [{"id": i, "title": t, "text": x} for i, (t, x) in enumerate([
    ("Saturn", "Saturn is the sixth planet from the Sun, known for its rings of ice and rock."),
    ("Violin", "The violin is a wooden string instrument played with a bow."),
    ("Glacier", "A glacier is a persistent body of dense ice that moves under its own weight.")], 1)]
QUESTION = {"id": "q1", "question": "Which planet has rings?", "answers": ["Saturn"],
            "contexts": [{"title": c["title"], "text": c["text"]} for c in CORPUS[:2]]}


class Probe:
    def __init__(self, bin_dir, work):
        self.kvrun = os.path.join(bin_dir, "kvrun")
        self.kvprep = os.path.join(bin_dir, "kvprep")
        self.random_model = os.path.join(bin_dir, "kvf_random_model")
        self.work = work
        self.rows = []
        self._store = None

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def run(self, args, timeout=60, cwd=None):
        """(status, stderr); status None when it hung past `timeout`."""
        try:
            p = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=timeout,
                               cwd=cwd or self.work, stdin=subprocess.DEVNULL)
            return p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            return None, "(no answer after %d s)" % timeout

    def record(self, group, name, status, stderr, damage):
        if status is None:
            verdict, why = "DAMAGED", "hung: " + stderr
        elif status < 0:
            verdict, why = "DAMAGED", "killed by signal %d" % -status
        elif damage:
            verdict, why = "DAMAGED", damage
        elif status == 0:
            verdict, why = "OK", ""
        else:
            lines = [l for l in stderr.splitlines() if l.startswith("error:")]
            verdict, why = "refused", lines[-1] if lines else (stderr.strip().splitlines() or [""])[-1]
        why = why.replace(self.work, "WORK")
        self.rows.append((group, name, verdict, why[:160]))
        print("%-8s %-9s %-52s %s" % (group, verdict, name, why[:110]), flush=True)

    def skip(self, group, name, why):
        self.rows.append((group, name, "skipped", why))
        print("%-8s %-9s %-52s %s" % (group, "skipped", name, why), flush=True)

    # A small store built once with smollm2 (the cases that need one).
    def store(self):
        if self._store is None:
            corpus = self.path("corpus.jsonl")
            write_jsonl(corpus, CORPUS)
            pipeline = self.path("pipeline.yaml")
            with open(pipeline, "w") as f:
                f.write("store: %s\ncorpus: %s\nmodel: smollm2\nembedder: minilm\nthreads: 2\n"
                        % (self.path("store"), corpus))
            status, err = self.run([self.kvprep, "run", pipeline], timeout=600)
            if status != 0:
                raise RuntimeError("building the probe's store failed: " + err[-400:])
            self._store = self.path("store")
        return self._store


def write_jsonl(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def made_up_results(out, kv):
    """A sweep's results, made up: full, reuse and cacheblend at 0.3 over one KV mode named `kv`."""
    os.makedirs(out, exist_ok=True)

    def run(method, kv, ratio, f1):
        return {"method": method, "kv": kv, "ratio": ratio, "answer": "a", "em": 0, "f1": f1, "substring": 0,
                "gold_ll": -f1, "kl_first": 0.1, "top1": 0.5, "n_recomputed": 3,
                "ms": {k: 1 for k in ("retrieve", "load", "select", "prefill", "ttft", "decode")},
                "kv_deviation": {"k": [0.1, 0.2], "v": [0.1, 0.2]}}
    write_jsonl(os.path.join(out, "results.jsonl"), [
        {"id": "q%d" % i, "n_chunks": 2, "n_context_tokens": 10, "n_question_tokens": 3, "n_gold_tokens": 1,
         "runs": [run("full", "-", 1.0, 0.9 - i / 10), run("reuse", kv, 0.0, 0.1 + i / 10),
                  run("cacheblend", kv, 0.3, 0.5)]} for i in range(2)])
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump({"dataset": "d.jsonl", "store": "s", "model": "m", "setting": ["not", "text"]}, f)


# --- the cases: each group sets up, runs, and says what (if anything) was harmed ---

def gnuplot_cases(p):
    pwned = p.path("PWNED")
    made_up_results(p.path("r1"), "independent")
    st, err = p.run([p.kvrun, "eval", "--report-only", "--store", "s", "--dataset",
                     "t';system(\"touch %s\");#.jsonl" % pwned, "--out", p.path("r1")])
    p.record("gnuplot", "data set name with a quote and system()", st, err,
             os.path.exists(pwned) and "gnuplot ran system() from the data set's name")
    made_up_results(p.path("r2"), "x');system(\"touch %s\");#" % pwned)
    st, err = p.run([p.kvrun, "eval", "--report-only", "--store", "s", "--dataset", "d.jsonl", "--out", p.path("r2")])
    p.record("gnuplot", "KV mode name in results.jsonl with system()", st, err,
             os.path.exists(pwned) and "gnuplot ran system() from a KV mode name")
    out = p.path("o'$(touch %s)'" % pwned)
    made_up_results(out, "independent")
    st, err = p.run([p.kvrun, "eval", "--report-only", "--store", "s", "--dataset", "d.jsonl", "--out", out])
    p.record("shell", "--out holding '$(touch FILE)'", st, err,
             os.path.exists(pwned) and "a shell ran a command from --out")


def hf_folder(p, name, index=None, fifo=None):
    """A Hugging Face folder made of qwen0.5b-hf's config and tokenizer files; `index`: its weight_map (the real
    one when None); `fifo`: one of its files made a FIFO."""
    d = p.path(name)
    os.makedirs(d)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors.index.json"):
        if f == fifo:
            os.mkfifo(os.path.join(d, f))
        elif f.startswith("model.") and index is not None:
            with open(os.path.join(d, f), "w") as out:
                json.dump({"weight_map": index}, out)
        else:
            os.symlink(os.path.join(QWEN_HF, f), os.path.join(d, f))
    return d


def model_folder_cases(p):
    if not os.path.isdir(QWEN_HF):
        p.skip("model", "Hugging Face folder cases", "no qwen0.5b-hf (scripts/setup.sh qwen0.5b-hf)")
        return
    secret = p.path("secret.safetensors")
    with open(secret, "wb") as f:
        f.write(b"SECRETxySECRETxy" * 4)
    header_number = str(struct.unpack("<Q", b"SECRETxy")[0])
    for name, entry in (("'..' in a shard name", "../secret.safetensors"), ("an absolute shard path", secret)):
        d = hf_folder(p, "hf-" + str(len(p.rows)), index={"model.embed_tokens.weight": entry})
        st, err = p.run([p.kvrun, "generate", "--model", d, "--prompt", "hi", "--max-tokens", "1"])
        damage = (st == 0 and "loaded a shard outside the model folder") or \
                 (("SECRET" in err or header_number in err) and "printed bytes of a file outside the folder")
        p.record("model", "index weight_map entry: " + name, st, err, damage)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors.index.json"):
        d = hf_folder(p, "hf-fifo-" + f.split(".")[0], fifo=f)
        st, err = p.run([p.kvrun, "generate", "--model", d, "--prompt", "hi"], timeout=20)
        p.record("model", "a FIFO as " + f, st, err, False)


def question_file_cases(p):
    q = p.path("q.jsonl")
    write_jsonl(q, [{"id": "a", "question": "Who?"}])
    before = open(q).read()
    st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", q, "--out", q])
    p.record("out", "batch --out the question file", st, err,
             open(q).read() != before and "the question file was replaced")
    os.symlink(q, p.path("q.link"))
    st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", q, "--out", p.path("q.link")])
    p.record("out", "batch --out a symlink to the question file", st, err,
             open(q).read() != before and "the question file was replaced")
    fifo = p.path("fifo")
    os.mkfifo(fifo)
    st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", q, "--out", fifo])
    p.record("out", "batch --out a FIFO", st, err, not stat_is_fifo(fifo) and "the FIFO was replaced")
    st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", q, "--out", p.work])
    p.record("out", "batch --out a folder", st, err, False)
    st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", fifo, "--out", p.path("a.jsonl")],
                    timeout=20)
    p.record("input", "batch --queries a FIFO", st, err, False)

    whole = p.path("whole.jsonl.gz")
    with gzip.open(whole, "wt") as f:
        for i in range(50):
            f.write(json.dumps({"id": "q%d" % i, "question": "What is %d? %s" % (i, "x" * 300)}) + "\n")
    data = open(whole, "rb").read()
    for cut, name in ((len(data) // 2, "mid-stream"), (len(data) - 8, "without its trailer")):
        path = p.path("cut%d.jsonl.gz" % cut)
        with open(path, "wb") as f:
            f.write(data[:cut])
        st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", path, "--out", p.path("a.jsonl")])
        # Past the question file the store is opened, which fails: "not a kvfuse store" means the short file was
        # accepted.
        p.record("input", "a .jsonl.gz cut " + name, st, err,
                 "not a kvfuse store" in err and "a truncated gzip file was read as a shorter one")
    cases = [("two questions with one id", [{"id": "a", "question": "x?"}, {"id": "a", "question": "y?"}]),
             ("\"chunk_ids\": []", [{"question": "x?", "chunk_ids": []}]),
             ("both chunk_ids and contexts",
              [{"question": "x?", "chunk_ids": ["0123456789abcdef"], "contexts": [{"text": "t"}]}]),
             ("an empty passage", [{"question": "x?", "contexts": [{"title": "A", "text": ""}]}])]
    for name, records in cases:
        path = p.path("case.jsonl")
        write_jsonl(path, records)
        st, err = p.run([p.kvrun, "batch", "--store", "/nonexistent", "--queries", path, "--out", p.path("a.jsonl")])
        p.record("input", name, st, err, "not a kvfuse store" in err and "accepted and reinterpreted")


def stat_is_fifo(path):
    import stat
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def option_cases(p):
    for args in (["ask", "--store", "/nonexistent", "--question", "q", "--cache-mb", "nan"],
                 ["ask", "--store", "/nonexistent", "--question", "q", "--recompute", "nan"],
                 ["eval", "--store", "s", "--dataset", "d.jsonl", "--out", "o", "--cache-mb", "-5"],
                 ["eval", "--store", "s", "--dataset", "d.jsonl", "--out", "o", "--threads", "-2"],
                 ["eval", "--store", "s", "--dataset", "d.jsonl", "--out", "o", "--max-tokens", "1000000000"]):
        st, err = p.run([p.kvrun] + args)
        p.record("option", "kvrun " + " ".join(args[:1] + args[-2:]), st, err, st == 0 and "accepted")
    for args in (["prefill", "--store", "s", "--shard-mb", "nan"], ["prefill", "--store", "s", "--neighbor-cache-mb", "nan"],
                 ["compress", "--store", "s", "--from", "a", "--to", "b", "--share-threshold", "nan"]):
        st, err = p.run([p.kvprep] + args)
        p.record("option", "kvprep " + " ".join(args[:1] + args[-2:]), st, err, st == 0 and "accepted")


def lock_case(p):
    made_up_results(p.path("r3"), "independent")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,sys,time\nf=open(sys.argv[1],'w')\n"
                               "fcntl.flock(f,fcntl.LOCK_EX)\ntime.sleep(30)", p.path("r3", ".kvrun-eval.lock")])
    time.sleep(0.5)
    before = open(p.path("r3", "results.jsonl")).read()
    st, err = p.run([p.kvrun, "eval", "--report-only", "--store", "s", "--dataset", "d.jsonl", "--out", p.path("r3")])
    holder.kill()
    holder.wait()
    p.record("out", "a second eval into an --out in use", st, err,
             (st == 0 and "two evals wrote one --out") or
             (open(p.path("r3", "results.jsonl")).read() != before and "results changed"))


def store_cases(p):
    if not os.path.exists(SMOLLM2):
        for name in ("chunk into a folder holding notes.tmp", "eval --build-store over a user's corpus.jsonl",
                     "verify --repair of an unreadable shard", "prefill with a model whose weights are NaN"):
            p.skip("store", name, "no smollm2 (scripts/setup.sh smollm2)")
        return
    corpus = p.path("corpus.jsonl")
    write_jsonl(corpus, CORPUS)
    folder = p.path("not-a-store")
    os.makedirs(folder)
    with open(os.path.join(folder, "notes.tmp"), "w") as f:
        f.write("mine")
    st, err = p.run([p.kvprep, "chunk", "--corpus", corpus, "--store", folder])
    p.record("store", "chunk into a folder holding notes.tmp", st, err,
             not os.path.exists(os.path.join(folder, "notes.tmp")) and "a user's file was deleted")

    build = p.path("build-store")
    os.makedirs(build)
    with open(os.path.join(build, "corpus.jsonl"), "w") as f:
        f.write("my own corpus\n")
    dataset = p.path("dataset.jsonl")
    write_jsonl(dataset, [QUESTION])
    st, err = p.run([p.kvrun, "eval", "--dataset", dataset, "--build-store", build, "--out", p.path("e1"),
                     "--methods", "full,reuse", "--kv", "independent", "--max-tokens", "2"], timeout=600)
    p.record("store", "eval --build-store over a user's corpus.jsonl", st, err,
             open(os.path.join(build, "corpus.jsonl")).read() != "my own corpus\n" and "the user's corpus was replaced")

    store = p.store()
    shard = sorted(os.listdir(os.path.join(store, "kv")))[0]
    shard_path = os.path.join(store, "kv", shard)
    size = os.path.getsize(shard_path)
    os.chmod(shard_path, 0)
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    st, err = p.run(drop + [p.kvprep, "verify", "--store", store, "--repair"])
    os.chmod(shard_path, 0o644)
    damage = (not os.path.exists(shard_path) or os.path.getsize(shard_path) != size) and "a healthy shard was deleted"
    p.record("store", "verify --repair of an unreadable shard", st, err, damage)

    nan_model = nan_weights_model(p)
    if nan_model is None:
        p.skip("store", "prefill with a model whose weights are NaN", "no kvf_random_model")
        return
    nan_store = p.path("nan-store")
    pipeline = p.path("nan.yaml")
    with open(pipeline, "w") as f:
        f.write("store: %s\ncorpus: %s\nmodel: %s\nembedder: minilm\nprefill:\n  modes: [independent]\n  dtype: f16\n"
                % (nan_store, corpus, nan_model))
    st, err = p.run([p.kvprep, "run", pipeline], timeout=600)
    vst, verr = p.run([p.kvprep, "verify", "--store", nan_store])
    p.record("store", "prefill with a model whose weights are NaN", st, err,
             vst != 0 and os.path.exists(os.path.join(nan_store, "manifest.json")) and
             "the store fails kvprep verify: " + verr.strip()[-100:])


def nan_weights_model(p):
    """A 1-layer random model with smollm2's tokenizer whose output norm is NaN (every logit and the layer's
    outputs through it are NaN)."""
    if not os.path.exists(p.random_model):
        return None
    path = p.path("nan.gguf")
    st, err = p.run([p.random_model, "--shape", "smollm2-135m", "--layers", "1", "--type", "f32",
                     "--tokenizer-from", SMOLLM2, "--out", path], timeout=300)
    if st != 0:
        return None
    poison_tensor(path, "blk.0.attn_k.weight")
    return path


def poison_tensor(path, name):
    """Overwrites the f32 tensor `name` of a GGUF (v2/v3) with NaN."""
    with open(path, "r+b") as f:
        data = f.read()
        pos = 8
        n_tensors, n_kv = struct.unpack_from("<QQ", data, pos)
        pos += 16
        alignment = 32

        def string(pos):
            n = struct.unpack_from("<Q", data, pos)[0]
            return data[pos + 8:pos + 8 + n].decode("utf-8", "replace"), pos + 8 + n
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

        def value(pos, t):
            if t == 8:
                return string(pos)
            if t == 9:
                et, n = struct.unpack_from("<IQ", data, pos)
                pos += 12
                if et == 8:
                    for _ in range(n):
                        _, pos = string(pos)
                    return None, pos
                return None, pos + sizes[et] * n
            return data[pos:pos + sizes[t]], pos + sizes[t]
        for _ in range(n_kv):
            key, pos = string(pos)
            t = struct.unpack_from("<I", data, pos)[0]
            v, pos = value(pos + 4, t)
            if key == "general.alignment":
                alignment = struct.unpack("<I", v)[0]
        infos = {}
        for _ in range(n_tensors):
            tname, pos = string(pos)
            nd = struct.unpack_from("<I", data, pos)[0]
            dims = struct.unpack_from("<%dQ" % nd, data, pos + 4)
            ttype, off = struct.unpack_from("<IQ", data, pos + 4 + 8 * nd)
            pos += 4 + 8 * nd + 12
            infos[tname] = (ttype, off, dims)
        start = (pos + alignment - 1) // alignment * alignment
        ttype, off, dims = infos[name]
        assert ttype == 0, "%s is not f32" % name
        count = 1
        for d in dims:
            count *= d
        f.seek(start + off)
        f.write(struct.pack("<f", float("nan")) * count)


GROUPS = {"gnuplot": gnuplot_cases, "model": model_folder_cases, "input": question_file_cases,
          "option": option_cases, "out": lock_case, "store": store_cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin", help="folder holding kvprep, kvrun and kvf_random_model")
    ap.add_argument("--only", default="", help="comma-separated groups: " + ", ".join(GROUPS))
    ap.add_argument("--markdown", help="also write the table here, with the machine and date")
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)
    for tool in ("kvrun", "kvprep"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            sys.exit("%s/%s: not built (make build)" % (bin_dir, tool))
    work = tempfile.mkdtemp(prefix="kvf-probe-")
    probe = Probe(bin_dir, work)
    try:
        for name, group in GROUPS.items():
            if not args.only or name in args.only.split(","):
                group(probe)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    counts = {}
    for row in probe.rows:
        counts[row[2]] = counts.get(row[2], 0) + 1
    summary = ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items()))
    print("\n%d cases: %s" % (len(probe.rows), summary))
    if args.markdown:
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        with open(args.markdown, "w") as f:
            f.write("# Safety probe\n\n`bench/safety_probe.py` on %s (%s, %d cores), %s: %s.\n\n"
                    % ("a " + platform.machine() + " machine", cpu, os.cpu_count(), time.strftime("%Y-%m-%d"), summary))
            f.write("WORK is the probe's temporary folder. Command: `bench/safety_probe.py --markdown %s`.\n\n"
                    % args.markdown)
            f.write("| group | case | result | what the tool said |\n|---|---|---|---|\n")
            for g, n, v, why in probe.rows:
                f.write("| %s | %s | %s | %s |\n" % (g, n.replace("|", "\\|"), v, why.replace("|", "\\|")))
    sys.exit(1 if counts.get("DAMAGED") else 0)


if __name__ == "__main__":
    main()
