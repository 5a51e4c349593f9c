"""Exact repeated substrings across a corpus, from a suffix array (Lee et al., ACL 2022, "Deduplicating
Training Data Makes Language Models Better": ExactSubstr).

The documents are joined into one byte string T, each followed by the separator 0xFF (a byte UTF-8
never uses), and T is cut at document boundaries into one stretch per thread; the suffix array of
each stretch is built by libdivsufsort (Yuta Mori; through ``pydivsufsort``), O(n log n) worst
case and about 11 MB/s per thread on this project's 2-core reference machine, the stretches side
by side. Every window T[p:p+L] that lies in one document and equals a window starting earlier is
marked (:func:`~neardup.kernels.spans.mark_and_keep` inside a stretch,
:func:`~neardup.kernels.spans.mark_seen_in` across stretches); a document's removed ranges are the
union of its marked windows, trimmed to character boundaries
(:func:`~neardup.kernels.spans.window_ranges`). So every removed byte belongs to a string of ≥ L
bytes seen before, and every string of ≥ L bytes that occurs more than once is removed everywhere
but at its first occurrence. Memory: T (n bytes), the suffix arrays (4n bytes below 2 GiB of text
per stretch, else 8n), one mark byte per position, and while a stretch is marked one int per
position of it: ≈ 8n with two stretches.

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
from ..kernels.spans import SEPARATOR, mark_and_keep, mark_seen_in, range_digests, window_ranges


@dataclass(frozen=True)
class Spans:
    """Removed byte ranges: range i is bytes ``starts[i]:ends[i]`` of document ``docs[i]`` (in that
    document's UTF-8 form), in document then text order, ``digests[i]`` the XXH64 of its bytes;
    ``windows`` marked, ``parts``: suffix arrays built (stretches of the text)."""

    docs: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    digests: np.ndarray
    windows: int = 0
    parts: int = 0
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


#: below this many bytes of text one suffix array is built; above it, one per thread (see
#: :func:`repeated_in_buffer`)
PARALLEL_MIN_BYTES = 1 << 24


def _cut_points(starts: np.ndarray, parts: int) -> list[int]:
    """Byte offsets cutting T into ``parts`` stretches of whole documents, as even as the document
    boundaries allow (empty stretches dropped)."""
    n = int(starts[-1])
    cuts = [0]
    for i in range(1, parts):
        c = int(starts[min(int(np.searchsorted(starts, n * i / parts)), starts.shape[0] - 1)])
        if c > cuts[-1]:
            cuts.append(c)
    if n > cuts[-1]:
        cuts.append(n)
    return cuts


def repeated_in_buffer(text: np.ndarray, starts: np.ndarray, min_length: int, parts: int | None = None) -> Spans:
    """:func:`repeated_substrings` over a joined buffer (see :func:`join`).

    The buffer is cut at document boundaries into ``parts`` stretches (default: one per thread
    above :data:`PARALLEL_MIN_BYTES`, else one), each with its own suffix array, built at the same
    time in threads (libdivsufsort runs without the GIL). Inside a stretch, every window equal to an
    earlier one is marked as for one array (:func:`~neardup.kernels.spans.mark_and_keep`), which also
    leaves the stretch's *first occurrences* in suffix order. A window of stretch k not marked inside
    it is a repeat iff its bytes occur in an earlier stretch j, iff they are those of one of j's
    first occurrences: one merge of the two sorted lists per pair j < k finds exactly those
    (:func:`~neardup.kernels.spans.mark_seen_in`). So the marks, and the ranges, are those of one
    suffix array over everything; what changes is that the sorts, which are O(n log n) and
    single-threaded, run side by side on smaller inputs, and the cross-check costs one comparison
    of at most L bytes per first occurrence."""
    if not isinstance(min_length, (int, np.integer)) or isinstance(min_length, bool) or min_length < 1:
        raise ValueError(f"min_length must be an integer >= 1 (bytes), got {min_length!r}")
    if parts is not None and (not isinstance(parts, (int, np.integer)) or isinstance(parts, bool) or parts < 1):
        raise ValueError(f"parts must be an integer >= 1, got {parts!r}")
    if text.shape[0] == 0:
        e = np.zeros(0, dtype=np.int64)
        return Spans(e, e, e, np.zeros(0, dtype=np.uint64))
    from numba import get_num_threads  # noqa: PLC0415

    nt = get_num_threads()
    L = int(min_length)
    if parts is None:
        parts = nt if text.shape[0] >= PARALLEL_MIN_BYTES else 1
    if not text.flags.writeable:
        text = text.copy()
    cuts = _cut_points(starts, int(parts))
    pieces = [text[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    if len(pieces) == 1:
        arrays = [suffix_array(pieces[0])]
    else:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        pool = ThreadPoolExecutor(max_workers=min(nt, len(pieces)), thread_name_prefix="neardup-sort")
        try:
            arrays = list(pool.map(suffix_array, pieces))
        finally:     # a stop (Ctrl-C, SIGTERM) while sorting leaves at once; the command line then exits
            pool.shutdown(wait=False, cancel_futures=True)
    marks = np.empty(text.shape[0], dtype=np.int8)
    keeps, marked = [], 0
    for k, piece in enumerate(pieces):
        keep, m = mark_and_keep(piece, arrays[k], L, nt, marks[cuts[k]:cuts[k + 1]])
        arrays[k] = None                       # spent: its front now holds ``keep``
        keeps.append(keep)
        marked += int(m)
    del arrays
    for k in range(1, len(pieces)):
        later = keeps[k]
        for j in range(k):
            if later.shape[0] == 0:
                break
            found = mark_seen_in(text, keeps[j], cuts[j], later, cuts[k], L, marks, nt)
            if found:
                marked += int(found)
                later = later[marks[cuts[k] + later.astype(np.int64)] == 0]
        keeps[k] = later       # what a later stretch may still find here and nowhere earlier
    del keeps
    d, s, e = window_ranges(text, marks, starts, L)
    del marks
    return Spans(d, s, e, range_digests(text, starts, d, s, e), marked, len(pieces))


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
                 found.windows, found.parts, len(copies))


def repeated_substrings(texts: Sequence[str], min_length: int = 100) -> Spans:
    """The byte ranges to remove so that no string of ≥ ``min_length`` bytes occurs twice (its
    first occurrence stays). Ranges are in each text's UTF-8 form (:func:`neardup.features.units.utf8`)."""
    return repeated_in_parts([utf8(t) for t in texts], min_length)


__all__ = ["Spans", "join", "repeated_in_buffer", "repeated_in_parts", "repeated_substrings", "suffix_array"]
