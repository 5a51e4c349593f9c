#!/usr/bin/env python3
"""Build the real benchmark corpus from documents installed on this machine.

Sources (one JSONL record per document, written in sorted path order):

* ``/usr/share/common-licenses/*``      -> source "license"
* ``/usr/share/doc/*/copyright``         -> source "copyright"
* ``/usr/share/man/man*/*.gz``           -> source "man" (roff stripped to text)

Paths that resolve (via symlinks) to a file already emitted are skipped, so
the corpus holds each file once; distinct files with identical content are
kept -- they are the natural exact duplicates a dedup benchmark wants.

Each record is ``{"id": <path>, "text": <text>, "source": <source>}``.
The default output is ``benchmarks/data/corpus.jsonl`` (gitignored).

Usage::

    python benchmarks/build_corpus.py [--out PATH] [--max-mb N]

The man-page stripper below is deliberately simple and fast: it is a
regex-based approximation of what ``man`` renders, good enough to get the
prose and option text out of roff without spawning groff per page.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "data", "corpus.jsonl")

# --------------------------------------------------------------------------
# roff -> plain text
# --------------------------------------------------------------------------

# Macros whose arguments are visible text (man(7), a few mdoc(7) ones, and
# the alternating-font macros).  Every other request/macro line is dropped.
_TEXT_MACROS = frozenset(
    """
    SH SS B I BI BR IB IR RB RI SM SB IP TQ OP SY UR MT
    Nm Nd Ar Fl Op Xr Sh Ss It Pa Dv Er Ev Va Fn Fa Ft Cm Ic Em Sy Dq Sq Ql
    Li Ms No Ns Pq Qq Aq Bq Brq Tn Lk Mt St At Bx Ux
    """.split()
)
_MDOC_CALLABLE = _TEXT_MACROS | frozenset(
    "Oo Oc Op Ns No Pf Po Pc Qo Qc Bo Bc Do Dc So Sc Eo Ec Ek".split())
# Blocks whose body is not text: macro definitions and ignore blocks end at "..".
_BLOCK_START = re.compile(r"^[.'][ \t]*(de|de1|am|ig|am1|dei)\b")

# Named special characters we keep as something readable; others become "".
_SPECIAL = {
    "em": "-", "en": "-", "hy": "-", "mi": "-", "aq": "'", "dq": '"',
    "cq": "'", "oq": "'", "lq": '"', "rq": '"', "bu": "*", "co": "(C)",
    "rg": "(R)", "tm": "(TM)", "bv": "|", "ba": "|", "or": "|", "ti": "~",
    "ha": "^", "sl": "/", "rs": "\\", "lh": "", "rh": "", "de": " degrees",
    "mu": "x", "di": "/", "pl": "+", "eq": "=", "<=": "<=", ">=": ">=",
    "->": "->", "<-": "<-", "ua": "^", "da": "v", "fm": "'", "sq": "*",
    "at": "@", "sh": "#", "Do": "$", "ga": "`", "aa": "'", "es": "0",
}

_ESCAPE = re.compile(
    r"""\\(?:
        \*(?:\[(?P<s1>[^\]\n]*)\]|\((?P<s2>..)|(?P<s3>.))  # string: \*(Aq \*[x] \*R
      | [fFgkmMnVY$](?:\[[^\]\n]*\]|\(..|.)       # font/colour/register: \fB \f(CW
      | \((?P<two>..)                             # two-char special: \(em
      | \[(?P<br>[^\]\n]*)\]                       # bracket special:  \[em] \[u00E9]
      | s[-+]?(?:\d\d?|\(\d\d|\[\d+\])             # size changes \s-2 \s+2 \s0
      | [hvwlLDoXxzbAHNRSZ]'[^'\n]*'              # motion/drawing with quoted arg
      | [&|^%:,/)dcupatrkqe\-\ 0{}~!E"'`.\\]      # one-char escapes
    )""",
    re.X,
)


# Predefined strings (man(7), pod2man and DocBook preambles) worth keeping.
_STRINGS = {"Aq": "'", "C`": "'", "C'": "'", "L\"": '"', "R\"": '"',
            "lq": '"', "rq": '"', "R": "(R)", "Tm": "(TM)", "PI": "pi"}


def _escape_sub(m: re.Match) -> str:
    s = m.group(0)
    if s[1] == "*":
        name = m.group("s1") or m.group("s2") or m.group("s3")
        return _STRINGS.get(name, "")
    two = m.group("two")
    if two is not None:
        return _SPECIAL.get(two, "")
    br = m.group("br")
    if br is not None:
        if br.startswith("u") and len(br) >= 5:
            try:
                return chr(int(br[1:5], 16))
            except ValueError:
                return ""
        return _SPECIAL.get(br, "")
    c = s[1]
    if c == "-":
        return "-"
    if c in " 0~":
        return " "
    if c in "e\\":
        return "\\"
    if c in "'`.":
        return c
    return ""


_COMMENT = re.compile(r'\\".*$')
_MACRO = re.compile(r"^[.'][ \t]*([A-Za-z0-9_]+)[ \t]*(.*)$")
_QUOTED_ARGS = re.compile(r'"([^"]*)"?|(\S+)')
_BLANKS = re.compile(r"\n{3,}")


def strip_roff(src: str) -> str:
    """Turn roff source into plain text (approximate, fast)."""
    out: list[str] = []
    in_block = False
    for line in src.split("\n"):
        if in_block:
            if line.startswith(".."):
                in_block = False
            continue
        if line.startswith(('.\\"', "'\\\"", ".\\#")):
            continue  # comment line
        if line[:1] in (".", "'"):
            if _BLOCK_START.match(line):
                in_block = True
                continue
            m = _MACRO.match(line)
            if m is None or m.group(1) not in _TEXT_MACROS:
                continue  # layout request or unknown macro: drop
            args = _COMMENT.sub("", m.group(2))
            words = [a or b for a, b in _QUOTED_ARGS.findall(args)]
            if m.group(1)[1:].islower():  # mdoc: drop nested macro names
                words = [w for w in words if w not in _MDOC_CALLABLE]
            line = " ".join(words)
        elif "\\\"" in line:
            line = _COMMENT.sub("", line)
        if "\\" in line:
            line = _ESCAPE.sub(_escape_sub, line)
        out.append(line.rstrip())
    return _BLANKS.sub("\n\n", "\n".join(out)).strip()


# --------------------------------------------------------------------------
# corpus
# --------------------------------------------------------------------------

def _read_text(path: str) -> str:
    with open(path, "rb") as fh:
        data = fh.read()
    return data.decode("utf-8", errors="replace")


def _read_man(path: str) -> str:
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    return strip_roff(data.decode("utf-8", errors="replace"))


def iter_sources():
    """Yield (path, source, reader) in deterministic sorted-path order."""
    items = []
    for p in glob.glob("/usr/share/common-licenses/*"):
        items.append((p, "license", _read_text))
    for p in glob.glob("/usr/share/doc/*/copyright"):
        items.append((p, "copyright", _read_text))
    for p in glob.glob("/usr/share/man/man*/*.gz"):
        items.append((p, "man", _read_man))
    items.sort(key=lambda t: t[0])
    return items


def build(out: str, max_mb: float | None) -> tuple[int, int]:
    os.makedirs(os.path.dirname(os.path.abspath(out)) or ".", exist_ok=True)
    limit = None if max_mb is None else int(max_mb * 1e6)
    seen: set[str] = set()
    n_docs = 0
    n_text = 0
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for path, source, reader in iter_sources():
            if not os.path.isfile(path):
                continue
            real = os.path.realpath(path)
            if real in seen:
                continue  # symlinked alias of a file already written
            seen.add(real)
            try:
                text = reader(path)
            except (OSError, EOFError) as exc:  # unreadable / corrupt gzip
                print(f"skip {path}: {exc}", file=sys.stderr)
                continue
            if not text.strip():
                continue  # e.g. ".so" redirect stubs strip to nothing
            nbytes = len(text.encode("utf-8"))
            if limit is not None and n_text + nbytes > limit:
                break
            fh.write(json.dumps({"id": path, "text": text, "source": source},
                                ensure_ascii=False))
            fh.write("\n")
            n_docs += 1
            n_text += nbytes
    os.replace(tmp, out)
    return n_docs, n_text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output JSONL path")
    ap.add_argument("--max-mb", type=float, default=None,
                    help="stop once this many MB (1e6 bytes) of UTF-8 text are written")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    n_docs, n_text = build(args.out, args.max_mb)
    size = os.path.getsize(args.out)
    print(f"{n_docs} documents, {n_text / 1e6:.1f} MB of text, "
          f"{size / 1e6:.1f} MB JSONL -> {args.out} ({time.perf_counter() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
