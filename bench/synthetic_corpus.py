#!/usr/bin/env python3
"""Writes a synthetic JSONL corpus for the corpus-scale measurement (bench/million_chunks.sh): DOCS documents of
about WORDS words each, sentences drawn from a fixed word list by a seeded generator (deterministic), ids 0..DOCS-1.
Usage: synthetic_corpus.py OUT.jsonl DOCS WORDS"""
import json
import random
import sys

WORDS = ("time year people way day man thing woman life child world school state family student group country "
         "problem hand part place case week company system program question work government number night point "
         "home water room mother area money story fact month lot right study book eye job word business issue side "
         "kind head house service friend father power hour game line end member law car city community name "
         "president team minute idea kid body information back parent face others level office door health person "
         "art war history party result change morning reason research girl guy moment air teacher force education "
         "river bridge valley mill station harbour tower market garden castle forest meadow engine signal memory "
         "cache kernel vector matrix tensor layer token model query answer chunk index store shard").split()


def main():
    out, docs, words = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(1)
    with open(out, "w") as f:
        for d in range(docs):
            text = []
            while len(text) < words:
                sentence = rng.choices(WORDS, k=rng.randint(6, 16))
                sentence[0] = sentence[0].capitalize()
                text.extend(sentence)
                text[-1] += "."
            f.write(json.dumps({"id": d, "title": f"Document {d}", "text": " ".join(text)}) + "\n")


if __name__ == "__main__":
    main()
