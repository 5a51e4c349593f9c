"""Passes over blocks of lines: where to cut a file into blocks of whole lines (:func:`line_cuts`),
and whether a block of JSON lines can go to a compiled parser whole (:func:`scan_lines`).

Arrow's JSON reader (RapidJSON) parses a block of lines into columns at 380 MB/s, but it does not
check UTF-8 and it does not refuse what Python's ``json`` refuses: two objects on one line, nesting
deeper than Python's recursion limit. :func:`scan_lines` finds, in one pass, whether the block is one
that both parsers read the same way (:func:`neardup.io.formats.jsonl.parse_jsonl_block`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .swar import HIGH, LOW7, ONES, load_u64

NEWLINE = np.uint64(0x0A) * ONES
BRACE = np.uint64(0x7B) * ONES
BRACKET = np.uint64(0x5B) * ONES


@njit(inline="always", cache=True)
def _zero_bytes(v):
    """High bit set exactly in the zero bytes of v (Hacker's Delight §6-1, exact form)."""
    return ~(((v & LOW7) + LOW7) | v | LOW7)


@njit(inline="always", cache=True)
def _utf8_length(buf, i, end):
    """Length of the well-formed UTF-8 sequence at ``buf[i]`` (a byte >= 0x80), 0 when it is not
    one: the table of Unicode §3.9 (Table 3-7), which is what Python's strict decoder accepts — no
    overlong forms, no surrogates, nothing above U+10FFFF."""
    b = buf[i]
    if b < 0xC2 or b > 0xF4:
        return 0
    if b < 0xE0:
        need, lo, hi = 1, 0x80, 0xBF
    elif b < 0xF0:
        need = 2
        lo = 0xA0 if b == 0xE0 else 0x80
        hi = 0x9F if b == 0xED else 0xBF
    else:
        need = 3
        lo = 0x90 if b == 0xF0 else 0x80
        hi = 0x8F if b == 0xF4 else 0xBF
    if i + need >= end:
        return 0
    c = buf[i + 1]
    if c < lo or c > hi:
        return 0
    for k in range(2, need + 1):
        c = buf[i + k]
        if c < 0x80 or c > 0xBF:
            return 0
    return need + 1


@njit(cache=True, nogil=True)
def scan_lines(buf, head, limit):
    """``buf`` a block of whole lines (the last may lack its ``\\n``), its first line starting at
    byte ``head`` (3 after a byte-order mark). Returns ``(lines, status, deep)``: ``status`` 0 when
    every byte is well-formed UTF-8 and every line starts with ``{``, 1 at the first ill-formed UTF-8
    sequence, 2 at the first line (blank, or led by white space or anything else) that does not;
    ``deep``: the lines (0-based) holding at least ``limit`` bytes ``{`` or ``[``, the only ones
    whose nesting can reach that depth. ASCII is skipped eight bytes at a time when a word holds no
    newline, brace or bracket."""
    end = buf.shape[0]
    deep = np.empty(end // max(limit, 1) + 1, dtype=np.int64)   # (room for all: an array grown in the loop
    n_deep = 0                                                  # slows the whole loop 20-fold)
    lines = 0
    count = 0
    if head >= end or buf[head] != 0x7B:
        return 0, 2, deep[:0]
    i = head
    while i < end:
        if i + 8 <= end:
            x = load_u64(buf, i)
            if (x & HIGH) == 0 and (_zero_bytes(x ^ NEWLINE) | _zero_bytes(x ^ BRACE)
                                    | _zero_bytes(x ^ BRACKET)) == 0:
                i += 8
                continue
        b = buf[i]
        if b < 0x80:
            if b == 0x0A:
                if count >= limit:
                    deep[n_deep] = lines
                    n_deep += 1
                lines += 1
                count = 0
                if i + 1 < end and buf[i + 1] != 0x7B:
                    return lines, 2, deep[:n_deep]
            elif b == 0x7B or b == 0x5B:
                count += 1
            i += 1
            continue
        ln = _utf8_length(buf, i, end)
        if ln == 0:
            return lines, 1, deep[:n_deep]
        i += ln
    if buf[end - 1] != 0x0A:            # the last line, without its newline
        if count >= limit:
            deep[n_deep] = lines
            n_deep += 1
        lines += 1
    return lines, 0, deep[:n_deep]


@njit(cache=True, nogil=True)
def line_cuts(buf, end, max_lines):
    """In ``buf[:end]``: the number of newlines, and the position after every ``max_lines``-th one
    (where a block of ``max_lines`` lines ends). Words without a newline are skipped eight bytes at
    a time."""
    cuts = np.empty(end // max_lines + 1, dtype=np.int64)     # (room for all, as in scan_lines)
    n_cuts = 0
    count = 0
    next_cut = max_lines
    i = 0
    while i < end:
        if i + 8 <= end and _zero_bytes(load_u64(buf, i) ^ NEWLINE) == 0:
            i += 8
            continue
        if buf[i] == 0x0A:
            count += 1
            if count == next_cut:
                cuts[n_cuts] = i + 1
                n_cuts += 1
                next_cut += max_lines
        i += 1
    return count, cuts[:n_cuts]
