"""Repeated lines and paragraphs: a batch of documents → hashed units with their byte ranges.

A unit (a line, or a paragraph with the blank lines after it; see :mod:`neardup.kernels.spans`)
is identified by the hash of its word tokens, normalised as everywhere in neardup (case folded,
NFKC per character), so "Copyright (C) 2020 Foo" and "copyright (c)  2020 foo" are one unit.
Byte ranges are in the UTF-8 form of each text (lone surrogates kept as they are, "surrogatepass"),
so a removal never cuts a character and needs no decoding.

>>> u = UnitHasher("line").units(["a b\\nc\\n", "A  b\\nd"])
>>> u.starts.tolist(), u.ends.tolist(), u.docs.tolist()
([0, 4, 0, 5], [4, 6, 5, 6], [0, 0, 1, 1])
>>> bool(u.hashes[0] == u.hashes[2])
True
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..kernels.spans import first_occurrences, unit_hashes_batch
from ..text.normalize import Normalizer, _pack, kernel_char_map
from ..text.unicode import class_table

UNITS = ("line", "paragraph")


def utf8(text: str) -> bytes:
    """The bytes every span method works on (lone surrogates passed through, never replaced)."""
    return text.encode("utf-8", "surrogatepass")


def pack_raw(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Documents packed as they are (no normalisation): ``(buf uint8, offsets int64[n+1])``."""
    parts = [t if t.isascii() else utf8(t) for t in texts]
    return _pack(parts)


@dataclass(frozen=True)
class Units:
    """Units of a batch in document then text order: unit u is bytes ``starts[u]:ends[u]`` of
    document ``docs[u]``, with ``tokens[u]`` word tokens, hash ``hashes[u]`` (of the normalised
    tokens) and ``digests[u]`` (XXH64 of its bytes as they are)."""

    hashes: np.ndarray
    docs: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    tokens: np.ndarray
    digests: np.ndarray

    def __len__(self) -> int:
        return self.hashes.shape[0]

    @staticmethod
    def concat(parts: list[tuple[int, Units]]) -> Units:
        """Batches of units joined, each batch's documents shifted by its first document's index."""
        if not parts:
            e = np.zeros(0, dtype=np.int64)
            return Units(np.zeros(0, dtype=np.uint64), e, e, e, e, np.zeros(0, dtype=np.uint64))
        return Units(np.concatenate([u.hashes for _, u in parts]),
                     np.concatenate([u.docs + base for base, u in parts]),
                     np.concatenate([u.starts for _, u in parts]), np.concatenate([u.ends for _, u in parts]),
                     np.concatenate([u.tokens for _, u in parts]), np.concatenate([u.digests for _, u in parts]))

    def take(self, which) -> Units:
        return Units(self.hashes[which], self.docs[which], self.starts[which], self.ends[which], self.tokens[which],
                     self.digests[which])


class UnitHasher:
    """Lines or paragraphs of documents, hashed by their normalised word tokens (compiled, per batch).

    Parameters
    ----------
    unit : ``"line"`` (default) or ``"paragraph"``.
    seed : seed of the token and unit hashes.
    """

    def __init__(self, unit: str = "line", seed: int = 0):
        if unit not in UNITS:
            raise ConfigError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
        self.unit = unit
        self.seed = int(seed)
        self._maps = kernel_char_map(_default_normalizer())

    def units(self, texts: Sequence[str]) -> Units:
        if isinstance(texts, (str, bytes)):
            raise TypeError("units() takes a sequence of documents")
        buf, offsets = pack_raw(texts)
        return self.from_buffer(buf, offsets)

    def from_buffer(self, buf: np.ndarray, offsets: np.ndarray) -> Units:
        return Units(*unit_hashes_batch(buf, offsets, class_table(), *self._maps, np.uint64(self.seed),
                                        self.unit == "paragraph"))


def _default_normalizer():
    return Normalizer()


def repeated_units(units: Units, min_docs: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(removed, first): ``removed[u]`` when an earlier unit has u's hash and that hash occurs in at
    least ``min_docs`` documents; ``first[u]`` is the index of its first occurrence. Units must be
    in corpus order (documents non-decreasing), as :meth:`Units.concat` gives them."""
    if min_docs < 1:
        raise ConfigError(f"min_docs must be >= 1, got {min_docs!r}")
    if len(units) == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    order = np.argsort(units.hashes, kind="stable")   # NumPy's radix sort: 64-bit keys in linear passes
    return first_occurrences(units.hashes, units.docs, order, int(min_docs))


__all__ = ["UNITS", "UnitHasher", "Units", "pack_raw", "repeated_units", "utf8"]
