"""Unicode NFKC in plain Python (``unicodedata``), for the documents the word kernels flag as not
exact character by character (:func:`neardup.text.normalize.run_nfkc_checked`); no kernel import, so
the ahead-of-time signer (:mod:`neardup.engines.aot_sign`) uses the same code."""
from __future__ import annotations

import unicodedata

import numpy as np


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
    """Documents ``docs`` of a packed batch (well-formed UTF-8) through Python's NFKC, as UTF-8.
    (Text decoded from well-formed UTF-8 holds no lone surrogate, and NFKC makes none, so the
    encoding cannot fail.)"""
    return [nfkc(buf[offsets[i]:offsets[i + 1]].tobytes().decode("utf-8")).encode("utf-8") for i in docs.tolist()]
