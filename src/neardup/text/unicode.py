"""Code-point classes for the word tokenizer (shipped table; see scripts/gen_unicode_table.py).

0 separator, 1 word character (letters, digits, marks of any script), 2 a token by itself
(CJK ideographs, kana, hangul syllables)."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np


@lru_cache(maxsize=1)
def class_table() -> np.ndarray:
    """uint8 array of length 0x110000: the class of every code point."""
    with resources.files("neardup.data").joinpath("unicode_classes.npz").open("rb") as fh:
        data = np.load(fh)
        starts = data["starts"].astype(np.int64)
        classes = data["classes"]
    lengths = np.diff(np.append(starts, 0x110000))
    return np.repeat(classes, lengths).astype(np.uint8)


def _load(name: str) -> dict:
    with resources.files("neardup.data").joinpath(name).open("rb") as fh:
        with np.load(fh) as data:
            return {k: data[k] for k in data.files}


@lru_cache(maxsize=8)
def char_map(nfkc: bool, casefold: bool, separators: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-character replacements for the word kernel: ``(slot, utf8)``.

    ``slot`` (uint16, indexed by code point) is 0 for a code point left as it is and r + 1 for
    row r of ``utf8``, whose first byte is the length of the replacement's UTF-8 form and the
    rest its bytes. With ``casefold``: Unicode full case folding (``str.casefold``); the table
    then also maps 'A', which tells the kernel to fold ASCII. With ``nfkc``: the NFKC of every
    character whose normalisation is exact character by character (see
    ``scripts/gen_unicode_table.py``; a document holding an :func:`nfkc_unsafe` code point must
    be normalised before the kernel sees it), folded too when ``casefold``. The tables are
    Unicode 14 (the class table's version). Under a Python with Unicode 14 (3.11) the kernel's
    output equals normalising with ``unicodedata`` first; under another, every character
    Unicode 14 assigns is still normalised and folded as Unicode 14 says (which Unicode's
    stability policies keep in later versions), and a character assigned later is unsafe: its
    document goes through the running Python's NFKC, and it is not case-folded. ``separators``:
    also the NFKC of the separators whose NFKC is other separators (``'﬩'`` → ``'+'``): nothing
    to the word tokenizer, which never reads them, but the jieba cut reads every character."""
    rows: dict[int, bytes] = {}
    if casefold:
        fold = _load("unicode_casefold.npz")
        for cp, row in zip(fold["cps"].tolist(), fold["utf8"]):
            rows[cp] = bytes(row[1:1 + row[0]])
        for cp in range(0x41, 0x5B):
            rows[cp] = bytes([cp + 32])
    if nfkc:
        norm = _load("unicode_nfkc.npz")
        table = norm["map_folded"] if casefold else norm["map_plain"]
        for cp, row in zip(norm["map_cps"].tolist(), table):
            rows[cp] = bytes(row[1:1 + row[0]])
        if separators:
            for cp, row in zip(norm["sep_cps"].tolist(), norm["sep_folded"] if casefold else norm["sep_plain"]):
                rows[cp] = bytes(row[1:1 + row[0]])
    if not rows:
        return np.zeros(0, dtype=np.uint16), np.zeros((1, 2), dtype=np.uint8)
    cps = sorted(rows)
    width = max(len(b) for b in rows.values())
    utf8 = np.zeros((len(cps), width + 1), dtype=np.uint8)
    slot = np.zeros(cps[-1] + 1, dtype=np.uint16)
    for r, cp in enumerate(cps):
        data = rows[cp]
        utf8[r, 0] = len(data)
        utf8[r, 1:1 + len(data)] = np.frombuffer(data, dtype=np.uint8)
        slot[cp] = r + 1
    return slot, utf8


@lru_cache(maxsize=1)
def nfkc_unsafe() -> np.ndarray:
    """uint8 array of length 0x110000: 1 for a code point whose presence makes per-character
    NFKC inexact (combining marks, possible composition seconds, characters whose NFKC would
    move token boundaries) or that Unicode 14 does not assign; such a document is normalised
    by Python instead."""
    data = _load("unicode_nfkc.npz")
    starts = data["unsafe_starts"].astype(np.int64)
    lengths = np.diff(np.append(starts, 0x110000))
    return np.repeat(data["unsafe"], lengths).astype(np.uint8)


@lru_cache(maxsize=1)
def nfkc_clean_leads() -> np.ndarray:
    """bool array of 256: True for a UTF-8 lead byte none of whose code points is flagged by
    :func:`nfkc_unsafe` (the lead bytes of CJK ideographs and hangul syllables among them)."""
    unsafe = nfkc_unsafe()
    out = np.zeros(256, dtype=np.bool_)
    for lead in range(0xC2, 0xF5):
        if lead < 0xE0:
            lo, size = (lead & 0x1F) << 6, 1 << 6
        elif lead < 0xF0:
            lo, size = (lead & 0x0F) << 12, 1 << 12
        else:
            lo, size = (lead & 0x07) << 18, 1 << 18
        out[lead] = not unsafe[lo:min(lo + size, 0x110000)].any()
    return out


@lru_cache(maxsize=1)
def nfkc_check_tables() -> tuple[np.ndarray, np.ndarray]:
    """``(unsafe, lead_clean)`` as the word kernels' NFKC check reads them
    (:func:`~neardup.kernels.shingle.word_scan_nfkc`): :func:`nfkc_unsafe` and
    :func:`nfkc_clean_leads` as writable uint8 arrays, the type of the class table, so that the
    scanner is compiled once for checked and unchecked callers."""
    return nfkc_unsafe().astype(np.uint8), nfkc_clean_leads().astype(np.uint8)
