#!/usr/bin/env python3
"""The table in tests/README.md mapping each lib/**/*.cpp file to the C++ tests that exercise it.

A lib file's header is lib/DIR/NAME.h beside lib/DIR/NAME.cpp; a .cpp without one (kernels, backend parts)
takes the headers of its own folder that it includes. A test file exercises the lib file when it includes one
of those headers, directly or through the tests/support (or tests/fuzz helper) files it includes, which count
with their .cpp, or when it is named after it (cpu_backend_test for cpu_backend.cpp). Only #include lines are read: what a test reaches through other lib files is not listed, and
the CLI, serve and script tests (tests/cli, tests/serve) run the tools as a whole.

  scripts/test_map.py          rewrites the table between the markers in tests/README.md
  scripts/test_map.py --check  exits 1 (naming the README) when the table is not what the tree gives
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "tests" / "README.md"
BEGIN, END = "<!-- test-map:begin -->", "<!-- test-map:end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAX_NAMES = 12
KINDS = [("unit", "tests/unit/*.cpp"), ("model", "tests/model/*.cpp"), ("fuzz", "tests/fuzz/*_fuzz.cpp")]


def includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def helper_file(name, where):
    """The test helper a quoted include names (support/x.h, or a fuzz helper beside the including file)."""
    for candidate in (ROOT / "tests" / name, where.parent / name):
        if candidate.is_file():
            return candidate
    return None


def lib_headers(test):
    """The lib headers a test file includes, itself or through the helpers it includes (transitively)."""
    seen, todo, headers = set(), [test], set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for name in includes(f):
            if (ROOT / "lib" / name).is_file():
                headers.add(name)
                continue
            helper = helper_file(name, f)
            if helper:
                todo.append(helper)
                if helper.suffix == ".h" and helper.with_suffix(".cpp").is_file():
                    todo.append(helper.with_suffix(".cpp"))
    return headers


def own_headers(cpp):
    rel = cpp.relative_to(ROOT / "lib")
    header = rel.with_suffix(".h")
    if (ROOT / "lib" / header).is_file():
        return {header.as_posix()}
    folder = rel.parent.as_posix() + "/"
    return {h for h in includes(cpp) if h.startswith(folder) and (ROOT / "lib" / h).is_file()}


def table():
    tests = {kind: {} for kind, _ in KINDS}
    for kind, pattern in KINDS:
        for f in sorted(ROOT.glob(pattern)):
            tests[kind][f.stem] = lib_headers(f)
    rows = ["| lib file | unit tests (tests/unit) | model tests (tests/model) | fuzz targets (tests/fuzz) |",
            "|---|---|---|---|"]
    untested = 0
    for cpp in sorted((ROOT / "lib").rglob("*.cpp")):
        mine = own_headers(cpp)
        cells = []
        for kind, _ in KINDS:
            names = [name for name, headers in tests[kind].items()
                     if headers & mine or name == cpp.stem + "_test"]
            if len(names) > MAX_NAMES:  # error.h and the like: a count says as much as forty names
                names = names[:MAX_NAMES] + [f"and {len(names) - MAX_NAMES} more"]
            cells.append(", ".join(names))
        untested += not any(cells)
        rows.append(f"| {cpp.relative_to(ROOT).as_posix()} | " + " | ".join(cells or [""]) + " |")
    rows.append("")
    rows.append(f"{untested} lib files have no test that includes their header; they are reached through the files "
                "that use them (and the CLI tests).")
    return "\n".join(rows) + "\n"


def main():
    text = README.read_text()
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        sys.exit(f"{README}: no {BEGIN} ... {END} markers")
    new = text[: begin + len(BEGIN)] + "\n" + table() + text[end:]
    if "--check" in sys.argv[1:]:
        if new != text:
            sys.exit(f"{README}: the test map is stale; run scripts/test_map.py")
        return
    README.write_text(new)


if __name__ == "__main__":
    main()
