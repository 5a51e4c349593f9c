#!/usr/bin/env python3
"""Build the small demo corpus shipped in ``examples/data/``.

Selection (deterministic for a given set of installed packages):

1. every ``/usr/share/doc/<package>/copyright`` in sorted path order;
2. skip a path whose real path (after symlinks) was already taken, so a
   package whose doc directory is a symlink to another's is not counted twice;
3. keep files of at most ``--max-bytes`` bytes (default 16000).  This drops
   the few huge multi-component copyright files and keeps the many short
   ones, which is where Debian's boilerplate lives: packages built from the
   same source ship byte-identical files, and packages under the GPL,
   Apache-2.0 or Expat licence differ from each other only in their names,
   years and upstream URLs.  The result has natural exact duplicates and a
   range of near duplicates.

Each record is ``{"id": <package name>, "text": <file contents>}``; the file
is gzip-compressed with a zero timestamp, so the same input gives the same
bytes.

Usage::

    python benchmarks/build_demo_corpus.py [--out PATH] [--max-bytes N]
"""

from __future__ import annotations

import argparse
import glob
import gzip
import io
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "examples", "data", "debian_copyright.jsonl.gz")


def select(max_bytes: int) -> list[dict]:
    seen: set[str] = set()
    records = []
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        if not os.path.isfile(path):
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        with open(path, "rb") as fh:
            data = fh.read()
        if not data.strip() or len(data) > max_bytes:
            continue
        package = os.path.basename(os.path.dirname(path))
        records.append({"id": package, "text": data.decode("utf-8", errors="replace")})
    return records


def write(records: list[dict], out: str) -> int:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    buf = io.BytesIO()
    # mtime=0 and no file name in the header: reproducible output bytes.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        for rec in records:
            gz.write(json.dumps(rec, ensure_ascii=False).encode("utf-8"))
            gz.write(b"\n")
    with open(out, "wb") as fh:
        fh.write(buf.getvalue())
    return len(buf.getvalue())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--max-bytes", type=int, default=16000,
                    help="largest copyright file kept, in bytes")
    args = ap.parse_args(argv)
    records = select(args.max_bytes)
    size = write(records, args.out)
    raw = sum(len(r["text"].encode("utf-8")) for r in records)
    print(f"{len(records)} documents, {raw / 1e6:.2f} MB of text, "
          f"{size / 1e6:.2f} MB gzipped -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
