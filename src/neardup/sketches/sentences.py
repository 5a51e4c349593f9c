"""Sentence signature: the "longest n sentences" method.

A document is split into sentences at Western (. ! ? ;) and CJK (。！？；…) sentence punctuation
and at line breaks; each sentence is normalised (NFKC, casefold, runs of white space → one space,
then every character that is not a letter or digit dropped). The n longest sentences (by length
in code points; ties: earlier first) are hashed with XXH64 and the sorted hashes folded into one
64-bit signature. Two documents with equal signatures are candidate duplicates: cheap and blind
to edits outside the longest sentences. A document with no sentence gets signature 0 and
``has_content`` False.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .._checks import as_int
from ..kernels.hashing import combine
from ..text.normalize import Normalizer, to_utf8
from .items import hash_items

_SPLIT = re.compile(r"(?:[.!?;]+(?=\s|$))|[。！？；!?;…\n\r\u2028\u2029]+")
_NON_WORD = re.compile(r"[\W_]+")


class SentenceSigner:
    """``n`` (default 3) longest sentences → one uint64 signature."""

    def __init__(self, n: int = 3, min_chars: int = 1, convert: str | None = None):
        self.n = as_int(n, "n", 1)
        self.min_chars = min_chars
        self._norm = Normalizer(whitespace=False, convert=convert)  # line breaks split sentences: keep them

    def config(self) -> dict:
        return {"method": "sentences", "n": self.n}

    def sentences(self, text) -> list[str]:
        """Normalised sentences in document order."""
        text = self._norm(text)
        out = []
        for s in _SPLIT.split(text):
            s = _NON_WORD.sub("", s)
            if len(s) >= self.min_chars:
                out.append(s)
        return out

    def longest(self, text) -> list[str]:
        sents = self.sentences(text)
        order = sorted(range(len(sents)), key=lambda i: (-len(sents[i]), i))
        return [sents[i] for i in order[: self.n]]

    def sign(self, text) -> int:
        chosen = self.longest(text)
        if not chosen:
            return 0
        hashes = np.sort(hash_items([to_utf8(s) for s in chosen]))
        return int(combine(hashes, 0, hashes.shape[0], np.uint64(self.n)))

    def sign_batch(self, texts: Sequence) -> np.ndarray:
        return np.fromiter((self.sign(t) for t in texts), dtype=np.uint64, count=len(texts))


def exact_hash(text, normalizer: Normalizer | None = None) -> int:
    """XXH64 of the normalised text: equal for exact duplicates (after normalisation)."""
    norm = normalizer if normalizer is not None else Normalizer()
    return int(hash_items([to_utf8(norm(text))])[0])
