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

import importlib.util
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pyarrow as pa

from .._arrays import arrow_strings, utf8_buffer
from ..errors import ConfigError
from ..kernels.normalize import ascii_lower_inplace, nfkc_unsafe_batch, non_ascii_docs, splice_docs
from .nfkc import nfkc as _nfkc
from .nfkc import nfkc_docs as _nfkc_docs
from .nfkc import sign_nfkc_checked
from .packed import PackedTexts
from .unicode import char_map, nfkc_check_tables, nfkc_clean_leads, nfkc_unsafe

_SURROGATE = re.compile("[\ud800-\udfff]")
CONVERSIONS = ("t2s", "tw2s", "tw2sp", "hk2s")


@lru_cache(maxsize=8)
def _converter(name: str):
    try:
        import opencc  # noqa: PLC0415  (the zh extra: --convert only)
    except ImportError:
        raise ImportError("Chinese script conversion needs OpenCC: pip install 'neardup[zh]'") from None
    return opencc.OpenCC(f"{name}.json")


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
            raise ConfigError(f"convert must be one of {', '.join(CONVERSIONS)} or None, got {self.convert!r}")

    def __call__(self, text) -> str:
        return self.apply(_as_str(text, self), self.whitespace, True)

    def apply(self, text: str, whitespace: bool, ascii_case: bool, casefold: bool | None = None,
              nfkc: bool | None = None) -> str:
        """Normalise ``text``; ``ascii_case=False`` leaves an ASCII text's case to the caller
        (the batch path folds it in one pass over the buffer, or in the kernel);
        ``casefold=False``/``nfkc=False`` skip those steps (default: :attr:`casefold`,
        :attr:`nfkc`)."""
        fold = self.casefold if casefold is None else casefold
        nfkc = self.nfkc if nfkc is None else nfkc
        if self.convert is not None and not text.isascii():
            text = _converter(self.convert).convert(text)
        if text.isascii():
            if fold and ascii_case:
                text = text.lower()
        else:
            if nfkc:
                text = _nfkc(text)
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


def kernel_char_map(normalizer: Normalizer | None, separators: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' per-character map for ``normalizer`` (see :func:`encode_batch`): the word
    kernel's, or with ``separators`` the one for kernels that read every character (the jieba cut)."""
    if normalizer is None:
        return char_map(False, False)
    return char_map(normalizer.nfkc, normalizer.casefold, separators)


def run_nfkc_checked(kernel, buf: np.ndarray, offsets: np.ndarray, normalizer: Normalizer | None, *args):
    """``kernel(buf, offsets, *args, check, unsafe, lead_clean)`` → (values, sizes) of a fused word
    kernel on a batch from :func:`encode_batch` with ``nfkc_checked=True``, the NFKC check on when
    ``normalizer`` applies NFKC (:func:`~neardup.text.nfkc.sign_nfkc_checked`)."""
    return sign_nfkc_checked(kernel, buf, offsets, args, normalizer is not None and normalizer.nfkc,
                             *nfkc_check_tables())


def encode_batch(texts: Sequence, normalizer: Normalizer | None,
                 whitespace: bool | None = None, kernel_maps: bool = False,
                 nfkc_checked: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Normalise and pack documents: returns ``(buf uint8, offsets int64[n+1])``.

    ``whitespace=False`` skips the whitespace step (callers whose tokens ignore white space).
    ``kernel_maps=True`` is for the word kernel, which applies :func:`kernel_char_map` while it
    scans: case folding is left to it, and so is NFKC for every document where NFKC is exact
    character by character (no :func:`~neardup.text.unicode.nfkc_unsafe` code point, which a
    kernel checks per document); the others are normalised here, as without the flag — or, with
    ``nfkc_checked=True``, by :func:`run_nfkc_checked` after the kernel flagged them as it scanned.
    An ASCII document is packed as it is (no per-document copy). Packing is one pass in Arrow's
    C++ builder. Raises ``TypeError`` naming the position of the first document that is not text."""
    parts = []
    append = parts.append
    ws = False
    fold_here = nfkc_here = False
    kernel_nfkc = False
    if normalizer is not None:
        ws = normalizer.whitespace if whitespace is None else (whitespace and normalizer.whitespace)
        fold_here = normalizer.casefold and not kernel_maps
        nfkc_here = normalizer.nfkc and not kernel_maps
        if kernel_maps and ws:
            raise ConfigError("kernel_maps is for the word kernel, which ignores white space: pass whitespace=False")
        kernel_nfkc = kernel_maps and normalizer.nfkc and not nfkc_checked
        unsafe = nfkc_unsafe() if kernel_nfkc else None
    if isinstance(texts, PackedTexts):
        if not ws:
            return _encode_packed(texts, normalizer, fold_here, nfkc_here, kernel_nfkc)
        texts = list(texts)             # white space is folded per document in Python, as below
    wide: list[int] = []             # kernel NFKC: the non-ASCII documents, checked in one call below
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
            s = normalizer.apply(s, ws, False, casefold=fold_here, nfkc=nfkc_here)
        if kernel_nfkc:
            wide.append(i)
        append(to_utf8(s, normalizer))  # bytes: Arrow would otherwise cache a UTF-8 copy in the str
    buf, offsets = _pack(parts)
    if wide:
        docs = np.asarray(wide, dtype=np.int64)
        flagged = docs[nfkc_unsafe_batch(buf, offsets, docs, unsafe, nfkc_clean_leads())]
        if flagged.size:                 # NFKC not exact per character there: normalised here, packed again
            for i in flagged.tolist():     # (a lone surrogate is U+FFFD here already: NFKC keeps both)
                parts[i] = to_utf8(_nfkc(bytes(parts[i]).decode("utf-8")))
            buf, offsets = _pack(parts)
    if fold_here and offsets[-1] > 0:
        ascii_lower_inplace(buf)  # the buffer is Arrow's fresh copy: folding in place is safe
    return buf, offsets


def _encode_packed(texts: PackedTexts, normalizer: Normalizer | None, fold_here: bool, nfkc_here: bool,
                   kernel_nfkc: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode_batch` of a batch already packed (no white-space step): the same bytes and
    offsets as for its documents as ``str``. ASCII documents stay where they are; only the
    documents with a byte >= 0x80 that a step changes are decoded, normalised in Python and spliced
    back (:func:`~neardup.kernels.normalize.splice_docs`, one copy)."""
    buf, offsets = texts.buf, texts.offsets
    if normalizer is None or offsets[-1] == 0:
        return buf, offsets
    python_step = normalizer.convert is not None or fold_here or nfkc_here
    wide = np.flatnonzero(non_ascii_docs(buf, offsets)) if (python_step or kernel_nfkc) else None
    if python_step and wide.size:
        new = [to_utf8(normalizer.apply(texts[i], False, False, casefold=fold_here, nfkc=nfkc_here), normalizer)
               for i in wide.tolist()]
        buf, offsets = _splice(buf, offsets, wide, new)
    if kernel_nfkc and wide.size:
        flagged = wide[nfkc_unsafe_batch(buf, offsets, wide, nfkc_unsafe(), nfkc_clean_leads())]
        if flagged.size:
            buf, offsets = _splice(buf, offsets, flagged, _nfkc_docs(buf, offsets, flagged))
    if fold_here:
        if buf is texts.buf:           # the caller's batch is not changed
            buf = buf.copy()
        ascii_lower_inplace(buf)
    return buf, offsets


def _splice(buf: np.ndarray, offsets: np.ndarray, docs: np.ndarray, new: list) -> tuple[np.ndarray, np.ndarray]:
    return splice_docs(buf, offsets, docs.astype(np.int64), *_pack(new))


# Past this many bytes packed by one process, pa.array (which imports pandas on its first call
# when pandas is installed: 0.2–0.5 s) is the cheaper packer; before it, Arrow's StringBuilder
# (no pandas; 45 ms against pa.array's 28 ms for 91 MB, measured) is.
_BUILDER_BYTES = 1 << 30
_built = 0
_FEW = 16                     # up to this many parts: joined in Python (6 µs for one document, 19 µs by Arrow)


@lru_cache(maxsize=1)
def _pandas_installed() -> bool:
    return importlib.util.find_spec("pandas") is not None


def _pack(parts: list) -> tuple[np.ndarray, np.ndarray]:
    """``(buf uint8, offsets int64[n+1])`` of str (ASCII) / bytes parts, in one Arrow buffer.

    ``pa.array`` imports pandas (when installed) on its first call in a process, which was half of
    a small run's wall time (each signing worker paid it); Arrow's ``StringBuilder`` does not, at
    0.19 ms more per MB. So a process packs with the builder until pandas is loaded anyway or it
    has packed ``_BUILDER_BYTES``. Both give the same bytes and offsets (the builder does not
    validate UTF-8: bytes pass as they are)."""
    global _built
    if len(parts) <= _FEW:        # a query or a few documents: a join is 3× faster than either builder
        enc = [p.encode("utf-8") if type(p) is str else p for p in parts]
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in enc], out=offsets[1:])
        return utf8_buffer(enc), offsets

    if _built < _BUILDER_BYTES and "pandas" not in sys.modules and _pandas_installed():
        try:
            _, off_buf, data_buf = arrow_strings(parts).buffers()
            offsets = np.frombuffer(off_buf, dtype=np.int32, count=len(parts) + 1).astype(np.int64)
            _built += int(offsets[-1])
        except (AttributeError, pa.ArrowException):    # no builder (older Arrow), or ≥ 2 GiB in one batch
            return _pack_array(pa, parts)
        if offsets[-1] == 0:
            return np.zeros(1, dtype=np.uint8), offsets
        return np.frombuffer(data_buf, dtype=np.uint8, count=int(offsets[-1])), offsets
    return _pack_array(pa, parts)


def _pack_array(pa, parts: list) -> tuple[np.ndarray, np.ndarray]:
    arr = pa.array(parts, type=pa.large_binary())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64, count=len(parts) + 1)
    if offsets[-1] == 0:
        return np.zeros(1, dtype=np.uint8), offsets  # numba wants a non-empty buffer to index safely
    return np.frombuffer(data_buf, dtype=np.uint8, count=int(offsets[-1])), offsets
