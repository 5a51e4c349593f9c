"""Exact repeated substrings across a corpus, from a suffix array (Lee et al., ACL 2022, "Deduplicating
Training Data Makes Language Models Better": ExactSubstr).

The documents are joined into one byte string T, each followed by the separator 0xFF (a byte UTF-8
never uses); the suffix array of T is built by libdivsufsort (Yuta Mori; through ``pydivsufsort``),
O(n log n) worst case and about 11 MB/s on this project's 2-core reference machine. Every window
T[p:p+L] that lies in one document and equals a window starting earlier is marked
(:func:`~neardup.kernels.spans.mark_repeated_windows`); a document's removed ranges are the union
of its marked windows, trimmed to character boundaries (:func:`~neardup.kernels.spans.window_ranges`).
So every removed byte belongs to a string of ≥ L bytes seen before, and every string of ≥ L bytes
that occurs more than once is removed everywhere but at its first occurrence. Memory: T (n bytes),
the suffix array (4n bytes below 2 GiB of text, else 8n) and one mark byte per position: ≈ 6n.

>>> spans = repeated_substrings(["the same forty-byte boilerplate sentence!", "x: the same forty-byte "
...                              "boilerplate sentence! y"], min_length=20)
>>> spans.docs.tolist(), spans.starts.tolist(), spans.ends.tolist()
([1], [3], [44])
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..features.units import utf8
from ..kernels.hashing import xxh64_bytes
from ..kernels.spans import SEPARATOR, mark_repeated_windows, range_digests, window_ranges


@dataclass(frozen=True)
class Spans:
    """Removed byte ranges: range i is bytes ``starts[i]:ends[i]`` of document ``docs[i]`` (in that
    document's UTF-8 form), in document then text order, ``digests[i]`` the XXH64 of its bytes;
    ``windows`` marked, ``runs`` of equal windows."""

    docs: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    digests: np.ndarray
    windows: int = 0
    runs: int = 0
    copies: int = 0          # documents equal to an earlier one, removed whole without sorting them

    def __len__(self) -> int:
        return self.docs.shape[0]


def join(parts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """T (writable uint8: the suffix sorter needs a writable buffer) and document starts
    (``starts[d]``; ``starts[n]`` = len(T)); every document is followed by the separator."""
    n = len(parts)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(p) + 1 for p in parts], out=starts[1:])
    text = np.full(int(starts[-1]), SEPARATOR, dtype=np.uint8)
    for d, p in enumerate(parts):
        text[starts[d]:starts[d] + len(p)] = np.frombuffer(p, dtype=np.uint8)
    return text, starts


def suffix_array(text: np.ndarray) -> np.ndarray:
    """The suffix array of ``text`` (int32 below 2 GiB, else int64)."""
    from pydivsufsort import divsufsort  # noqa: PLC0415  (loads a shared library: only when used)

    if text.shape[0] == 0:
        return np.zeros(0, dtype=np.int32)
    if not text.flags.writeable:
        text = text.copy()
    return divsufsort(text)


def repeated_in_buffer(text: np.ndarray, starts: np.ndarray, min_length: int) -> Spans:
    """:func:`repeated_substrings` over a joined buffer (see :func:`join`)."""
    if not isinstance(min_length, (int, np.integer)) or isinstance(min_length, bool) or min_length < 1:
        raise ValueError(f"min_length must be an integer >= 1 (bytes), got {min_length!r}")
    if text.shape[0] == 0:
        e = np.zeros(0, dtype=np.int64)
        return Spans(e, e, e, np.zeros(0, dtype=np.uint64))
    sa = suffix_array(text)
    from numba import get_num_threads  # noqa: PLC0415

    marks, marked, runs = mark_repeated_windows(text, sa, int(min_length), get_num_threads())
    del sa
    d, s, e = window_ranges(text, marks, starts, int(min_length))
    del marks
    return Spans(d, s, e, range_digests(text, starts, d, s, e), int(marked), int(runs))


def repeated_in_parts(parts: Sequence[bytes], min_length: int) -> Spans:
    """:func:`repeated_substrings` over UTF-8 documents. A document equal to an earlier one is left
    out of the suffix array and removed whole when it has at least one window (``min_length`` bytes
    or more): every one of its windows occurs in the earlier copy, and every window elsewhere that
    occurs in it also occurs in that copy, earlier — so the result is the same, with the copies'
    bytes (often a tenth of a web crawl) never sorted."""
    first: dict = {}
    unique, copies = [], []
    for d, b in enumerate(parts):
        if first.setdefault(b, d) == d:
            unique.append(d)
        elif len(b) >= min_length:
            copies.append(d)
    if not copies:
        text, starts = join(parts)
        return repeated_in_buffer(text, starts, min_length)
    text, starts = join([parts[d] for d in unique])
    found = repeated_in_buffer(text, starts, min_length)
    del text
    unique_idx = np.asarray(unique, dtype=np.int64)
    cd = np.asarray(copies, dtype=np.int64)
    ce = np.asarray([len(parts[d]) for d in copies], dtype=np.int64)
    cdig = np.asarray([xxh64_bytes(parts[d]) for d in copies], dtype=np.uint64)
    docs = np.concatenate([unique_idx[found.docs], cd])
    order = np.argsort(docs, kind="stable")       # copies' single ranges join in document order
    return Spans(docs[order], np.concatenate([found.starts, np.zeros_like(cd)])[order],
                 np.concatenate([found.ends, ce])[order], np.concatenate([found.digests, cdig])[order],
                 found.windows, found.runs, len(copies))


def repeated_substrings(texts: Sequence[str], min_length: int = 100) -> Spans:
    """The byte ranges to remove so that no string of ≥ ``min_length`` bytes occurs twice (its
    first occurrence stays). Ranges are in each text's UTF-8 form (:func:`neardup.features.units.utf8`)."""
    return repeated_in_parts([utf8(t) for t in texts], min_length)


__all__ = ["Spans", "join", "repeated_in_buffer", "repeated_in_parts", "repeated_substrings", "suffix_array"]
