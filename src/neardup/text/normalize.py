"""Normalisation of raw text and packing of a batch into one UTF-8 buffer + offsets.

Steps (each switchable): Unicode NFKC (compatibility forms fold: full-width → ASCII, ligatures
split), full case folding (``str.casefold``: ß → ss), whitespace (every run of Unicode white
space becomes one space; leading/trailing space is dropped).
Lone surrogates (not encodable in UTF-8) become U+FFFD; ``bytes`` input is decoded as UTF-8
with invalid sequences replaced by U+FFFD. Both are counted in :attr:`Normalizer.replaced`.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

_WS = re.compile(r"\s+")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Normalizer:
    """Configurable text normaliser; ``__call__`` maps one ``str`` (or UTF-8 ``bytes``) to ``str``."""

    nfkc: bool = True
    casefold: bool = True
    whitespace: bool = True
    replaced: int = field(default=0, compare=False, repr=False)

    def __call__(self, text) -> str:
        text = _as_str(text, self)
        if self.nfkc and not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        if self.casefold:
            text = text.casefold()
        if self.whitespace:
            text = _WS.sub(" ", text).strip()
        return text

    def config(self) -> dict:
        return {"nfkc": self.nfkc, "casefold": self.casefold, "whitespace": self.whitespace}


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


def encode_batch(texts: Sequence, normalizer: Normalizer | None) -> tuple[np.ndarray, np.ndarray]:
    """Normalise and pack documents: returns ``(buf uint8, offsets int64[n+1])``.

    Raises ``TypeError`` naming the position of the first document that is not text."""
    parts = []
    append = parts.append
    for i, t in enumerate(texts):
        try:
            s = normalizer(t) if normalizer is not None else _as_str(t)
        except TypeError as exc:
            raise TypeError(f"document {i}: {exc}") from None
        append(to_utf8(s, normalizer))
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    if buf.shape[0] == 0:
        buf = np.zeros(1, dtype=np.uint8)  # numba wants a non-empty buffer to index safely
    return buf, offsets


def iter_normalized(texts: Iterable, normalizer: Normalizer) -> Iterable[str]:
    for t in texts:
        yield normalizer(t)
