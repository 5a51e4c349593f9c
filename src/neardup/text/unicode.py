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


@lru_cache(maxsize=2)
def fold_tables(casefold: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Case folding for the word kernel: ``(slot, utf8)``.

    ``slot`` (uint16, indexed by code point) is 0 for a code point that does not fold and r + 1
    for row r of ``utf8``, whose first byte is the length of the folded UTF-8 form and the rest
    its bytes. ``casefold=False`` gives an empty ``slot``: the kernel then folds nothing (ASCII
    included). The shipped table is Unicode's full case folding (``str.casefold``) at the Unicode
    version of the class table, so folding, like splitting, is the same under every Python."""
    if not casefold:
        return np.zeros(0, dtype=np.uint16), np.zeros((1, 13), dtype=np.uint8)
    with resources.files("neardup.data").joinpath("unicode_casefold.npz").open("rb") as fh:
        data = np.load(fh)
        cps = data["cps"].astype(np.int64)
        utf8 = np.ascontiguousarray(data["utf8"])
    slot = np.zeros(int(cps[-1]) + 1, dtype=np.uint16)
    slot[cps] = np.arange(1, cps.shape[0] + 1, dtype=np.uint16)
    return slot, utf8
