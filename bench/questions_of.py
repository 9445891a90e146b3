#!/usr/bin/env python3
"""The first N questions of a QA data set (JSONL or .jsonl.gz with "contexts") as a kvrun question file
(WORK/questions.jsonl: id, question, contexts) and a corpus of exactly their passages (WORK/corpus.jsonl).
Usage: questions_of.py DATASET N WORK"""
import gzip
import json
import sys

path, n, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opener = gzip.open if path.endswith(".gz") else open
with opener(path, "rt") as f:
    rows = [json.loads(line) for line in f if line.strip()][:n]
seen = {}
for r in rows:
    for c in r["contexts"]:
        seen.setdefault((c.get("title") or "", c["text"]), len(seen))
with open(f"{work}/corpus.jsonl", "w") as f:
    for (title, text), i in seen.items():
        f.write(json.dumps({"id": i, "title": title, "text": text}) + "\n")
with open(f"{work}/questions.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps({"id": r["id"], "question": r["question"], "contexts": r["contexts"]}) + "\n")
