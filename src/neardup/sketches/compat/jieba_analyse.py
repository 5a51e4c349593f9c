"""The crawler's recipe: ``simhash.Simhash(jieba.analyse.extract_tags(text, topK=N, withWeight=True)).value``.

References: PyPI ``jieba`` 0.42 (``jieba/__init__.py`` ``Tokenizer.cut``, ``jieba/finalseg``,
``jieba/analyse/tfidf.py`` ``TFIDF.extract_tags``) and 1e0ng's PyPI ``simhash`` 2.1
(``Simhash.build_by_features``). The rules, each defined once:

* the cut: Python jieba's, HMM on (:func:`neardup.kernels.segment.rs_cut_into` with ``py``; where it
  differs from the ``jieba`` tokenizer's jieba-rs cut is said there), over jieba's ``dict.txt`` and HMM
  (:mod:`neardup.text.jieba_dict`; ln Σ freq over every line, as Python jieba sums it);
* keywords and weights: w = count · (idf / Σ counts), jieba's ``idf.txt`` and its median for unknown
  words (:func:`neardup.text.jieba_dict.jieba_median`), jieba's ``STOP_WORDS``
  (:func:`neardup.text.jieba_dict.jieba_analyse_stop_words`), pieces shorter than two characters after
  ``strip()`` dropped, ties in order of first occurrence, the first ``top_n`` (jieba's ``topK``: 20);
* the fingerprint: md5 of each keyword, 1e0ng's majority over float weights
  (:mod:`neardup.kernels.jieba_analyse`).

``stop_words`` (a path): ``jieba.analyse.set_stop_words(path)`` before the recipe — the file's words are
stop words besides jieba's (a piece is one when its ASCII-lowered text is), its lines read as
:func:`neardup.text.dictionaries.load_stop_words` reads them (``\n`` or ``\r\n`` ends, a byte-order mark
dropped; jieba also ends lines at ``\r``, ``\v``, ``\f``, U+001C–U+001E, U+0085, U+2028, U+2029 and keeps
a byte-order mark, so a file with those gives other stop words). A user dictionary and an IDF table are
refused (``jieba.load_userdict`` and ``set_idf_path`` change how jieba weighs and cuts every word: not
reproduced). A document without keywords (empty, punctuation, one-character words) has fingerprint 0, the
library's value for no features.
"""
from __future__ import annotations

import threading

import numpy as np

from ...kernels.jieba_analyse import analyse_batch, analyse_batch_serial, keywords_one, md5_tail64_batch
from ...text.dictionaries import load_stop_words
from ...text.jieba_dict import jieba_analyse_stop_words, tables
from ...text.jieba_dict import utf8_batch as _utf8_batch
from .yanyiwu import SERIAL_DOCS  # a few documents are signed without starting numba's thread pool

__all__ = ["TOP_K", "extract_tags", "simhash_batch", "simhash_batch_sizes", "keyword_hashes"]

TOP_K = 20                   # jieba.analyse.extract_tags's topK
_lock = threading.Lock()
_args: dict[str | None, tuple] = {}


def _kernel_args(stop_words=None) -> tuple:
    """The cut's tables (Python jieba's ln Σ freq), the IDF per trie node, its median, jieba's stop
    words as keys, and the trie's stop marks (the words of the file ``stop_words``) when one is given."""
    key = None if stop_words is None else load_stop_words(stop_words).sha256
    args = _args.get(key)
    if args is None:
        with _lock:
            args = _args.get(key)
            if args is None:
                t = tables(stop_words=stop_words)
                rs = list(t.rs_args())
                rs[7] = t.log_total_lines
                args = _args[key] = (*rs, t.idf, t.idf_median, _stop_keys(jieba_analyse_stop_words()), t.stop,
                                     stop_words is not None)
    return args


def _stop_keys(words) -> np.ndarray:
    """Each stop word (ASCII, at most 8 bytes) packed big-endian into a uint64, sorted."""
    keys = []
    for w in words:
        if not (w.isascii() and 0 < len(w) <= 8 and w == w.lower()):
            raise RuntimeError(f"jieba's stop word {w!r} is not lowercase ASCII of at most 8 characters, which the "
                               "compiled jieba-analyse mode assumes")
        keys.append(int.from_bytes(w.encode("ascii"), "big"))
    return np.array(sorted(keys), dtype=np.uint64)


def _top(top_n) -> int:
    top = TOP_K if top_n is None else int(top_n)
    if top < 1:
        raise ValueError(f"top_n must be at least 1, got {top_n}")
    return top


def simhash_batch_sizes(texts, top_n: int | None = None, stop_words=None) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints uint64, distinct keywords per text) of a batch of texts (str, or UTF-8 bytes);
    ``top_n`` None: jieba's topK, 20; ``stop_words``: a file, as ``set_stop_words``. Compiled, on all cores."""
    top = _top(top_n)
    args = _kernel_args(stop_words)
    buf, offsets, _ = _utf8_batch(texts)
    kernel = analyse_batch if offsets.shape[0] - 1 > SERIAL_DOCS else analyse_batch_serial
    return kernel(buf, offsets, top, *args)


def simhash_batch(texts, top_n: int | None = None, stop_words=None) -> np.ndarray:
    """Fingerprints of :func:`simhash_batch_sizes`."""
    return simhash_batch_sizes(texts, top_n, stop_words)[0]


def extract_tags(text: str | bytes, top_n: int | None = None, stop_words=None) -> list[tuple[str, float]]:
    """``jieba.analyse.extract_tags(text, topK=top_n, withWeight=True)`` by the compiled rules: the
    keywords the fingerprint folds, heaviest first."""
    buf, offsets, data = _utf8_batch([text])
    bs, be, wt, _ = keywords_one(buf, 0, int(offsets[1]), _top(top_n), *_kernel_args(stop_words))
    return [(data[a:b].decode("utf-8", "surrogatepass"), float(w)) for a, b, w in zip(bs.tolist(), be.tolist(),
                                                                                      wt.tolist())]


def keyword_hashes(words) -> np.ndarray:
    """The 64-bit hash 1e0ng/simhash folds for each word: the last 8 bytes of md5(UTF-8), big-endian."""
    buf, offsets, _ = _utf8_batch(words)
    return md5_tail64_batch(buf, offsets)
