#!/usr/bin/env python3
"""One-way dependencies between the lib/ folders: every `#include "folder/..."` in lib/ (and kernels/, which
belongs to backend) must name the including folder itself or a folder its layer may reach. Prints one line per
offending include and exits 1; otherwise prints a one-line summary and exits 0.

  scripts/check_layers.py                 # the repository this script is in
  scripts/check_layers.py --root DIR      # a copy (DIR/lib, DIR/kernels)
"""
import argparse
import os
import re
import sys

# The layer table. It mirrors the README's Layout section and DESIGN.md §1 ("Dependencies point one way"):
# each folder may include itself, the folders listed and, transitively, everything those may include.
# A new lib/ folder goes here and into DESIGN.md §1, or this check fails.
LAYERS = {
    "core": [],
    "io": ["core"],
    "text": ["core"],
    "backend": ["core"],
    "cluster": ["core"],
    "model": ["backend", "text", "io"],
    "store": ["backend", "io"],  # not model, not text: a store knows shapes and fingerprints, not models
    "retrieval": ["backend", "io"],
    "prep": ["model", "store", "retrieval", "cluster"],
    "compress": ["prep"],
    "fusion": ["prep"],
    "pipeline": ["compress", "prep"],
    "eval": ["pipeline", "fusion"],
    "serve": ["fusion"],  # kvrun serve: HTTP over the query engine
}
# Headers a folder may not include even where its layer reaches their folder ("io/" = any header of io).
FORBIDDEN = {
    "store": (["io/gguf.h", "io/gguf_writer.h"], "store knows no GGUF code"),
    "text": (["io/"], "text builds tokenizers from plain structs that io reads"),
}
# Folders outside lib/ that are checked as part of a layer.
EXTRA_DIRS = {"kernels": "backend"}
SOURCE_EXTS = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def closure(layers):
    """Each folder's reachable set: itself, its direct dependencies and theirs."""
    reach = {}

    def visit(name, stack):
        if name in reach:
            return reach[name]
        if name in stack:
            sys.exit("check_layers: the layer table has a cycle: " + " -> ".join(stack + [name]))
        out = {name}
        for dep in layers[name]:
            if dep not in layers:
                sys.exit(f"check_layers: the layer table names '{dep}' (under '{name}') but has no row for it")
            out |= visit(dep, stack + [name])
        reach[name] = out
        return out

    for name in layers:
        visit(name, [])
    return reach


def sources(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_EXTS):
                yield os.path.join(dirpath, name)


def included_folder(root, path, target, lib_folders):
    """The lib folder an include names, or None when it names none (a same-folder or kernels/ header)."""
    if target.startswith("./") or target.startswith("../"):
        resolved = os.path.relpath(os.path.normpath(os.path.join(os.path.dirname(path), target)), root)
        parts = resolved.split(os.sep)
        return parts[1] if len(parts) > 2 and parts[0] == "lib" else None
    first = target.split("/", 1)[0]
    if "/" in target and (first in LAYERS or first in lib_folders):
        return first
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="repository root holding lib/ (default: the parent of scripts/)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    lib = os.path.join(root, "lib")
    if not os.path.isdir(lib):
        sys.exit(f"check_layers: {lib}: no lib/ folder")
    reach = closure(LAYERS)

    errors = []
    lib_folders = sorted(d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d)))
    for folder in lib_folders:
        if folder not in LAYERS:
            errors.append(f"lib/{folder}: folder '{folder}' is not in the layer table; add it with the folders it "
                          f"may include to LAYERS in scripts/check_layers.py and to DESIGN.md §1 (Layout)")
    tops = [(os.path.join(lib, f), f) for f in lib_folders]
    tops += [(os.path.join(root, d), layer) for d, layer in EXTRA_DIRS.items() if os.path.isdir(os.path.join(root, d))]
    for path in sorted(os.path.join(lib, f) for f in os.listdir(lib)):
        if os.path.isfile(path) and path.endswith(SOURCE_EXTS):
            errors.append(f"{os.path.relpath(path, root)}: source file outside a layer folder; move it into one")

    n_files = n_lines = 0
    for top, layer in tops:
        for path in sources(top):
            n_files += 1
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    n_lines += 1
                    target = m.group(1)
                    dep = included_folder(root, path, target, lib_folders)
                    if dep is None or layer not in LAYERS:
                        continue  # an unknown including folder is reported once, above
                    allowed = ", ".join(sorted(reach[layer] - {layer})) or "nothing"
                    if dep not in LAYERS:
                        errors.append(f"{rel}:{lineno}: {layer} may not include {target} ('{dep}' is not in the "
                                      f"layer table; allowed: {allowed})")
                    banned, why = FORBIDDEN.get(layer, ([], ""))
                    forbidden = any(target == b or (b.endswith("/") and target.startswith(b)) for b in banned)
                    if dep not in reach[layer]:
                        how = "points up" if layer in reach[dep] else "is not an allowed dependency"
                        why = f": {why}" if forbidden else ""
                        errors.append(f"{rel}:{lineno}: {layer} may not include {target} ({layer} -> {dep} {how}{why}; "
                                      f"allowed: {allowed})")
                    elif forbidden:
                        errors.append(f"{rel}:{lineno}: {layer} may not include {target} ({why}; "
                                      f"forbidden: {', '.join(banned)})")

    if errors:
        for e in errors:
            print(e)
        print(f"check_layers: {len(errors)} violation(s); the rule table is at the top of scripts/check_layers.py",
              file=sys.stderr)
        return 1
    extra = "".join(f" + {d}/ as {layer}" for d, layer in EXTRA_DIRS.items() if os.path.isdir(os.path.join(root, d)))
    print(f"check_layers: ok: {len(lib_folders)} lib folders{extra}, {n_lines} include lines in {n_files} files, "
          f"every dependency points one way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
