#!/usr/bin/env python3
"""Puts the benchmark data sets that the pipelines and docs name into one folder, each checked against the sha256
that data/datasets.json records for it.

  scripts/get_data.py --from ../shared/data            # copy every set from a local copy into the default folder
  scripts/get_data.py --from DIR --into OUT --only hotpotqa_dev500_ircot.jsonl corpus_hotpotqa.jsonl
  scripts/get_data.py --check                           # verify the default folder, write nothing
  scripts/get_data.py --write-manifest --from DIR       # regenerate data/datasets.json from a local copy

The folder (--into) defaults to $KVFUSE_DATA, else $KVFUSE_HOME/data (~/.cache/kvfuse/data), the folders
`kvrun eval` looks bare data set names up in. Each file is copied to a temporary name beside its target, its
sha256 computed on the way, and renamed only when the hash matches: a killed run never leaves a half file under a
data set's name. A file already there with the right hash is left alone ("up to date").

Without --from, a set is built from its public sources only where a builder for it exists. None of the current sets
is a plain download (each is a selection of its source's records rewritten into the project's format), so each
needs --from DIR, a local copy; the message names the set and its sources (repository, commit, path).

Exit status: 0 when every requested set is in place and verified, 1 otherwise (each failure named on stderr).
"""
import argparse
import fcntl
import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MANIFEST = REPO / "data" / "datasets.json"
DATA_SUFFIXES = (".jsonl", ".jsonl.gz")
CHUNK = 1 << 20


def default_into():
    env = os.environ.get("KVFUSE_DATA")
    if env:
        return Path(env)
    home = os.environ.get("KVFUSE_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "kvfuse")
    return Path(home) / "data"


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def human(n):
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0


def github_url(src):
    return f"https://github.com/{src['repo']}/blob/{src['commit']}/{src['path']}"


def describe_sources(entry):
    srcs = entry.get("sources") or []
    if not srcs:
        return "no recorded source"
    return "; ".join(f"{s['repo']}@{s['commit']}:{s['path']} ({github_url(s)})" for s in srcs)


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------------------------------------- manifest

def load_manifest(path):
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except OSError as e:
        raise Failure(f"{path}: cannot read the manifest ({e.strerror})")
    except json.JSONDecodeError as e:
        raise Failure(f"{path}: not JSON ({e})")
    sets = m.get("datasets") if isinstance(m, dict) else None
    if not isinstance(sets, list):
        raise Failure(f"{path}: no 'datasets' list")
    seen = set()
    for i, e in enumerate(sets):
        name = e.get("file") if isinstance(e, dict) else None
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise Failure(f"{path}: datasets[{i}] has no plain file name")
        sha = e.get("sha256")
        if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise Failure(f"{path}: {name}: sha256 is not 64 lower-case hex digits")
        if name in seen:
            raise Failure(f"{path}: {name} is listed twice")
        seen.add(name)
    return sets


def parse_source(text):
    """'owner/repo@commit:path' into its parts, or None."""
    if not isinstance(text, str) or "@" not in text or ":" not in text:
        return None
    repo, rest = text.split("@", 1)
    commit, path = rest.split(":", 1)
    if repo.count("/") != 1 or not commit or not path:
        return None
    return {"repo": repo, "commit": commit, "path": path}


def read_records(path):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise Failure(f"{path}:{n}: not JSON ({e})")


def describe_file(path):
    """The computed part of a manifest entry: hash, size, records, kind, sources, and the ids of corpus passages
    the questions point to (to tie corpora to their question files)."""
    records, sources, ctx_ids, ids = 0, {}, set(), set()
    questions = False
    for r in read_records(path):
        records += 1
        if "question" in r:
            questions = True
        ids.add(r.get("id"))
        for c in r.get("ctx_ids") or []:
            ctx_ids.add(c)
        srcs = r.get("source")
        for s in srcs if isinstance(srcs, list) else [srcs]:
            if s is not None and s not in sources:
                parsed = parse_source(s)
                if parsed is None:
                    raise Failure(f"{path}: record {records}: source {s!r} is not owner/repo@commit:path")
                sources[s] = parsed
    entry = {
        "file": path.name,
        "sha256": sha256_of(path),
        "bytes": path.stat().st_size,
        "records": records,
        "kind": "questions" if questions else "corpus",
        "sources": list(sources.values()),
    }
    return entry, ctx_ids, ids


def write_manifest(source_dir, manifest_path):
    """Regenerates the manifest from every data file in source_dir. Licences and notes are kept from the existing
    manifest (they are written by hand); a new file gets a placeholder licence and a warning."""
    old = {}
    if manifest_path.exists():
        old = {e["file"]: e for e in load_manifest(manifest_path)}
    files = sorted(p for p in source_dir.iterdir() if p.is_file() and p.name.endswith(DATA_SUFFIXES))
    if not files:
        raise Failure(f"{source_dir}: no .jsonl or .jsonl.gz files")
    described = {}
    for p in files:
        described[p.name] = describe_file(p)
        print(f"get_data: {p.name}: {described[p.name][0]['records']} records", flush=True)
    entries = []
    for name, (entry, _, _) in described.items():
        if entry["kind"] == "corpus":
            # A corpus's passages come from the question files whose ctx_ids point into it.
            _, _, corpus_ids = described[name]
            parents = [q for q, (e, ctx, _) in described.items()
                       if e["kind"] == "questions" and ctx and ctx <= corpus_ids]
            entry["passages_of"] = parents
            seen = []
            for q in parents:
                for s in described[q][0]["sources"]:
                    if s not in seen:
                        seen.append(s)
            entry["sources"] = seen
        prev = old.get(name, {})
        entry["licence"] = prev.get("licence") or "UNKNOWN: write it here"
        if entry["licence"].startswith("UNKNOWN"):
            print(f"get_data: warning: {name}: no licence recorded; fill it in {manifest_path}", file=sys.stderr)
        if prev.get("note"):
            entry["note"] = prev["note"]
        entries.append(entry)
    doc = {
        "about": "Benchmark data sets kvfuse's pipelines and docs name. scripts/get_data.py puts them into "
                 "$KVFUSE_DATA (else $KVFUSE_HOME/data) and checks each against its sha256; "
                 "`scripts/get_data.py --write-manifest --from DIR` regenerates this file from a local copy, "
                 "keeping the licences and notes written here by hand. data/README.md describes it.",
        "datasets": entries,
    }
    tmp = manifest_path.with_name("." + manifest_path.name + ".part")
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, manifest_path)
    print(f"get_data: wrote {manifest_path} ({len(entries)} data sets)")


# ------------------------------------------------------------------------------------------------------ get / check

# Builders that make a set from its public sources without a local copy, by file name. None of the current sets
# is a plain download of its source (each is a selection of it in the project's format), so there are none yet;
# a builder takes (entry, target_tmp_path) and writes the file there; its hash is checked like a copy's.
BUILDERS = {}


def copy_verified(src, entry, into):
    """Copies src to into/NAME through a temporary name, hashing on the way; renames only on a match."""
    name, want = entry["file"], entry["sha256"]
    target = into / name
    tmp = into / f".{name}.part"
    h = hashlib.sha256()
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            for block in iter(lambda: fin.read(CHUNK), b""):
                h.update(block)
                fout.write(block)
            fout.flush()
            os.fsync(fout.fileno())
        got = h.hexdigest()
        if got != want:
            raise Failure(f"{name}: sha256 mismatch in {src}: expected {want}, got {got}; nothing written")
        os.replace(tmp, target)
    except OSError as e:
        raise Failure(f"{name}: cannot copy {src} to {target}: {e.strerror or e}")
    finally:
        if tmp.exists():
            tmp.unlink()


def get_one(entry, args, into):
    name, want = entry["file"], entry["sha256"]
    target = into / name
    if target.is_file() and sha256_of(target) == want:
        return "up to date"
    if args.from_dir is not None:
        src = args.from_dir / name
        if not src.is_file():
            raise Failure(f"{name}: not in {args.from_dir}")
        copy_verified(src, entry, into)
        return f"copied from {args.from_dir} ({human(entry.get('bytes', src.stat().st_size))}, sha256 verified)"
    if name in BUILDERS:
        tmp = into / f".{name}.part"
        try:
            BUILDERS[name](entry, tmp)
            got = sha256_of(tmp)
            if got != want:
                raise Failure(f"{name}: the build from its sources gave sha256 {got}, expected {want}; nothing written")
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        return "built from its sources (sha256 verified)"
    raise Failure(f"{name}: no builder makes this set from its sources (a selection of them in the project's "
                  f"format); it needs --from DIR, a local copy. Sources: {describe_sources(entry)}")


def check_one(entry, into):
    name, want = entry["file"], entry["sha256"]
    target = into / name
    if not target.is_file():
        raise Failure(f"{name}: missing from {into}")
    got = sha256_of(target)
    if got != want:
        raise Failure(f"{name}: sha256 mismatch in {into}: expected {want}, got {got}")
    return "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--from", dest="from_dir", type=Path, metavar="DIR",
                    help="a local copy of the data sets (e.g. ../shared/data) to copy from")
    ap.add_argument("--into", type=Path, metavar="DIR",
                    help="where the sets go (default: $KVFUSE_DATA, else $KVFUSE_HOME/data = ~/.cache/kvfuse/data)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these files of the manifest")
    ap.add_argument("--check", action="store_true", help="verify the sets in --into against the manifest; write nothing")
    ap.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST, metavar="PATH",
                    help=f"the manifest (default: {DEFAULT_MANIFEST.relative_to(REPO)})")
    ap.add_argument("--write-manifest", action="store_true",
                    help="regenerate the manifest from every .jsonl/.jsonl.gz in --from DIR and exit")
    ap.add_argument("--list", action="store_true", help="list the manifest's sets and their sources, and exit")
    args = ap.parse_args()

    try:
        if args.write_manifest:
            if args.from_dir is None or not args.from_dir.is_dir():
                raise Failure("--write-manifest needs --from DIR, a folder holding the data sets")
            write_manifest(args.from_dir, args.manifest)
            return 0
        sets = load_manifest(args.manifest)
        if args.only:
            known = {e["file"]: e for e in sets}
            unknown = [n for n in args.only if n not in known]
            if unknown:
                raise Failure(f"--only: not in {args.manifest}: {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(known))})")
            sets = [known[n] for n in dict.fromkeys(args.only)]
        if args.list:
            for e in sets:
                print(f"{e['file']}  {e.get('records', '?')} records  {e['sha256']}  licence: {e.get('licence', '?')}")
                print(f"    sources: {describe_sources(e)}")
            return 0
        if args.from_dir is not None and not args.from_dir.is_dir():
            raise Failure(f"--from {args.from_dir}: no such folder")
        into = args.into if args.into is not None else default_into()
    except Failure as e:
        print(f"get_data: error: {e}", file=sys.stderr)
        return 1

    if args.check:
        if not into.is_dir():
            print(f"get_data: error: {into}: no such folder", file=sys.stderr)
            return 1
        lock = None
    else:
        try:
            into.mkdir(parents=True, exist_ok=True)
            lock = open(into / ".get_data.lock", "w")
            fcntl.flock(lock, fcntl.LOCK_EX)  # two runs into one folder take turns
        except OSError as e:
            print(f"get_data: error: {into}: {e.strerror or e}", file=sys.stderr)
            return 1

    failures = 0
    for e in sets:
        try:
            status = check_one(e, into) if args.check else get_one(e, args, into)
            print(f"get_data: {e['file']}: {status}", flush=True)
        except Failure as err:
            failures += 1
            print(f"get_data: error: {err}", file=sys.stderr, flush=True)
    verb = "checked" if args.check else "in place"
    if failures:
        print(f"get_data: {failures} of {len(sets)} data sets failed ({into})", file=sys.stderr)
        return 1
    print(f"get_data: {len(sets)} data sets {verb} in {into}")
    if lock is not None:
        lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
