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
