"""Normalisation of raw text and packing of a batch into one UTF-8 buffer + offsets.

Steps (each switchable): optional Chinese script conversion (``convert="t2s"``: traditional →
simplified characters, ``"tw2sp"``: Taiwan → mainland phrases too; OpenCC, the ``neardup[zh]``
extra), Unicode NFKC (compatibility forms fold: full-width → ASCII, ligatures split), full case
folding (``str.casefold``: ß → ss), whitespace (every run of Unicode white space, as
``str.isspace`` defines it, becomes one space; leading/trailing space is dropped).
Lone surrogates (not encodable in UTF-8) become U+FFFD; ``bytes`` input is decoded as UTF-8
with invalid sequences replaced by U+FFFD. Both are counted in :attr:`Normalizer.replaced`.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np
from numba import njit

from .unicode import fold_tables

_SURROGATE = re.compile("[\ud800-\udfff]")
CONVERSIONS = ("t2s", "tw2s", "tw2sp", "hk2s")


@lru_cache(maxsize=8)
def _converter(name: str):
    try:
        import opencc  # noqa: PLC0415
    except ImportError:
        raise ImportError("Chinese script conversion needs OpenCC: pip install 'neardup[zh]'") from None
    return opencc.OpenCC(f"{name}.json")


def _nfkc_by_line(text: str) -> str:
    """NFKC applied to the lines that need it. Exact: a line feed is a starter that never
    composes with a neighbour, so normalisation commutes with splitting at it."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.isascii() and not unicodedata.is_normalized("NFKC", line):
            lines[i] = unicodedata.normalize("NFKC", line)
    return "\n".join(lines)


@dataclass
class Normalizer:
    """Configurable text normaliser; ``__call__`` maps one ``str`` (or UTF-8 ``bytes``) to ``str``."""

    nfkc: bool = True
    casefold: bool = True
    whitespace: bool = True
    convert: str | None = None
    replaced: int = field(default=0, compare=False, repr=False)

    def __post_init__(self):
        if self.convert is not None and self.convert not in CONVERSIONS:
            raise ValueError(f"convert must be one of {', '.join(CONVERSIONS)} or None, got {self.convert!r}")

    def __call__(self, text) -> str:
        return self.apply(_as_str(text, self), self.whitespace, True)

    def apply(self, text: str, whitespace: bool, ascii_case: bool, casefold: bool | None = None) -> str:
        """Normalise ``text``; ``ascii_case=False`` leaves an ASCII text's case to the caller
        (the batch path folds it in one pass over the buffer, or in the kernel);
        ``casefold=False`` skips case folding altogether (default: :attr:`casefold`)."""
        fold = self.casefold if casefold is None else casefold
        if self.convert is not None and not text.isascii():
            text = _converter(self.convert).convert(text)
        if text.isascii():
            if fold and ascii_case:
                text = text.lower()
        else:
            if self.nfkc and not unicodedata.is_normalized("NFKC", text):
                text = _nfkc_by_line(text)
            if fold:
                text = text.casefold()
        if whitespace:
            text = " ".join(text.split())
        return text

    def config(self) -> dict:
        return {"nfkc": self.nfkc, "casefold": self.casefold, "whitespace": self.whitespace, "convert": self.convert}


def _as_str(text, counter: Normalizer | None = None) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        s = raw.decode("utf-8", errors="replace")
        if counter is not None and "\ufffd" in s:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                counter.replaced += 1
        return s
    raise TypeError(f"expected str or UTF-8 bytes for a document, got {type(text).__name__}")


def to_utf8(text: str, counter: Normalizer | None = None) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates are replaced by U+FFFD (and counted)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        if counter is not None:
            counter.replaced += 1
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def kernel_fold_tables(normalizer: Normalizer | None) -> tuple[np.ndarray, np.ndarray]:
    """The word kernel's case-folding tables for ``normalizer`` (empty when it does not fold)."""
    return fold_tables(normalizer is not None and normalizer.casefold)


def encode_batch(texts: Sequence, normalizer: Normalizer | None,
                 whitespace: bool | None = None, kernel_folds: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Normalise and pack documents: returns ``(buf uint8, offsets int64[n+1])``.

    ``whitespace=False`` skips the whitespace step (callers whose tokens ignore white space).
    ``kernel_folds=True`` leaves case folding to the consumer (the word kernel folds while it
    scans, see :func:`neardup.kernels.shingle.word_scan`); otherwise the buffer comes back folded.
    An ASCII document is packed as it is (no per-document copy): only documents with non-ASCII
    text go through the Python normalisation steps. Packing is one pass in Arrow's C++ builder.
    Raises ``TypeError`` naming the position of the first document that is not text."""
    import pyarrow as pa  # noqa: PLC0415  (on first use: keeps `import neardup` light)

    parts = []
    append = parts.append
    ws = False
    fold_here = False
    if normalizer is not None:
        ws = normalizer.whitespace if whitespace is None else (whitespace and normalizer.whitespace)
        fold_here = normalizer.casefold and not kernel_folds
    for i, t in enumerate(texts):
        if type(t) is str:
            s = t
        else:
            try:
                s = _as_str(t, normalizer)
            except TypeError as exc:
                raise TypeError(f"document {i}: {exc}") from None
        if s.isascii():
            if ws:
                s = " ".join(s.split())
            append(s)  # ASCII letters are folded below, or by the kernel
            continue
        if normalizer is not None:
            s = normalizer.apply(s, ws, False, casefold=fold_here)
        append(to_utf8(s, normalizer))  # bytes: Arrow would otherwise cache a UTF-8 copy in the str
    arr = pa.array(parts, type=pa.large_binary())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64, count=len(parts) + 1)
    if offsets[-1] == 0:
        return np.zeros(1, dtype=np.uint8), offsets  # numba wants a non-empty buffer to index safely
    buf = np.frombuffer(data_buf, dtype=np.uint8, count=int(offsets[-1]))
    if fold_here:
        ascii_lower_inplace(buf)  # the buffer is Arrow's fresh copy: folding in place is safe
    return buf, offsets


@njit(cache=True)
def ascii_lower_inplace(buf):
    """A–Z → a–z over a UTF-8 buffer (bytes < 0x80 are always whole ASCII characters)."""
    for i in range(buf.shape[0]):
        b = buf[i]
        if b >= 65 and b <= 90:
            buf[i] = b + 32
