"""Tokenising and shingling kernels over a UTF-8 batch (one buffer + document offsets).

Every kernel reads ``buf`` (uint8) where document ``d`` is ``buf[offsets[d]:offsets[d+1]]`` and
writes the 64-bit shingle hashes of all documents into one CSR array (hashes + per-document
offsets). No Python object is created per token.

Shingle definition: with tokens t_1..t_m and n-gram size n, the shingles are the windows
(t_i, ..., t_{i+n-1}) for i = 1..m-n+1; a document with 1 <= m < n tokens yields the single
shingle (t_1..t_m), so identical short texts still match; a document with no token yields none.

Token hash (:func:`token_hash`), computed while the token is scanned: the token's bytes are
shifted into 64-bit words, 8 bytes per word; each word is absorbed by the XXH64 round
h ← rotl(h ⊕ w·P2, 31)·P1 starting from h = seed; the result is fmix64(h ⊕ L·P5) for a token of
L bytes. Shingle hash: a rolling polynomial H = Σ_j τ_{i+j} B^{n−1−j} mod 2^64 (B = P1, odd)
over the token hashes τ, updated in O(1) per window, then fmix64(H ⊕ seed) (a short document's
single shingle: fmix64(H ⊕ seed ⊕ m)). Character n-grams: XXH64 of the window's UTF-8 bytes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import P1, P2, P5, fmix64, rotl, xxh64
from .swar import CASE, GATHER, HIGH, LITTLE_ENDIAN, alnum_bits, any_non_ascii, bswap64, cttz64, load_u64

SEP = np.uint8(0)
WORD = np.uint8(1)
SOLO = np.uint8(2)
PRESPLIT_SEP = 0x1F  # ASCII unit separator: token boundary for pre-tokenised text


@njit(inline="always", cache=True)
def decode_at(buf, i, end):
    """Decode one UTF-8 code point at ``buf[i]``; returns (code point, byte length).

    Invalid or truncated sequences decode as U+FFFD with length 1 (never read past ``end``)."""
    b0 = np.int64(buf[i])
    if b0 < 0x80:
        return b0, 1
    if b0 >= 0xC2 and b0 < 0xE0 and i + 1 < end:
        b1 = np.int64(buf[i + 1])
        if (b1 & 0xC0) == 0x80:
            return ((b0 & 0x1F) << 6) | (b1 & 0x3F), 2
    elif b0 >= 0xE0 and b0 < 0xF0 and i + 2 < end:
        b1 = np.int64(buf[i + 1])
        b2 = np.int64(buf[i + 2])
        if (b1 & 0xC0) == 0x80 and (b2 & 0xC0) == 0x80:
            return ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F), 3
    elif b0 >= 0xF0 and b0 < 0xF5 and i + 3 < end:
        b1 = np.int64(buf[i + 1])
        b2 = np.int64(buf[i + 2])
        b3 = np.int64(buf[i + 3])
        if (b1 & 0xC0) == 0x80 and (b2 & 0xC0) == 0x80 and (b3 & 0xC0) == 0x80:
            return ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F), 4
    return 0xFFFD, 1


@njit(inline="always", cache=True)
def decode_word(v, avail):
    """:func:`decode_at` from a register: ``v`` holds the 8 bytes from the character on (a
    little-endian :func:`~neardup.kernels.swar.load_u64`), ``avail`` the bytes left in the text.
    The same (code point, length) for every input; about 7× faster in a scanning loop, where numba
    compiles the array-reading helper poorly (1.4–1.9 against 13 ns per CJK character measured)."""
    b0 = np.int64(v & np.uint64(0xFF))
    if b0 < 0x80:
        return b0, 1
    b1 = np.int64((v >> np.uint64(8)) & np.uint64(0xFF))
    b2 = np.int64((v >> np.uint64(16)) & np.uint64(0xFF))
    b3 = np.int64((v >> np.uint64(24)) & np.uint64(0xFF))
    if b0 >= 0xE0 and b0 < 0xF0 and avail > 2 and (b1 & 0xC0) == 0x80 and (b2 & 0xC0) == 0x80:
        return ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F), 3
    if b0 >= 0xC2 and b0 < 0xE0 and avail > 1 and (b1 & 0xC0) == 0x80:
        return ((b0 & 0x1F) << 6) | (b1 & 0x3F), 2
    if (b0 >= 0xF0 and b0 < 0xF5 and avail > 3 and (b1 & 0xC0) == 0x80 and (b2 & 0xC0) == 0x80
            and (b3 & 0xC0) == 0x80):
        return ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F), 4
    return 0xFFFD, 1


@njit(inline="always", cache=True)
def decode_next(buf, i, end):
    """(code point, length) of the character at ``buf[i]`` (< ``end``): from a register
    (:func:`decode_word`) where 8 bytes can be read, else :func:`decode_at`."""
    if i + 8 <= buf.shape[0]:
        return decode_word(load_u64(buf, i), end - i)
    return decode_at(buf, i, end)


@njit(inline="always", cache=True)
def _absorb(h, w):
    return rotl(h ^ (w * P2), 31) * P1


@njit(inline="always", cache=True)
def folds_ascii(map_slot):
    """Whether a :func:`neardup.text.unicode.char_map` table folds case (it then maps 'A')."""
    return map_slot.shape[0] > 0x41 and map_slot[0x41] != 0


@njit(inline="always", cache=True)
def _push(h, w, pending, nw, byte):
    """Shift one byte into the pending word; absorb the word once it holds 8 bytes.
    ``nw`` counts absorbed words (token length = 8·nw + pending)."""
    w = (w << np.uint64(8)) | np.uint64(byte)
    if pending == 7:
        return _absorb(h, w), np.uint64(0), 0, nw + 1
    return h, w, pending + 1, nw


@njit(inline="always", cache=True)
def _finish(h, w, pending, length):
    if pending > 0:
        h = _absorb(h, w)
    return fmix64(h ^ (np.uint64(length) * P5))


@njit(cache=True)
def token_hash(buf, start, end, seed):
    """Hash of the token ``buf[start:end]`` (see the module docstring)."""
    h = np.uint64(seed)
    w = np.uint64(0)
    pending = 0
    for i in range(start, end):
        w = (w << np.uint64(8)) | np.uint64(buf[i])
        pending += 1
        if pending == 8:
            h = _absorb(h, w)
            w = np.uint64(0)
            pending = 0
    return _finish(h, w, pending, end - start)


@njit(cache=True)
def word_scan(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed):
    """Word tokens of ``buf[start:end]``: fills byte spans and token hashes, returns the count.

    An all-ASCII document (the common case) goes through :func:`ascii_word_scan`, eight bytes
    at a time; any other through :func:`_scan_words`, with :func:`mixed_word_scan`'s fast paths
    when the buffer has 7 bytes past ``end``, else as :func:`general_word_scan`. All give the same
    tokens and hashes (tested), so the choice is invisible.

    ``padded`` is passed to :func:`_scan_words` as a run-time value, so the scanner is compiled once
    (as literal ``True`` and ``False`` it was compiled twice: 1.5 s more of a first run; the speed
    is the same, measured)."""
    return _word_scan(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, False, table,
                      table)


@njit(cache=True)
def word_scan_nfkc(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, check, unsafe,
                   lead_clean):
    """:func:`word_scan` that, with ``check``, returns −1 as soon as it decodes a character whose
    presence makes NFKC inexact character by character: ``lead_clean[b] == 0`` for its lead byte
    ``b`` and ``unsafe[cp] != 0`` (uint8 tables, :func:`neardup.text.normalize.nfkc_check_tables`;
    the rule of :func:`neardup.kernels.normalize.nfkc_unsafe_batch`, on the same decoding). ASCII is
    never flagged, so the check costs two table reads per non-ASCII character and no pass of its own."""
    return _word_scan(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, check, unsafe,
                      lead_clean)


@njit(inline="always", cache=True)
def _word_scan(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, check, unsafe,
               lead_clean):
    padded = LITTLE_ENDIAN and end + 7 <= buf.shape[0]
    if padded and not any_non_ascii(buf, start, end):
        fold = CASE if folds_ascii(map_slot) else np.uint64(0)
        return ascii_word_scan(buf, start, end, fold, tok_start, tok_end, tok_hash, np.uint64(seed))
    return _scan_words(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, padded, check,
                       unsafe, lead_clean)


@njit(cache=True)
def ascii_word_scan(buf, start, end, fold, tok_start, tok_end, tok_hash, seed):
    """:func:`general_word_scan` for ASCII text, where word characters are [0-9A-Za-z], in three
    passes with no loop-carried dependency through the text position:

    1. a bitmap of word bytes, 64 bytes per uint64, from SWAR byte tests (:mod:`.swar`);
    2. token starts (a 1 after a 0) and ends (a 0 after a 1) read off the bitmap with
       count-trailing-zeros, one step per token;
    3. each token hashed from whole 8-byte loads (byte-reversed: the token hash packs its first
       byte most significant), independent of the others.

    ``fold`` is 0x2020…20 to fold case (OR 0x20 lowercases letters and leaves digits alone) or 0.
    Loads may read up to 7 bytes past ``end``; the caller guarantees those bytes are in ``buf``."""
    n = end - start
    nblocks = (n + 63) >> 6
    bitmap = np.empty(nblocks, dtype=np.uint64)
    for j in range(nblocks):
        word = np.uint64(0)
        base = start + 64 * j
        for q in range(8):
            p = base + 8 * q
            if p < end:
                bits = alnum_bits(load_u64(buf, p)) >> np.uint64(7)
                word |= ((bits * GATHER) >> np.uint64(56)) << np.uint64(8 * q)
        tail = n - 64 * j
        if tail < 64:
            word &= (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
        bitmap[j] = word
    m = 0
    me = 0
    carry = np.uint64(0)
    for j in range(nblocks):
        m, me, carry = _block_bounds(bitmap[j], carry, start + 64 * j, tok_start, tok_end, m, me)
    if me < m:  # the last token runs to the end
        tok_end[me] = end
    for t in range(m):
        tok_hash[t] = _short_hash(buf, tok_start[t], tok_end[t] - tok_start[t], fold, seed)
    return m


@njit(inline="always", cache=True)
def _block_bounds(word, carry, base, tok_start, tok_end, m, me):
    """Token starts (a 1 after a 0) and ends (a 0 after a 1) of one 64-byte block's word-byte bitmap
    ``word`` at ``base``, appended by count-trailing-zeros; ``carry``: the previous block's last bit.
    Returns (starts so far, ends so far, this block's last bit)."""
    before = (word << np.uint64(1)) | carry
    starts = word & ~before
    ends = ~word & before
    while starts != 0:
        tok_start[m] = base + np.int64(cttz64(starts))
        m += 1
        starts &= starts - np.uint64(1)
    while ends != 0:
        tok_end[me] = base + np.int64(cttz64(ends))
        me += 1
        ends &= ends - np.uint64(1)
    return m, me, word >> np.uint64(63)


@njit(cache=True)
def _ascii_run(buf, a, b, fold, tok_start, tok_end, tok_hash, m, seed):
    """The tokens of the ASCII stretch ``buf[a:b]`` (it starts and ends outside any token, or at the
    document's end) appended from index ``m``, as :func:`ascii_word_scan` finds and hashes them, one
    64-byte block at a time; returns the new count."""
    m0 = m
    me = m
    carry = np.uint64(0)
    for base in range(a, b, 64):
        word = np.uint64(0)
        for q in range(8):
            p = base + 8 * q
            if p < b:
                bits = alnum_bits(load_u64(buf, p)) >> np.uint64(7)
                word |= ((bits * GATHER) >> np.uint64(56)) << np.uint64(8 * q)
        tail = b - base
        if tail < 64:
            word &= (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
        m, me, carry = _block_bounds(word, carry, base, tok_start, tok_end, m, me)
    if me < m:
        tok_end[me] = b
    for t in range(m0, m):
        tok_hash[t] = _short_hash(buf, tok_start[t], tok_end[t] - tok_start[t], fold, seed)
    return m


@njit(inline="always", cache=True)
def _short_hash(buf, p, length, fold, seed):
    """:func:`token_hash` of ``buf[p:p+length]`` (bytes OR ``fold``), 1 ≤ length, from whole 8-byte
    loads (may read 7 bytes past the token)."""
    h = seed
    rest = length
    while rest > 8:
        h = _absorb(h, bswap64(load_u64(buf, p) | fold))
        p += 8
        rest -= 8
    h = _absorb(h, bswap64(load_u64(buf, p) | fold) >> np.uint64(64 - 8 * rest))
    return fmix64(h ^ (np.uint64(length) * P5))


@njit(cache=True)
def mixed_word_scan(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed):
    """:func:`general_word_scan` for text with non-ASCII characters, faster on mixed text:

    * outside a token, an ASCII stretch of at least 16 bytes (markup, numbers, Latin words between
      Chinese sentences) is cut back to end after a separator and scanned as
      :func:`ascii_word_scan` scans (a 64-bit word-byte bitmap per 64 bytes, token bounds by
      count-trailing-zeros, hashes from whole 8-byte loads);
    * a class-2 character (CJK ideograph, kana, hangul) is hashed from one 8-byte load;
    * characters are decoded from a register (:func:`decode_word`).

    Tokens, spans and hashes equal :func:`general_word_scan`'s (tested on generated mixed text):
    both are :func:`_scan_words`, this one with ``padded``. Loads may read up to 7 bytes past
    ``end``; the caller guarantees those bytes are in ``buf``."""
    return _scan_words(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, True, False,
                       table, table)


@njit(cache=True)
def general_word_scan(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed):
    """Word tokens of any UTF-8 text, one byte at a time.

    A token is a maximal run of word characters (class 1), or one class-2 character (CJK
    ideograph, kana, hangul syllable). Everything else separates tokens. The hash is absorbed
    byte by byte during the scan and equals :func:`token_hash` of the token's bytes.

    Case folding (and NFKC where it is exact per character) happens here, during the scan:
    ``map_slot``/``map_utf8`` (:func:`neardup.text.unicode.char_map`) give a character's
    replacement, and a word or class-2 character that has one contributes the replacement's
    UTF-8 bytes to the hash, so the hash equals the one of normalising the text first. A
    replacement never changes a character's class (the table's generator checks it), so token
    boundaries do not move; spans are those of the original bytes. ASCII word characters are
    [0-9A-Za-z], whose fold is ``b | 0x20`` (digits already have that bit)."""
    return _scan_words(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, False, False,
                       table, table)


@njit(cache=True)
def _scan_words(buf, start, end, table, map_slot, map_utf8, tok_start, tok_end, tok_hash, seed, padded, check, unsafe,
                lead_clean):
    """The scan of :func:`general_word_scan`; ``padded`` (7 readable bytes past ``end``) adds the
    fast paths of :func:`mixed_word_scan`, which change no token, span or hash; ``check``: the NFKC
    check of :func:`word_scan_nfkc` (−1 for a flagged document)."""
    seed = np.uint64(seed)
    nslot = map_slot.shape[0]
    fmask = np.uint8(0x20) if folds_ascii(map_slot) else np.uint8(0)
    fold = CASE if fmask else np.uint64(0)
    m = 0
    i = start
    cur = -1
    h = seed
    w = np.uint64(0)
    pending = 0
    nw = 0  # whole 8-byte words absorbed: token length = 8·nw + pending
    while i < end:
        b = buf[i]
        if b < 0x80:
            cls = table[b]
            if cls == WORD and cur >= 0:  # hot path: an ASCII letter/digit inside a token
                h, w, pending, nw = _push(h, w, pending, nw, b | fmask)
                i += 1
                continue
            if padded and cur < 0 and i + 16 <= end and ((load_u64(buf, i) | load_u64(buf, i + 8)) & HIGH) == 0:
                j = i + 16
                while j + 8 <= end and (load_u64(buf, j) & HIGH) == 0:
                    j += 8
                while j < end and buf[j] < 0x80:
                    j += 1
                if j < end:                   # end the stretch outside any token
                    while j > i and table[buf[j - 1]] == WORD:
                        j -= 1
                if j - i >= 16:
                    m = _ascii_run(buf, i, j, fold, tok_start, tok_end, tok_hash, m, seed)
                    i = j
                    continue
            cp = np.int64(b)
            ln = 1
        else:
            if padded:
                cp, ln = decode_word(load_u64(buf, i), end - i)
            else:
                cp, ln = decode_at(buf, i, end)
            if check and lead_clean[b] == 0 and unsafe[cp] != 0:
                return -1
            cls = table[cp]
        if cls == WORD:
            if cur < 0:
                cur = i
                h = seed
                w = np.uint64(0)
                pending = 0
                nw = 0
            if ln == 1:  # ASCII (an invalid byte decodes to U+FFFD, a separator)
                h, w, pending, nw = _push(h, w, pending, nw, b | fmask)
            elif cp < nslot and map_slot[cp] != 0:
                r = np.int64(map_slot[cp]) - 1
                for q in range(np.int64(map_utf8[r, 0])):
                    h, w, pending, nw = _push(h, w, pending, nw, map_utf8[r, 1 + q])
            else:
                for q in range(ln):
                    h, w, pending, nw = _push(h, w, pending, nw, buf[i + q])
        else:
            if cur >= 0:
                tok_start[m] = cur
                tok_end[m] = i
                tok_hash[m] = _finish(h, w, pending, 8 * nw + pending)
                m += 1
                cur = -1
            if cls == SOLO:
                tok_start[m] = i
                tok_end[m] = i + ln
                if cp < nslot and map_slot[cp] != 0:  # a compatibility ideograph: its NFKC
                    r = np.int64(map_slot[cp]) - 1
                    tok_hash[m] = token_hash(map_utf8[r], 1, 1 + np.int64(map_utf8[r, 0]), seed)
                elif padded:
                    tok_hash[m] = _short_hash(buf, i, ln, np.uint64(0), seed)
                else:
                    tok_hash[m] = token_hash(buf, i, i + ln, seed)
                m += 1
        i += ln
    if cur >= 0:
        tok_start[m] = cur
        tok_end[m] = end
        tok_hash[m] = _finish(h, w, pending, 8 * nw + pending)
        m += 1
    return m


@njit(cache=True)
def _has_word_char(buf, start, end, table):
    i = start
    while i < end:
        c = buf[i]
        if c < 0x80:             # ASCII: no decoding (most pre-split tokens are spaces and punctuation)
            if table[c] != SEP:
                return True
            i += 1
            continue
        cp, ln = decode_next(buf, i, end)
        if table[cp] != SEP:
            return True
        i += ln
    return False


@njit(cache=True)
def presplit_scan(buf, start, end, table, word_only, tok_start, tok_end, tok_hash, seed):
    """Tokens separated by the byte 0x1F (empty tokens are skipped), with their hashes;
    ``word_only`` also skips a token without a word character (class ≠ 0 in ``table``)."""
    m = 0
    cur = start
    for i in range(start, end + 1):
        if i == end or buf[i] == PRESPLIT_SEP:
            if i > cur and (not word_only or _has_word_char(buf, cur, i, table)):
                tok_start[m] = cur
                tok_end[m] = i
                tok_hash[m] = token_hash(buf, cur, i, seed)
                m += 1
            cur = i + 1
    return m


@njit(cache=True)
def char_positions(buf, start, end, pos):
    """Byte offset of every code point of ``buf[start:end]`` plus the end; returns the count."""
    m = 0
    i = start
    while i < end:
        pos[m] = i
        m += 1
        if buf[i] < 0x80:
            i += 1
        else:
            _, ln = decode_at(buf, i, end)
            i += ln
    pos[m] = end
    return m


@njit(cache=True)
def emit_shingles(tokh, m, n, seed, out, o):
    """Rolling shingle hashes of the m token hashes ``tokh[:m]`` written at ``out[o:]``."""
    seed = np.uint64(seed)
    if m == 0:
        return o
    bn1 = np.uint64(1)
    for _ in range(n - 1):
        bn1 *= P1
    h = np.uint64(0)
    for t in range(min(m, n)):
        h = h * P1 + tokh[t]
    if m < n:
        out[o] = fmix64(h ^ seed ^ np.uint64(m))
        return o + 1
    out[o] = fmix64(h ^ seed)
    o += 1
    for t in range(n, m):
        h = (h - tokh[t - n] * bn1) * P1 + tokh[t]
        out[o] = fmix64(h ^ seed)
        o += 1
    return o


@njit(cache=True)
def _max_doc_len(offsets):
    maxlen = 1
    for d in range(offsets.shape[0] - 1):
        ln = offsets[d + 1] - offsets[d]
        if ln > maxlen:
            maxlen = ln
    return maxlen


@njit(cache=True)
def scan_scratch(offsets):
    """Per-document scratch for the token scans, sized to the batch's longest document:
    (token starts, token ends, token hashes)."""
    maxlen = _max_doc_len(offsets)
    return (np.empty(maxlen + 1, dtype=np.int64), np.empty(maxlen + 1, dtype=np.int64),
            np.empty(maxlen + 1, dtype=np.uint64))


@njit(inline="always", cache=True)
def doc_word_shingles(buf, offsets, d, table, map_slot, map_utf8, n, seed, scratch, shingles, check, unsafe,
                      lead_clean):
    """Word shingle hashes of document ``d`` into ``shingles[:c]``; returns c, or −1 for a document
    :func:`word_scan_nfkc` flags (with ``check``)."""
    tok_start, tok_end, tokh = scratch
    m = word_scan_nfkc(buf, offsets[d], offsets[d + 1], table, map_slot, map_utf8, tok_start, tok_end, tokh, seed,
                       check, unsafe, lead_clean)
    if m < 0:
        return -1
    return emit_shingles(tokh, m, n, seed, shingles, 0)


@njit(cache=True, nogil=True)
def token_shingles_batch(buf, offsets, table, map_slot, map_utf8, n, seed, mode):
    """Shingle hashes of a batch. ``mode`` 0: word tokens (``table`` = code-point classes,
    ``map_*`` = per-character map, see :func:`word_scan`); 1: pre-split tokens (0x1F
    separated); 2: pre-split tokens that hold a word character (per ``table``).
    Returns (hashes, doc_offsets)."""
    nd = offsets.shape[0] - 1
    total = offsets[nd] - offsets[0]
    out = np.empty(total + 1, dtype=np.uint64)
    doc_off = np.empty(nd + 1, dtype=np.int64)
    tok_start, tok_end, tokh = scan_scratch(offsets)
    o = 0
    doc_off[0] = 0
    for d in range(nd):
        if mode == 0:
            m = word_scan(buf, offsets[d], offsets[d + 1], table, map_slot, map_utf8, tok_start, tok_end, tokh, seed)
        else:
            m = presplit_scan(buf, offsets[d], offsets[d + 1], table, mode == 2, tok_start, tok_end, tokh, seed)
        o = emit_shingles(tokh, m, n, seed, out, o)
        doc_off[d + 1] = o
    return out[:o].copy(), doc_off


@njit(cache=True, nogil=True)
def char_shingles_batch(buf, offsets, n, seed):
    """Character n-gram hashes: XXH64 of the UTF-8 bytes of every window of n code points."""
    nd = offsets.shape[0] - 1
    total = offsets[nd] - offsets[0]
    out = np.empty(total + 1, dtype=np.uint64)
    doc_off = np.empty(nd + 1, dtype=np.int64)
    maxlen = _max_doc_len(offsets)
    pos = np.empty(maxlen + 2, dtype=np.int64)
    o = 0
    doc_off[0] = 0
    for d in range(nd):
        m = char_positions(buf, offsets[d], offsets[d + 1], pos)
        if m > 0:
            if m < n:
                out[o] = xxh64(buf, pos[0], pos[m], seed)
                o += 1
            else:
                for t in range(m - n + 1):
                    out[o] = xxh64(buf, pos[t], pos[t + n], seed)
                    o += 1
        doc_off[d + 1] = o
    return out[:o].copy(), doc_off


@njit(cache=True)
def solo_fraction_batch(buf, offsets, table):
    """Per document: the fraction of word characters that are class 2 (CJK/kana/hangul)."""
    nd = offsets.shape[0] - 1
    out = np.zeros(nd, dtype=np.float64)
    for d in range(nd):
        i = offsets[d]
        end = offsets[d + 1]
        words = 0
        solo = 0
        while i < end:
            if buf[i] < 0x80:
                if table[buf[i]] == WORD:
                    words += 1
                i += 1
            else:
                cp, ln = decode_at(buf, i, end)
                cls = table[cp]
                if cls == SOLO:
                    solo += 1
                    words += 1
                elif cls == WORD:
                    words += 1
                i += ln
        if words > 0:
            out[d] = solo / words
    return out


@njit(cache=True)
def gather_rows(hashes, offsets, docs, out):
    """Row i of ``out`` (filled beforehand with the padding value) gets document ``docs[i]``'s
    hashes at its front: the ragged documents of one size class as a matrix NumPy sorts by row."""
    for i in range(docs.shape[0]):
        s = offsets[docs[i]]
        for j in range(offsets[docs[i] + 1] - s):
            out[i, j] = hashes[s + j]


@njit(cache=True)
def distinct_rows(rows, sizes, docs, uniq, counts, starts, new_sizes):
    """The inverse of :func:`gather_rows` for sorted rows, keeping distinct values: document
    ``docs[i]``'s first ``sizes[i]`` values of row i (sorted; the padding sorts after them, or
    equals the largest hash and is not read) go to ``uniq`` from ``starts[i]`` on, each once, with
    its multiplicity in ``counts``; the number kept to ``new_sizes[docs[i]]``."""
    for i in range(docs.shape[0]):
        o = starts[i]
        n = sizes[i]
        if n == 0:
            new_sizes[docs[i]] = 0
            continue
        uniq[o] = rows[i, 0]
        counts[o] = 1
        k = o + 1
        for j in range(1, n):
            v = rows[i, j]
            if v == uniq[k - 1]:
                counts[k - 1] += 1
            else:
                uniq[k] = v
                counts[k] = 1
                k += 1
        new_sizes[docs[i]] = k - o


@njit(cache=True)
def append_block(uniq, counts, starts, new_sizes, out_h, out_c, o, new_off, d0, with_counts):
    """Documents d0, d0+1, … of a block (their distinct values at ``starts`` in ``uniq``/``counts``,
    ``new_sizes`` of them) appended in order to ``out_h``/``out_c`` from ``o`` on, their offsets
    written to ``new_off``; returns the new end."""
    for i in range(new_sizes.shape[0]):
        k = new_sizes[i]
        s = starts[i]
        out_h[o:o + k] = uniq[s:s + k]
        if with_counts:
            out_c[o:o + k] = counts[s:s + k]
        o += k
        new_off[d0 + i + 1] = o
    return o
