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

import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numba
import numpy as np

from .._arrays import physical_memory, release_pages, sorted_unique
from ..errors import ConfigError
from ..features.units import utf8
from ..kernels.spans import (
    equal_documents,
    gather_documents,
    mark_and_keep,
    mark_seen_in,
    range_digests,
    window_ranges,
)


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


def _check_length(min_length) -> int:
    if not isinstance(min_length, (int, np.integer)) or isinstance(min_length, bool) or min_length < 1:
        raise ConfigError(f"min_length must be an integer >= 1 (bytes), got {min_length!r}")
    return int(min_length)


def _pack(parts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``(buf, offsets)``: the parts back to back in a writable, never empty uint8 array."""
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    buf = np.zeros(max(1, int(offsets[-1])), dtype=np.uint8)
    buf[:offsets[-1]] = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return buf, offsets


def _starts(lens: np.ndarray) -> np.ndarray:
    """Where each document starts in T (each followed by the separator); the last entry is len(T)."""
    starts = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens + 1, out=starts[1:])
    return starts


def join(parts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """T (writable uint8: the suffix sorter needs a writable buffer) and document starts
    (``starts[d]``; ``starts[n]`` = len(T)); every document is followed by the separator."""
    buf, offsets = _pack(parts)
    starts = _starts(np.diff(offsets))
    text = np.empty(int(starts[-1]), dtype=np.uint8)
    gather_documents(buf, offsets, np.arange(len(parts), dtype=np.int64), starts, text)
    return text, starts


def suffix_array(text: np.ndarray) -> np.ndarray:
    """The suffix array of ``text`` (int32 below 2 GiB, else int64)."""
    from pydivsufsort import divsufsort  # noqa: PLC0415  (loads libdivsufsort, 2.5 ms: only --method substrings sorts)

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
    _check_length(min_length)
    if parts is not None and (not isinstance(parts, (int, np.integer)) or isinstance(parts, bool) or parts < 1):
        raise ConfigError(f"parts must be an integer >= 1, got {parts!r}")
    if text.shape[0] == 0:
        e = np.zeros(0, dtype=np.int64)
        return Spans(e, e, e, np.zeros(0, dtype=np.uint64))
    nt = numba.get_num_threads()
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


#: bytes of memory per byte of text when T is sorted whole (:func:`repeated_in_buffer`): T, the
#: suffix arrays (4), the marks (1) and the capped PLCP of the stretch being marked (4)
IN_MEMORY_FACTOR = 10


def spans_memory_bytes() -> int:
    """The memory a substrings search may take: half of physical memory, 8 GiB when ``sysconf``
    does not answer. Its results do not depend on it."""
    phys = physical_memory()
    return phys // 2 if phys > 0 else 8 << 30


def _copies(buf: np.ndarray, offsets: np.ndarray, docs: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``copy_of[i]``: the first position j < i of ``docs`` whose document (``lens[i]`` bytes) holds
    the same bytes as document ``docs[i]``, or −1. Equal documents are found by (XXH64, length),
    then compared byte for byte (a group whose hashes collide falls back to its bytes as dictionary
    keys)."""
    n = docs.shape[0]
    copy_of = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return copy_of
    dig = range_digests(buf, offsets, docs, np.zeros(n, dtype=np.int64), lens)
    order = np.lexsort((np.arange(n), lens, dig))
    sd, sl = dig[order], lens[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (sd[1:] != sd[:-1]) | (sl[1:] != sl[:-1])
    head = order[np.maximum.accumulate(np.where(new, np.arange(n), 0))]   # each group's first
    member = np.flatnonzero(~new)
    if member.shape[0] == 0:
        return copy_of
    a, b = order[member], head[member]
    same = equal_documents(buf, offsets, docs[a], docs[b])
    copy_of[a[same]] = b[same]
    for g in sorted_unique(b[~same]).tolist():      # a 64-bit collision inside a group: exact keys
        first: dict = {}
        for i in order[head == g].tolist():
            key = bytes(buf[offsets[docs[i]]:offsets[docs[i] + 1]])
            j = first.setdefault(key, i)
            copy_of[i] = -1 if j == i else j
    return copy_of


def repeated_in_documents(buf: np.ndarray, offsets: np.ndarray, docs, min_length: int,
                          memory: int | None = None, folder: str | None = None) -> Spans:
    """:func:`repeated_substrings` over the documents ``docs`` (in that order; document d is bytes
    ``offsets[d]:offsets[d+1]`` of ``buf``, a uint8 array that may be a map of a file). Range i of
    the result is in document ``docs[spans.docs[i]]``.

    A document equal to an earlier one is left out of the suffix arrays and removed whole when it
    has at least one window (``min_length`` bytes or more): every one of its windows occurs in the
    earlier copy, and every window elsewhere that occurs in it also occurs in that copy, earlier —
    so the result is the same, with the copies' bytes (often a tenth of a web crawl) never sorted.

    The others are sorted in memory (:func:`repeated_in_buffer`) when :data:`IN_MEMORY_FACTOR` times
    their bytes fit ``memory`` (default :func:`spans_memory_bytes`), else a stretch at a time
    (:func:`repeated_by_stretches`): the same ranges either way."""
    L = _check_length(min_length)
    docs = np.asarray(docs, dtype=np.int64)
    lens = offsets[docs + 1] - offsets[docs]
    copy_of = _copies(buf, offsets, docs, lens)
    release_pages(buf)              # (a map of the text file: its pages are the system's again)
    unique = np.flatnonzero(copy_of < 0)
    copies = np.flatnonzero((copy_of >= 0) & (lens >= L))
    starts = _starts(lens[unique])
    budget = spans_memory_bytes() if memory is None else int(memory)
    if int(starts[-1]) * IN_MEMORY_FACTOR <= budget:
        text = np.empty(int(starts[-1]), dtype=np.uint8)
        gather_documents(buf, offsets, docs[unique], starts, text)
        release_pages(buf)
        found = repeated_in_buffer(text, starts, L)
        del text
    else:
        found = repeated_by_stretches(buf, offsets, docs[unique], L, budget, folder)
    if copies.shape[0] == 0:
        return replace(found, docs=unique[found.docs])
    ce = lens[copies]
    cdig = range_digests(buf, offsets, docs[copies], np.zeros_like(ce), ce)
    out_docs = np.concatenate([unique[found.docs], copies])
    order = np.argsort(out_docs, kind="stable")       # copies' single ranges join in document order
    return Spans(out_docs[order], np.concatenate([found.starts, np.zeros_like(ce)])[order],
                 np.concatenate([found.ends, ce])[order], np.concatenate([found.digests, cdig])[order],
                 found.windows, found.parts, int(copies.shape[0]))


def _stretch_cuts(lens: np.ndarray, limit: int) -> list[int]:
    """Document indices cutting T (document i takes ``lens[i] + 1`` bytes) into stretches of at most
    ``limit`` bytes each; a document longer than that is a stretch of its own."""
    cuts, size = [0], 0
    for i, n in enumerate((lens + 1).tolist()):
        if size and size + n > limit:
            cuts.append(i)
            size = 0
        size += n
    if cuts[-1] < lens.shape[0]:
        cuts.append(int(lens.shape[0]))
    return cuts


def repeated_by_stretches(buf: np.ndarray, offsets: np.ndarray, docs: np.ndarray, min_length: int,
                          memory: int, folder: str | None = None) -> Spans:
    """:func:`repeated_in_buffer` for text larger than memory: T (documents ``docs`` of ``buf``,
    each followed by the separator) is never built whole. Cut at document boundaries into
    stretches of S = ``memory`` / (5·t + 5) bytes (t threads; at most 2 GiB, for 4-byte suffix
    arrays), it is sorted t stretches at a time (the text and suffix array of each, 5S, and the
    capped PLCP and marks of the one being marked, 5S); each stretch's marks and first occurrences
    (:func:`~neardup.kernels.spans.mark_and_keep`) go to files in ``folder``. Then stretch k, with
    each earlier stretch j in turn beside it in one buffer, is cross-checked by the same merge as in
    memory (:func:`~neardup.kernels.spans.mark_seen_in`), and its ranges are taken from its final
    marks. Memory: about 11S at any time (two stretches, the marks of one and both lists of first
    occurrences), whatever the corpus's size. Cost with P stretches: the sorts as in memory; the
    cross-check reads P(P−1)/2 stretches (from ``buf``, a map of the run's text file, so from the
    system's cache when it fits there, else from disk) and compares at most L bytes per first
    occurrence of each pair; every range is the same as from one suffix array."""
    L = _check_length(min_length)
    nt = numba.get_num_threads()
    lens = offsets[docs + 1] - offsets[docs]
    starts = _starts(lens)
    cuts = _stretch_cuts(lens, max(1, min(int(memory) // (5 * nt + 5), (1 << 31) - 1)))
    parts = len(cuts) - 1
    sizes = np.diff(starts[cuts]).tolist()           # bytes of each stretch

    def stretch(k: int, out: np.ndarray | None = None) -> np.ndarray:
        a, b = cuts[k], cuts[k + 1]
        out = np.empty(sizes[k], dtype=np.uint8) if out is None else out[:sizes[k]]
        gather_documents(buf, offsets, docs[a:b], starts[a:b + 1], out)
        release_pages(buf)
        return out

    rd, rs, re, dg, marked = [], [], [], [], 0
    with tempfile.TemporaryDirectory(dir=folder, prefix="neardup-substrings-") as tmp:
        marks_path = [os.path.join(tmp, f"marks-{k}.i8") for k in range(parts)]
        keep_path = [os.path.join(tmp, f"keep-{k}.sa") for k in range(parts)]
        dtype = []
        pool = ThreadPoolExecutor(max_workers=nt, thread_name_prefix="neardup-sort")
        try:
            for g in range(0, parts, nt):
                group = list(range(g, min(parts, g + nt)))
                texts = [stretch(k) for k in group]
                arrays = list(pool.map(suffix_array, texts))
                for i, k in enumerate(group):
                    marks = np.empty(texts[i].shape[0], dtype=np.int8)
                    keep, m = mark_and_keep(texts[i], arrays[i], L, nt, marks)
                    arrays[i] = texts[i] = None
                    marked += int(m)
                    marks.tofile(marks_path[k])
                    keep.tofile(keep_path[k])
                    dtype.append(keep.dtype)
                    del marks, keep
        finally:     # a stop (Ctrl-C, SIGTERM) while sorting leaves at once; the command line then exits
            pool.shutdown(wait=False, cancel_futures=True)
        both = np.empty(2 * max(sizes, default=0), dtype=np.uint8)
        for k in range(parts):
            size = sizes[k]
            text = stretch(k, both)
            marks = np.fromfile(marks_path[k], dtype=np.int8)
            later = np.fromfile(keep_path[k], dtype=dtype[k])
            for j in range(k):
                if later.shape[0] == 0:
                    break
                wide = stretch(j, both[size:])
                earlier = np.fromfile(keep_path[j], dtype=dtype[j]).astype(later.dtype, copy=False)
                found = mark_seen_in(both[:size + wide.shape[0]], earlier, size, later, 0, L, marks, nt)
                del earlier
                if found:
                    marked += int(found)
                    later = later[marks[later.astype(np.int64)] == 0]
            if k + 1 < parts:        # what a later stretch may still find here and nowhere earlier
                later.tofile(keep_path[k])
            del later
            local = starts[cuts[k]:cuts[k + 1] + 1] - starts[cuts[k]]
            d, s, e = window_ranges(text, marks, local, L)
            dg.append(range_digests(text, local, d, s, e))
            rd.append(d + cuts[k])
            rs.append(s)
            re.append(e)
            del marks
    if not rd:
        z = np.zeros(0, dtype=np.int64)
        return Spans(z, z, z, np.zeros(0, dtype=np.uint64), marked, parts)
    return Spans(np.concatenate(rd), np.concatenate(rs), np.concatenate(re), np.concatenate(dg), marked, parts)


def repeated_in_parts(parts: Sequence[bytes], min_length: int, memory: int | None = None,
                      folder: str | None = None) -> Spans:
    """:func:`repeated_in_documents` over UTF-8 documents given as bytes."""
    buf, offsets = _pack(parts)
    return repeated_in_documents(buf, offsets, np.arange(len(parts)), min_length, memory, folder)


def repeated_substrings(texts: Sequence[str], min_length: int = 100) -> Spans:
    """The byte ranges to remove so that no string of ≥ ``min_length`` bytes occurs twice (its
    first occurrence stays). Ranges are in each text's UTF-8 form (:func:`neardup.features.units.utf8`)."""
    return repeated_in_parts([utf8(t) for t in texts], min_length)


__all__ = ["IN_MEMORY_FACTOR", "Spans", "join", "repeated_by_stretches", "repeated_in_buffer", "repeated_in_documents",
           "repeated_in_parts", "repeated_substrings", "spans_memory_bytes", "suffix_array"]
