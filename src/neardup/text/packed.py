"""A batch of documents that arrives packed: one UTF-8 buffer and document offsets, as a compiled
parser gives a column of strings (:func:`neardup.io.formats.jsonl.parse_jsonl_block`).

:func:`neardup.text.normalize.encode_batch` takes it as it is — no Python string per document is
made, and ASCII documents are not copied — and gives exactly what it gives for the same documents
as a list of ``str``. Everywhere else it is a sequence of ``str``, decoded on demand.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels.normalize import take_docs


class PackedTexts(Sequence):
    """``n`` documents: document ``i`` is ``buf[offsets[i]:offsets[i + 1]]``, well-formed UTF-8 (the
    maker's promise: its parser checked it). ``buf`` is a writable, contiguous uint8 array, never
    empty (what every kernel is compiled for); ``offsets`` int64 from 0."""

    __slots__ = ("buf", "offsets")

    def __init__(self, buf: np.ndarray, offsets: np.ndarray):
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.shape[0] and offsets[0] != 0:
            buf, offsets = buf[offsets[0]:offsets[-1]], offsets - offsets[0]
        if not buf.flags.writeable or not buf.flags.c_contiguous or buf.dtype != np.uint8:
            buf = np.ascontiguousarray(buf, dtype=np.uint8).copy()
        if buf.shape[0] == 0:
            buf = np.zeros(1, dtype=np.uint8)
        self.buf, self.offsets = buf, offsets

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            r = range(len(self))[i]
            if r.step == 1:
                return PackedTexts(self.buf, self.offsets[r.start:r.stop + 1] if len(r) else self.offsets[:1])
            return [self[k] for k in r]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("document index out of range")
        return self.buf[self.offsets[i]:self.offsets[i + 1]].tobytes().decode("utf-8")

    def __iter__(self):
        buf, offs = self.buf, self.offsets.tolist()
        for a, b in zip(offs, offs[1:]):
            yield buf[a:b].tobytes().decode("utf-8")

    def take(self, docs) -> PackedTexts:
        """Documents ``docs`` (positions), in that order, as a new batch."""
        docs = np.asarray(docs, dtype=np.int64)
        if docs.size and (docs.min() < 0 or docs.max() >= len(self)):
            raise IndexError("document index out of range")
        return PackedTexts(*take_docs(self.buf, self.offsets, docs))

    def __repr__(self) -> str:
        return f"PackedTexts({len(self)} documents, {int(self.offsets[-1])} bytes)"
