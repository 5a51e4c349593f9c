"""Passes over blocks of lines: where to cut a file into blocks of whole lines (:func:`line_cuts`),
the text and id of every line of a block in one pass (:func:`extract_fields`), and whether a block
it leaves can go to Arrow's parser whole (:func:`scan_lines`).

Arrow's JSON reader (RapidJSON) parses a block of lines into columns at 380 MB/s, but it does not
check UTF-8 and it does not refuse what Python's ``json`` refuses: two objects on one line, an
object over two lines, nesting deeper than Python's recursion limit, integers of more digits than
Python converts. :func:`scan_lines` finds, in one pass, whether the block is one that both parsers
read the same way (:func:`neardup.io.formats.jsonl.parse_jsonl_block`). :func:`extract_fields`
makes the same checks while it parses each line by the JSON grammar and copies out only the two
values a run reads, at about 1.2 GB/s on English text (runs of plain ASCII eight bytes at a time),
so that most blocks need neither Arrow nor a second pass.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .swar import HIGH, LOW7, ONES, cttz64, load_u64

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


CONTROL = np.uint64(0x20) * ONES
_OBJECT, _ARRAY = 0, 1
_KEY_OR_END, _KEY, _VALUE_OR_END, _VALUE, _AFTER = 0, 1, 2, 3, 4


@njit(inline="always", cache=True)
def _special8(x):
    """The bytes of x that are a quote, a backslash or a control byte (< 0x20), as high bits: a byte
    below n = 0x20 sets the high bit of (x − n·1…1) & ~x & 0x80…80 (Warren, §6-1). A borrow may
    also flag a byte above a flagged one, never below: the lowest flag is always a true one."""
    return _zero_bytes(x ^ QUOTE) | _zero_bytes(x ^ BACKSLASH) | ((x - CONTROL) & ~x & HIGH)


@njit(inline="always", cache=True)
def _hex4(buf, i, end):
    """The value of the 4 hex digits at ``buf[i:i+4]``, −1 when they are not 4 hex digits."""
    if i + 4 > end:
        return -1
    v = 0
    for k in range(4):
        c = np.int64(buf[i + k])
        if 0x30 <= c <= 0x39:
            d = c - 0x30
        elif 0x41 <= c <= 0x46:
            d = c - 0x37
        elif 0x61 <= c <= 0x66:
            d = c - 0x57
        else:
            return -1
        v = v * 16 + d
    return v


@njit(inline="always", cache=True)
def _put_utf8(out, o, cp):
    """Code point ``cp`` (not a surrogate) written as UTF-8 at ``out[o]``; returns the end."""
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@njit(cache=True)
def _string(buf, i, end, out, o, copy):
    """A JSON string whose opening quote is just before ``buf[i]``: returns (the position after its
    closing quote, or −1 when it is not one Python's ``json`` reads as this kernel does; the end of
    its unescaped UTF-8 in ``out`` when ``copy``). Refused: ill-formed UTF-8 (:func:`_utf8_length`),
    a raw control byte (strict JSON), an unknown escape, and a lone surrogate escape (Python keeps
    it in a str that UTF-8 cannot hold). A pair of surrogate escapes is one code point, as in
    Python. Runs of plain ASCII go eight bytes at a time, copied as one slice."""
    while True:
        j = i                             # the next quote, backslash, control or non-ASCII byte
        while j + 8 <= end:
            x = load_u64(buf, j)
            m = _special8(x) | (x & HIGH)
            if m != 0:
                j += np.int64(cttz64(m)) >> 3
                break
            j += 8
        else:
            while j < end and buf[j] != 0x22 and buf[j] != 0x5C and 0x20 <= buf[j] < 0x80:
                j += 1
        if j > i:
            if copy:
                out[o:o + j - i] = buf[i:j]
                o += j - i
            i = j
        if i >= end:
            return -1, o
        b = buf[i]
        if b == 0x22:
            return i + 1, o
        if b < 0x20:
            return -1, o
        if b >= 0x80:                     # UTF-8 sequences (as many as follow), checked as scan_lines does
            j = i
            while j < end and buf[j] >= 0x80:
                ln = _utf8_length(buf, j, end)
                if ln == 0:
                    return -1, o
                j += ln
            if copy:
                out[o:o + j - i] = buf[i:j]
                o += j - i
            i = j
            continue
        if i + 1 >= end:                                # a backslash
            return -1, o
        e = buf[i + 1]
        if e == 0x75:                                   # \uXXXX
            cp = _hex4(buf, i + 2, end)
            if cp < 0 or 0xDC00 <= cp <= 0xDFFF:
                return -1, o
            i += 6
            if 0xD800 <= cp <= 0xDBFF:                  # a high surrogate: its low half must follow
                if i + 1 >= end or buf[i] != 0x5C or buf[i + 1] != 0x75:
                    return -1, o
                lo = _hex4(buf, i + 2, end)
                if lo < 0xDC00 or lo > 0xDFFF:
                    return -1, o
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
                i += 6
            if copy:
                o = _put_utf8(out, o, cp)
            continue
        if e == 0x22 or e == 0x5C or e == 0x2F:
            c = e
        elif e == 0x62:
            c = 0x08
        elif e == 0x66:
            c = 0x0C
        elif e == 0x6E:
            c = 0x0A
        elif e == 0x72:
            c = 0x0D
        elif e == 0x74:
            c = 0x09
        else:
            return -1, o
        if copy:
            out[o] = c
            o += 1
        i += 2


@njit(inline="always", cache=True)
def _number(buf, i, end, max_digits):
    """A JSON number at ``buf[i]`` (RFC 8259: ``-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?``):
    returns (the position after it, or −1 when it is not one or its integer part has ``max_digits``
    digits or more — Python refuses such an integer; 0: no limit —, whether it is an integer of at
    most 18 digits, its value then)."""
    neg = buf[i] == 0x2D
    if neg:
        i += 1
    if i >= end:
        return -1, False, 0
    c = buf[i]
    val = 0
    nd = 0
    if c == 0x30:
        i += 1
        nd = 1
    elif 0x31 <= c <= 0x39:
        while i < end and 0x30 <= buf[i] <= 0x39:
            if nd < 18:
                val = val * 10 + (np.int64(buf[i]) - 0x30)
            nd += 1
            i += 1
    else:
        return -1, False, 0
    if max_digits > 0 and nd >= max_digits:
        return -1, False, 0
    whole = nd <= 18
    if i < end and buf[i] == 0x2E:
        whole = False
        i += 1
        if i >= end or not (0x30 <= buf[i] <= 0x39):
            return -1, False, 0
        while i < end and 0x30 <= buf[i] <= 0x39:
            i += 1
    if i < end and (buf[i] == 0x65 or buf[i] == 0x45):
        whole = False
        i += 1
        if i < end and (buf[i] == 0x2B or buf[i] == 0x2D):
            i += 1
        if i >= end or not (0x30 <= buf[i] <= 0x39):
            return -1, False, 0
        while i < end and 0x30 <= buf[i] <= 0x39:
            i += 1
    return i, whole, (-val if neg else val)


@njit(inline="always", cache=True)
def _white(buf, i, end):
    """The first position from ``i`` that is not JSON white space within a line (space, tab, CR)."""
    while i < end and (buf[i] == 0x20 or buf[i] == 0x09 or buf[i] == 0x0D):
        i += 1
    return i


@njit(inline="always", cache=True)
def _literal(buf, i, end, word):
    """Whether ``buf[i:]`` starts with the ASCII bytes of ``word`` (true, false, null)."""
    if i + word.shape[0] > end:
        return False
    for k in range(word.shape[0]):
        if buf[i + k] != word[k]:
            return False
    return True


@njit(inline="always", cache=True)
def _key_is(buf, start, stop, key):
    """Whether ``buf[start:stop]`` holds exactly the bytes of ``key``."""
    return stop - start == key.shape[0] and _literal(buf, start, stop, key)


_TRUE = np.frombuffer(b"true", dtype=np.uint8)
_FALSE = np.frombuffer(b"false", dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)


@njit(cache=True, nogil=True)
def extract_fields(buf, head, max_depth, max_digits, text_key, id_key, want_id):
    """The text field (and with ``want_id`` the id field) of every line of ``buf``, a block of
    whole lines (the last may lack its ``\\n``) whose first starts at ``head``: each line parsed in
    full by the JSON grammar (RFC 8259) in one pass, with the checks of :func:`scan_lines` (one
    object per line, followed by white space only; well-formed UTF-8; nested less than
    ``max_depth``; no integer of ``max_digits`` digits or more).

    Returns ``(ok, lines, text, text_offsets, id_kind, int_ids, id_bytes, id_offsets)``: the texts
    unescaped, as UTF-8, one after another; ``id_kind`` 1 when every id is an integer (``int_ids``),
    2 when every id is a string (UTF-8 in ``id_bytes``). Each value is the one Python's
    ``json.loads`` gives for the line. ``ok`` is False — the caller then takes the block another
    way — for anything this pass does not decide exactly as Python does: a line that is not JSON or
    breaks a check above, a text that is missing, null or not a string, an id missing or not an
    integer of ≤ 18 digits or a string (or ids of both kinds), a wanted key given twice in an object
    (Python keeps the last), a lone surrogate escape, NaN or Infinity. Keys are matched unescaped,
    at the top level only."""
    end = buf.shape[0]
    cap = end // 2 + 2
    text = np.empty(end, dtype=np.uint8)
    toff = np.empty(cap + 1, dtype=np.int64)
    ints = np.empty(cap if want_id else 0, dtype=np.int64)
    idb = np.empty(end if want_id else 0, dtype=np.uint8)
    idoff = np.empty(cap + 1 if want_id else 1, dtype=np.int64)
    stack = np.empty(max_depth + 1, dtype=np.uint8)
    keys = np.empty(0, dtype=np.uint8)            # an escaped key, unescaped (grown when one comes)
    toff[0] = 0
    idoff[0] = 0
    id_kind = 0
    n = 0
    o = 0
    io = 0
    i = head
    if head >= end:                   # nothing after a byte-order mark: a blank line, not no line
        return False, n, text[:0], toff[:1], 0, ints[:0], idb[:0], idoff[:1]
    while i < end:
        if buf[i] != 0x7B or n >= cap or max_depth <= 1:
            return False, n, text[:0], toff[:1], 0, ints[:0], idb[:0], idoff[:1]
        i += 1
        stack[0] = _OBJECT
        sp = 1
        state = _KEY_OR_END
        field = 0
        got_text = False
        got_id = False
        ok = True
        while sp > 0:
            i = _white(buf, i, end)
            if i >= end:
                ok = False
                break
            c = buf[i]
            if (c == 0x7D and state == _KEY_OR_END) or (c == 0x5D and state == _VALUE_OR_END):
                sp -= 1                     # an empty object or array closes
                i += 1
                state = _AFTER
                continue
            if state == _KEY_OR_END or state == _KEY:
                if c != 0x22:
                    ok = False
                    break
                j, _ = _string(buf, i + 1, end, text, 0, False)
                if j < 0:
                    ok = False
                    break
                field = 0
                if sp == 1:
                    ks, ke, kb = i + 1, j - 1, buf
                    for k in range(ks, ke):
                        if buf[k] == 0x5C:          # an escaped key: compared unescaped
                            if keys.shape[0] < ke - ks:         # (never longer than written)
                                keys = np.empty(ke - ks, dtype=np.uint8)
                            _, ke = _string(buf, i + 1, end, keys, 0, True)
                            ks, kb = 0, keys
                            break
                    if _key_is(kb, ks, ke, text_key):
                        field = 1
                    elif want_id and _key_is(kb, ks, ke, id_key):
                        field = 2
                i = _white(buf, j, end)
                if i >= end or buf[i] != 0x3A:
                    ok = False
                    break
                i += 1
                state = _VALUE
                continue
            if state == _VALUE or state == _VALUE_OR_END:
                f = field
                field = 0
                state = _AFTER
                if c == 0x22:
                    if f == 1:
                        if got_text:
                            ok = False
                            break
                        j, o = _string(buf, i + 1, end, text, o, True)
                        got_text = True
                    elif f == 2:
                        if got_id or id_kind == 1:
                            ok = False
                            break
                        j, io = _string(buf, i + 1, end, idb, io, True)
                        got_id = True
                        id_kind = 2
                    else:
                        j, _ = _string(buf, i + 1, end, text, 0, False)
                    if j < 0:
                        ok = False
                        break
                    i = j
                    continue
                if f == 1:                     # a text that is not a string (null included)
                    ok = False
                    break
                if c == 0x7B or c == 0x5B:
                    if f == 2 or sp + 1 >= max_depth:
                        ok = False
                        break
                    stack[sp] = _OBJECT if c == 0x7B else _ARRAY
                    sp += 1
                    i += 1
                    state = _KEY_OR_END if c == 0x7B else _VALUE_OR_END
                    continue
                if c == 0x74 or c == 0x66 or c == 0x6E:
                    word = _TRUE if c == 0x74 else (_FALSE if c == 0x66 else _NULL)
                    if f == 2 or not _literal(buf, i, end, word):
                        ok = False
                        break
                    i += word.shape[0]
                    continue
                if c == 0x2D or 0x30 <= c <= 0x39:
                    j, whole, val = _number(buf, i, end, max_digits)
                    if j < 0:
                        ok = False
                        break
                    if f == 2:
                        if not whole or got_id or id_kind == 2:
                            ok = False
                            break
                        ints[n] = val
                        got_id = True
                        id_kind = 1
                    i = j
                    continue
                ok = False
                break
            # after a value: a comma, or the end of the object or array it is in
            top = stack[sp - 1]
            if c == 0x2C:
                state = _KEY if top == _OBJECT else _VALUE
                i += 1
                continue
            if (c == 0x7D and top == _OBJECT) or (c == 0x5D and top == _ARRAY):
                sp -= 1
                i += 1
                continue
            ok = False
            break
        if not ok or not got_text or (want_id and not got_id):
            return False, n, text[:0], toff[:1], 0, ints[:0], idb[:0], idoff[:1]
        i = _white(buf, i, end)
        if i < end:
            if buf[i] != 0x0A:
                return False, n, text[:0], toff[:1], 0, ints[:0], idb[:0], idoff[:1]
            i += 1
        n += 1
        toff[n] = o
        if want_id:
            idoff[n] = io
    return True, n, text[:o], toff[:n + 1], id_kind, ints[:n if id_kind == 1 else 0], idb[:io], idoff[:n + 1]
