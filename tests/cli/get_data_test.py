#!/usr/bin/env python3
"""scripts/get_data.py on two small data sets this test writes: the manifest it generates from them, a verified
copy, a rerun that finds them up to date, --check catching a changed file, a corrupted source refused with nothing
left under its name, a set without a local copy named with its sources; and the repository's manifest lists every
data set the pipelines name.
Usage: get_data_test.py [REPO_ROOT]"""
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
SCRIPT = ROOT / "scripts" / "get_data.py"
failures = []


def check(cond, what, out=""):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}" + (f"\n--- output\n{out}" if out else ""))


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("KVFUSE_DATA", None)
    e.update(env or {})
    p = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=e)
    return p.returncode, p.stdout + p.stderr


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def question(i, src):
    return {"id": f"q{i}", "question": f"question {i}?", "answers": [f"a{i}"],
            "contexts": [{"title": "t", "text": f"passage {i} holds a{i}"}], "source": src}


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    src = tmp / "src"
    src.mkdir()
    s1 = "owner1/repo1@" + "a" * 40 + ":data/dev.json"
    s2 = "owner2/repo2@" + "b" * 40 + ":qa/test.jsonl.gz"
    (src / "small_a.jsonl").write_text("".join(json.dumps(question(i, s1)) + "\n" for i in range(3)))
    with gzip.open(src / "small_b.jsonl.gz", "wt") as f:
        for i in range(2):
            f.write(json.dumps(question(10 + i, s2)) + "\n")
    (src / "README.md").write_text("not a data set\n")
    manifest = tmp / "datasets.json"

    # The manifest from the local copy: hashes, counts, sources; a placeholder licence, kept licences on rewrite.
    rc, out = run("--write-manifest", "--from", src, "--manifest", manifest)
    check(rc == 0, "--write-manifest succeeds", out)
    m = json.loads(manifest.read_text())
    by = {e["file"]: e for e in m["datasets"]}
    check(sorted(by) == ["small_a.jsonl", "small_b.jsonl.gz"], f"the manifest lists the two data files: {sorted(by)}")
    check(by["small_a.jsonl"]["sha256"] == sha(src / "small_a.jsonl"), "the manifest has small_a's sha256")
    check(by["small_a.jsonl"]["records"] == 3 and by["small_b.jsonl.gz"]["records"] == 2, "record counts 3 and 2")
    check(by["small_b.jsonl.gz"]["sources"] == [{"repo": "owner2/repo2", "commit": "b" * 40,
                                                 "path": "qa/test.jsonl.gz"}], "small_b's source parsed", out)
    check("no licence recorded" in out, "a set without a licence is warned about", out)
    for e in m["datasets"]:
        e["licence"] = "CC0 (test)"
    manifest.write_text(json.dumps(m))
    rc, out = run("--write-manifest", "--from", src, "--manifest", manifest)
    check(rc == 0 and all(e["licence"] == "CC0 (test)" for e in json.loads(manifest.read_text())["datasets"]),
          "a rewritten manifest keeps the licences", out)

    # A verified copy, one progress line per file, no temporary left.
    into = tmp / "into"
    rc, out = run("--from", src, "--into", into, "--manifest", manifest)
    check(rc == 0, "get --from succeeds", out)
    for name in ("small_a.jsonl", "small_b.jsonl.gz"):
        check((into / name).is_file() and sha(into / name) == sha(src / name), f"{name} copied byte for byte")
        check(re.search(rf"{re.escape(name)}: copied from", out) is not None, f"a progress line for {name}", out)
    check(not list(into.glob(".*.part")), "no temporary left")

    # A rerun finds them up to date; --check passes.
    rc, out = run("--from", src, "--into", into, "--manifest", manifest)
    check(rc == 0 and out.count("up to date") == 2, "a rerun says up to date for both", out)
    rc, out = run("--check", "--into", into, "--manifest", manifest)
    check(rc == 0 and out.count(": ok") == 2, "--check passes on the copies", out)

    # --check detects a changed file and writes nothing; a get replaces it with the verified copy.
    changed = (into / "small_a.jsonl").read_text().replace("a1", "zz")
    (into / "small_a.jsonl").write_text(changed)
    rc, out = run("--check", "--into", into, "--manifest", manifest)
    check(rc != 0 and "small_a.jsonl: sha256 mismatch" in out and by["small_a.jsonl"]["sha256"] in out
          and sha(into / "small_a.jsonl") in out, "--check names the changed file, expected and actual hash", out)
    check((into / "small_a.jsonl").read_text() == changed, "--check leaves the file as it was")
    rc, out = run("--from", src, "--into", into, "--manifest", manifest, "--only", "small_a.jsonl")
    check(rc == 0 and sha(into / "small_a.jsonl") == by["small_a.jsonl"]["sha256"] and "small_b" not in out,
          "get --only replaces the changed file and touches only it", out)

    # A corrupted source: non-zero, the file, expected and actual hash named, nothing under its name, the other
    # set still copied.
    bad = tmp / "bad"
    bad.mkdir()
    (bad / "small_a.jsonl").write_bytes((src / "small_a.jsonl").read_bytes())
    (bad / "small_b.jsonl.gz").write_bytes((src / "small_b.jsonl.gz").read_bytes()[:-3] + b"xyz")
    into2 = tmp / "into2"
    rc, out = run("--from", bad, "--into", into2, "--manifest", manifest)
    check(rc != 0, "a corrupted source fails", out)
    check("small_b.jsonl.gz: sha256 mismatch" in out and by["small_b.jsonl.gz"]["sha256"] in out
          and sha(bad / "small_b.jsonl.gz") in out, "the error names the file, expected and actual hash", out)
    check(not (into2 / "small_b.jsonl.gz").exists(), "nothing left at the corrupted set's name")
    check(not list(into2.glob(".*.part")), "no temporary left after a mismatch")
    check((into2 / "small_a.jsonl").is_file(), "the good set is copied all the same")

    # A missing source file and a set with no local copy and no builder: named, with its sources.
    (bad / "small_b.jsonl.gz").unlink()
    rc, out = run("--from", bad, "--into", tmp / "into3", "--manifest", manifest)
    check(rc != 0 and "small_b.jsonl.gz: not in" in out, "a set missing from --from is named", out)
    rc, out = run("--into", tmp / "into4", "--manifest", manifest)
    check(rc != 0 and "needs --from DIR" in out and "owner1/repo1@" + "a" * 40 + ":data/dev.json" in out,
          "without --from, each set says it needs a local copy and names its sources", out)
    rc, out = run("--from", src, "--into", tmp / "into5", "--manifest", manifest, "--only", "nope.jsonl")
    check(rc != 0 and "nope.jsonl" in out, "--only with an unknown name fails, naming it", out)
    rc, out = run("--check", "--into", tmp / "absent", "--manifest", manifest)
    check(rc != 0, "--check on a missing folder fails", out)

    # The default folder: $KVFUSE_DATA, else $KVFUSE_HOME/data.
    rc, out = run("--from", src, "--manifest", manifest, env={"KVFUSE_DATA": str(tmp / "envdata")})
    check(rc == 0 and (tmp / "envdata" / "small_a.jsonl").is_file(), "the default folder is $KVFUSE_DATA", out)
    rc, out = run("--from", src, "--manifest", manifest, env={"KVFUSE_HOME": str(tmp / "home")})
    check(rc == 0 and (tmp / "home" / "data" / "small_b.jsonl.gz").is_file(),
          "without KVFUSE_DATA, the default folder is $KVFUSE_HOME/data", out)

# The repository's manifest loads and lists every data set a pipeline names.
rc, out = run("--list")
check(rc == 0, "the repository's manifest loads", out)
listed = {e["file"] for e in json.loads((ROOT / "data" / "datasets.json").read_text())["datasets"]}
for p in sorted((ROOT / "pipelines").glob("*.yaml")):
    for name in re.findall(r"^\s*dataset:\s*(\S+)", p.read_text(), re.M):
        check(name in listed, f"{p.name}: its data set {name} is in data/datasets.json")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("get_data: all checks passed")
