#!/usr/bin/env python3
"""Writes the demo corpus from FOLDOC, the Free On-line Dictionary of Computing (Denis Howe, GFDL), as installed by
the Debian package dict-foldoc (dictd format: /usr/share/dictd/foldoc.index and foldoc.dict.dz).

Output: JSONL, one {"id", "title", "text"} per dictionary entry, the corpus format kvprep reads. The title is the
entry's headword (with its other headwords in parentheses, e.g. "Transmission Control Protocol (TCP)"); the text is
its definition with the repeated headword lines dropped, indentation and line breaks collapsed into paragraphs
separated by a blank line, {cross-references} without their braces, link-only lines and the "(2001-06-14)" edit
dates dropped.

To keep the demo small it writes --limit entries: every headword in --entries (the ones the demo questions need),
then entries of 40-400 words that those entries cross-reference (related distractors, at most half of what is
left), then a fixed pseudo-random sample (SHA-1 of seed and entry id) of the other entries of 40-400 words. The same
dictionary and arguments always give the same file. Written to OUT.partial, then renamed.

  scripts/foldoc_corpus.py --entries data/demo/foldoc_entries.txt --limit 150 --out stores/demo/foldoc.jsonl
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import sys

DICTD_DIR = "/usr/share/dictd"
# dictd's base64 digits; a number is written most significant digit first
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
B64_VALUE = {c: i for i, c in enumerate(B64)}
INSTALL_HINT = "run scripts/setup.sh (or: apt-get install dict-foldoc)"


class Error(Exception):
    pass


def b64_number(text, where):
    value = 0
    for c in text:
        if c not in B64_VALUE:
            raise Error(f"{where}: '{text}' is not a dictd base64 number")
        value = value * 64 + B64_VALUE[c]
    return value


def read_index(path):
    """Entries as {"headwords": [...], "offset", "length"} in index order; headwords sharing a definition are merged."""
    entries, by_span = [], {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            where = f"{path}:{line_no}"
            if len(parts) != 3:
                raise Error(f"{where}: expected 'headword<TAB>offset<TAB>length', got {len(parts)} fields")
            headword, offset, length = parts[0], b64_number(parts[1], where), b64_number(parts[2], where)
            span = (offset, length)
            if span in by_span:
                by_span[span]["headwords"].append(headword)
            else:
                by_span[span] = {"headwords": [headword], "offset": offset, "length": length}
                entries.append(by_span[span])
    return entries


def is_metadata(entry):
    return any(h.startswith("00-database") or h.startswith("00database") for h in entry["headwords"])


LINK_TARGET = re.compile(r"^(?P<text>.*?)\s*\((?P<url>(?:[a-z]+:|/|#|[^\s()]*\.html?\b)[^\s()]*)\)$", re.S)
CROSS_REF = re.compile(r"\{([^{}]*)\}")
DATE_ONLY = re.compile(r"^\(\d{4}-\d{2}-\d{2}\)$")


def clean_paragraph(paragraph):
    """One paragraph's text with cross-references made plain; '' for a paragraph of nothing but links or a date."""
    text = " ".join(paragraph.split())

    def plain(match):  # {name (http://...)} -> name; {term} -> term
        inner = " ".join(match.group(1).split())
        link = LINK_TARGET.match(inner)
        return link.group("text") if link else inner

    def drop_links(match):
        return "" if LINK_TARGET.match(" ".join(match.group(1).split())) else match.group(0)

    if not re.search(r"\w", CROSS_REF.sub(drop_links, text)):
        return ""  # a list of links ("{LinuxHQ (http://...)}. {slashdot (...)}.") says nothing without the addresses
    text = CROSS_REF.sub(plain, text).replace("{", "").replace("}", "")
    text = re.sub(r"\s+([.,;:])", r"\1", " ".join(text.split()))
    if DATE_ONLY.match(text) or not re.search(r"\w", text):
        return ""
    return text


def parse_entry(raw):
    """(heading lines, paragraphs) of one definition: heading lines run up to the first blank or indented line."""
    lines = raw.replace("\r", "").split("\n")
    headings = []
    while lines and lines[0].strip() and not lines[0][:1].isspace():
        headings.append(lines.pop(0).strip())
    paragraphs, current = [], []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current and "".join(current).count("{") <= "".join(current).count("}"):  # a {link} may span a blank
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return headings, [p for p in (clean_paragraph(p) for p in paragraphs) if p]


def title_of(headings, headwords):
    if not headings:
        return headwords[0]
    title, seen = headings[0], {headings[0].lower()}
    others = [h for h in headings[1:] if not (h.lower() in seen or seen.add(h.lower()))]
    return f"{title} ({', '.join(others)})" if others else title


def slug(text):
    text = text.lower().replace("+", "plus").replace("#", "sharp").replace("*", "star")
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "entry"


def read_headword_list(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = [(n, l.split("#", 1)[0].strip()) for n, l in enumerate(f, 1)]
    except FileNotFoundError:
        raise Error(f"entries file {path} not found")
    return [(n, l) for n, l in lines if l]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--out", required=True, help="corpus JSONL to write (through OUT.partial)")
    ap.add_argument("--entries", help="headwords to always include, one a line (# comments); a headword that "
                    "names several entries (actor, Actor) is matched by case")
    ap.add_argument("--limit", type=int, default=150, help="entries in all (default 150)")
    ap.add_argument("--min-words", type=int, default=40, help="shortest definition to add (default 40)")
    ap.add_argument("--max-words", type=int, default=400, help="longest definition to add (default 400)")
    ap.add_argument("--seed", default="kvfuse-demo", help="seed of the sample (default kvfuse-demo)")
    ap.add_argument("--dictd-dir", default=DICTD_DIR, help=f"where foldoc.index and foldoc.dict.dz are ({DICTD_DIR})")
    args = ap.parse_args()
    if args.limit < 1:
        raise Error("--limit must be at least 1")

    index_path = os.path.join(args.dictd_dir, "foldoc.index")
    dict_path = os.path.join(args.dictd_dir, "foldoc.dict.dz")
    for path in (index_path, dict_path):
        if not os.path.isfile(path):
            raise Error(f"FOLDOC dictionary file {path} not found; {INSTALL_HINT}")
    wanted = read_headword_list(args.entries) if args.entries else []
    if len(wanted) > args.limit:
        raise Error(f"--limit {args.limit} is smaller than the {len(wanted)} headwords of {args.entries}")

    entries = [e for e in read_index(index_path) if not is_metadata(e)]
    try:
        with gzip.open(dict_path) as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise Error(f"{dict_path}: cannot read ({e}); reinstall it: apt-get install --reinstall dict-foldoc")

    by_headword, by_heading, ids = {}, {}, set()
    for e in sorted(entries, key=lambda e: e["offset"]):
        if e["offset"] + e["length"] > len(data):
            raise Error(f"{index_path}: entry '{e['headwords'][0]}' lies past the end of {dict_path}")
        e["raw"] = data[e["offset"]:e["offset"] + e["length"]].decode("utf-8", "replace")
        e["headings"], e["body"] = parse_entry(e["raw"])
        e["title"] = title_of(e["headings"], e["headwords"])
        for h in e["headwords"]:
            by_headword.setdefault(h.lower(), []).append(e)
        for h in e["headings"]:
            by_heading.setdefault(h, []).append(e)
        base = "foldoc-" + slug(e["headings"][0] if e["headings"] else e["headwords"][0])
        e["id"], n = base, 2  # ids over the whole dictionary: the same entry keeps its id whatever is chosen
        while e["id"] in ids:
            e["id"], n = f"{base}-{n}", n + 1
        ids.add(e["id"])
        e["text"] = "\n\n".join(e["body"])
        e["words"] = len(e["text"].split())

    chosen, chosen_ids = [], set()

    def take(e):
        if e["id"] not in chosen_ids and len(chosen) < args.limit:
            chosen_ids.add(e["id"])
            chosen.append(e)

    problems = []
    for n, h in wanted:
        found = by_heading.get(h) or by_headword.get(h.lower(), [])
        where = f"{args.entries}:{n}"
        if not found:
            problems.append(f"{where}: '{h}' is not a FOLDOC headword")
        elif len(found) > 1:
            problems.append(f"{where}: '{h}' names {len(found)} entries; write one of: "
                            + ", ".join(f"'{e['headings'][0]}'" for e in found if e["headings"]))
        elif not found[0]["text"]:
            problems.append(f"{where}: '{h}' has an empty definition")
        else:
            take(found[0])
    if problems:
        raise Error("\n  ".join(["bad entries list:"] + problems))
    n_required = len(chosen)

    def fits(e):
        return args.min_words <= e["words"] <= args.max_words

    # Related distractors: what the required entries cross-reference, in order, up to half the free slots.
    related_cap = len(chosen) + (args.limit - len(chosen)) // 2
    for e in list(chosen):
        for ref in CROSS_REF.findall(e["raw"]):
            for target in by_headword.get(" ".join(ref.split()).lower(), [])[:1]:
                if len(chosen) < related_cap and fits(target):
                    take(target)
    n_related = len(chosen) - n_required
    # The rest: a fixed pseudo-random order of everything else (SHA-1 of seed and id).
    for e in sorted(entries, key=lambda e: hashlib.sha1(f"{args.seed}\0{e['id']}".encode()).digest()):
        if len(chosen) >= args.limit:
            break
        if fits(e):
            take(e)

    chosen.sort(key=lambda e: e["offset"])  # dictionary order
    records = [{"id": e["id"], "title": e["title"], "text": e["text"]} for e in chosen]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    partial = args.out + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(partial, args.out)
    words = sum(e["words"] for e in chosen)
    print(f"foldoc_corpus: {len(records)} entries ({n_required} from {args.entries or 'no entries file'}, "
          f"{n_related} cross-referenced by them, {len(records) - n_required - n_related} sampled), "
          f"{words} words -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except Error as e:
        print(f"foldoc_corpus: error: {e}", file=sys.stderr)
        sys.exit(1)
