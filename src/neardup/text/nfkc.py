"""Unicode NFKC in plain Python (``unicodedata``), for the documents the word kernels flag as not
exact character by character (:func:`sign_nfkc_checked`); no kernel import."""
from __future__ import annotations

import unicodedata

import numpy as np

from .._arrays import utf8_buffer


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, applied only to the lines that need it."""
    return text if unicodedata.is_normalized("NFKC", text) else nfkc_by_line(text)


def nfkc_by_line(text: str) -> str:
    """NFKC applied to the lines that need it. Exact: a line feed is a starter that never
    composes with a neighbour, so normalisation commutes with splitting at it."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.isascii() and not unicodedata.is_normalized("NFKC", line):
            lines[i] = unicodedata.normalize("NFKC", line)
    return "\n".join(lines)


def nfkc_docs(buf: np.ndarray, offsets: np.ndarray, docs: np.ndarray) -> list[bytes]:
    """Documents ``docs`` of a packed batch (well-formed UTF-8) through Python's NFKC, as UTF-8
    (:func:`nfkc_utf8` each)."""
    return [nfkc_utf8(buf[offsets[i]:offsets[i + 1]]) for i in docs.tolist()]


def nfkc_utf8(raw: np.ndarray) -> bytes:
    """:func:`nfkc` of a well-formed UTF-8 document (uint8 array), as UTF-8: only its lines holding a
    byte ≥ 0x80 are decoded, checked and normalised, found with NumPy rather than by splitting the
    whole text (a 2 MB document with a hundred such lines: 10 → 3 ms). The same bytes as
    ``nfkc(raw.decode()).encode()``: the text is NFKC exactly when each line is (a line feed never
    composes), an ASCII line is NFKC, and text decoded from well-formed UTF-8 holds no lone
    surrogate, nor does NFKC make one."""
    wide = np.flatnonzero(raw >= 0x80)
    data = raw.tobytes()
    if wide.size == 0:
        return data
    bounds = np.concatenate(([-1], np.flatnonzero(raw == 0x0A), [raw.shape[0]]))     # around each line
    lines = np.unique(np.searchsorted(bounds, wide) - 1)      # line k: bytes bounds[k] + 1 … bounds[k + 1]
    starts, ends = bounds[lines] + 1, bounds[lines + 1]
    parts = []
    at = 0
    for a, b in zip(starts.tolist(), ends.tolist()):
        line = data[a:b].decode("utf-8")
        if not unicodedata.is_normalized("NFKC", line):
            parts += (data[at:a], unicodedata.normalize("NFKC", line).encode("utf-8"))
            at = b
    if not parts:
        return data
    parts.append(data[at:])
    return b"".join(parts)


def sign_nfkc_checked(kernel, buf: np.ndarray, offsets: np.ndarray, args: tuple, check: bool,
                      unsafe: np.ndarray, leads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``kernel(buf, offsets, *args, check, unsafe, leads)`` → (values, sizes) of a fused word
    kernel. With ``check`` the kernel checks NFKC as it scans and gives size −1 to a document where
    NFKC is not exact per character; those documents are normalised here (:func:`nfkc_docs`), signed
    again unchecked and put in place. The same values and sizes as normalising first
    (:func:`~neardup.kernels.normalize.nfkc_unsafe_batch`), without that pass over the text."""
    values, sizes = kernel(buf, offsets, *args, check, unsafe, leads)
    if check:
        redo = np.flatnonzero(sizes < 0)
        if redo.size:
            new = nfkc_docs(buf, offsets, redo)
            new_offsets = np.zeros(len(new) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in new], out=new_offsets[1:])
            values[redo], sizes[redo] = kernel(utf8_buffer(new), new_offsets, *args, False, unsafe, leads)
    return values, sizes
