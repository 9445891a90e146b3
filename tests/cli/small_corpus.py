#!/usr/bin/env python3
"""Writes the shell tests' corpus: N short documents (default 40), enough chunks for several 1 MB shards.
Usage: small_corpus.py OUT.jsonl [N]"""
import json
import sys

words = "river bridge valley mill station harbour tower market garden castle forest meadow".split()
n = int(sys.argv[2]) if len(sys.argv) > 2 else 40
with open(sys.argv[1], "w") as out:
    for i in range(n):
        text = " ".join(f"The {words[(i + j) % len(words)]} number {i * 7 + j} stands near the old road." for j in range(6))
        out.write(json.dumps({"id": f"d{i}", "title": f"Place {i}", "text": text}) + "\n")
