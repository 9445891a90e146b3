#!/usr/bin/env python3
"""The first N questions of a QA data set (JSONL or .jsonl.gz with "contexts") as a kvrun question file
(WORK/questions.jsonl: id, question, contexts) and a corpus of exactly their passages (WORK/corpus.jsonl).
With PASSAGES, each question's contexts are its own passages followed by the next questions' until it has
PASSAGES of them (long contexts: a retriever's distractors), and the corpus holds those, too.
Usage: questions_of.py DATASET N WORK [PASSAGES]"""
import gzip
import json
import sys

if len(sys.argv) not in (4, 5):
    sys.exit(__doc__)
path, n, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
passages = int(sys.argv[4]) if len(sys.argv) == 5 else 0
opener = gzip.open if path.endswith(".gz") else open
with opener(path, "rt") as f:
    rows = [json.loads(line) for line in f if line.strip()]
questions = rows[:n]
for i, q in enumerate(questions):
    contexts = list(q["contexts"])
    for later in rows[i + 1:]:
        if len(contexts) >= passages:
            break
        contexts += later["contexts"][:passages - len(contexts)]
    if len(contexts) < passages:
        sys.exit(f"error: {path}: question {q['id']} has {len(contexts)} passages with every later question's, "
                 f"fewer than {passages}")
    q["contexts"] = contexts
seen = {}
for q in questions:
    for c in q["contexts"]:
        seen.setdefault((c.get("title") or "", c["text"]), len(seen))
with open(f"{work}/corpus.jsonl", "w") as f:
    for (title, text), i in seen.items():
        f.write(json.dumps({"id": i, "title": title, "text": text}) + "\n")
with open(f"{work}/questions.jsonl", "w") as f:
    for q in questions:
        f.write(json.dumps({"id": q["id"], "question": q["question"], "contexts": q["contexts"]}) + "\n")
