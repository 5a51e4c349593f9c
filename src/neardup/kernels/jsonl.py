"""Passes over blocks of lines: where to cut a file into blocks of whole lines (:func:`line_cuts`),
and whether a block of JSON lines can go to a compiled parser whole (:func:`scan_lines`).

Arrow's JSON reader (RapidJSON) parses a block of lines into columns at 380 MB/s, but it does not
check UTF-8 and it does not refuse what Python's ``json`` refuses: two objects on one line, an
object over two lines, nesting deeper than Python's recursion limit, integers of more digits than
Python converts. :func:`scan_lines` finds, in one pass, whether the block is one
that both parsers read the same way (:func:`neardup.io.formats.jsonl.parse_jsonl_block`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .swar import HIGH, LOW7, ONES, load_u64

NEWLINE = np.uint64(0x0A) * ONES
QUOTE = np.uint64(0x22) * ONES
BACKSLASH = np.uint64(0x5C) * ONES


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
def scan_lines(buf, head, max_depth, max_digits):
    """``buf`` a block of whole lines (the last may lack its ``\\n``), its first line starting at
    byte ``head`` (3 after a byte-order mark). Returns ``(lines, status)``: ``status`` 0 when every
    byte is well-formed UTF-8 and every line holds exactly one object — led by ``{``, closed on its
    own line, followed by white space only — nested less than ``max_depth`` deep and with no run of
    ``max_digits`` digits or more outside strings (0: no limit); 1 at the first ill-formed UTF-8
    sequence; 2 at the first line that breaks the rest (blank, led by anything else, an object that
    goes on past its line or is followed by another, deep nesting, a long integer). It follows
    strings (quotes and backslash escapes) so that brackets inside them do not count; inside a
    string, ASCII is skipped eight bytes at a time when a word holds no quote, backslash or newline."""
    end = buf.shape[0]
    lines = 0
    if head >= end or buf[head] != 0x7B:
        return 0, 2
    in_str = False
    closed = False
    depth = 0
    digits = 0
    i = head
    while i < end:
        if in_str:
            if i + 8 <= end:
                x = load_u64(buf, i)
                if (x & HIGH) == 0 and (_zero_bytes(x ^ QUOTE) | _zero_bytes(x ^ BACKSLASH)
                                        | _zero_bytes(x ^ NEWLINE)) == 0:
                    i += 8
                    continue
            b = buf[i]
            if b == 0x22:
                in_str = False
            elif b == 0x5C:
                if i + 1 < end and buf[i + 1] < 0x80 and buf[i + 1] != 0x0A:
                    i += 1                # the escaped character (a non-ASCII one is checked as UTF-8)
            elif b == 0x0A:
                return lines, 2           # a line break inside a string
            elif b >= 0x80:
                ln = _utf8_length(buf, i, end)
                if ln == 0:
                    return lines, 1
                i += ln
                continue
            i += 1
            continue
        b = buf[i]
        if b >= 0x80:
            ln = _utf8_length(buf, i, end)
            if ln == 0:
                return lines, 1
            if closed:
                return lines, 2
            digits = 0
            i += ln
            continue
        if b == 0x0A:
            if not closed:
                return lines, 2           # the object goes on past its line
            lines += 1
            closed = False
            if i + 1 < end and buf[i + 1] != 0x7B:
                return lines, 2
            i += 1
            continue
        if closed:
            if b != 0x20 and b != 0x09 and b != 0x0D:
                return lines, 2           # something after the line's object
            i += 1
            continue
        if b >= 0x30 and b <= 0x39:
            digits += 1
            if max_digits > 0 and digits >= max_digits:
                return lines, 2
        else:
            digits = 0
            if b == 0x22:
                in_str = True
            elif b == 0x7B or b == 0x5B:
                depth += 1
                if depth >= max_depth:
                    return lines, 2
            elif b == 0x7D or b == 0x5D:
                depth -= 1
                if depth <= 0:
                    if depth < 0:
                        return lines, 2
                    closed = True
        i += 1
    if buf[end - 1] != 0x0A:              # the last line, without its newline
        if not closed:
            return lines, 2
        lines += 1
    return lines, 0


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


@njit(cache=True, nogil=True)
def line_spans(buf, end, wanted):
    """The byte range [start, stop) of each line numbered ``wanted`` (sorted, distinct, counted from
    0) in ``buf[:end]``, its newline included; a last line without one ends at ``end``. Rows of
    −1 for numbers past the last line. One pass, eight bytes at a time between newlines."""
    n = wanted.shape[0]
    out = np.full((n, 2), -1, dtype=np.int64)
    k = 0
    line = 0
    start = 0
    i = 0
    while k < n and i < end:
        if i + 8 <= end and _zero_bytes(load_u64(buf, i) ^ NEWLINE) == 0:
            i += 8
            continue
        if buf[i] == 0x0A:
            if line == wanted[k]:
                out[k, 0] = start
                out[k, 1] = i + 1
                k += 1
            line += 1
            start = i + 1
        i += 1
    if k < n and start < end and line == wanted[k]:
        out[k, 0] = start
        out[k, 1] = end
    return out


@njit(cache=True, nogil=True)
def gather_spans(buf, spans):
    """The byte ranges ``spans`` (rows of [start, stop)) of ``buf``, one after another."""
    total = 0
    for k in range(spans.shape[0]):
        total += spans[k, 1] - spans[k, 0]
    out = np.empty(total, dtype=np.uint8)
    at = 0
    for k in range(spans.shape[0]):
        s = spans[k, 0]
        e = spans[k, 1]
        out[at:at + e - s] = buf[s:e]
        at += e - s
    return out
