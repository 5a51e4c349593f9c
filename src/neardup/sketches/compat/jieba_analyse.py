r"""The crawler's recipe: ``simhash.Simhash(jieba.analyse.extract_tags(text, topK=N, withWeight=True)).value``.

References: PyPI ``jieba`` 0.42 (``jieba/__init__.py`` ``Tokenizer.cut``, ``jieba/finalseg``,
``jieba/analyse/tfidf.py`` ``TFIDF.extract_tags``) and 1e0ng's PyPI ``simhash`` 2.1
(``Simhash.build_by_features``). The rules, each defined once:

* the cut: Python jieba's, HMM on (:func:`neardup.kernels.segment.rs_cut_into` with ``py``; where it
  differs from the ``jieba`` tokenizer's jieba-rs cut is said there), over jieba's ``dict.txt`` and HMM
  (:mod:`neardup.text.jieba_dict`; ln Σ freq over every line, as Python jieba sums it);
* keywords and weights: w = count · (idf / Σ counts), jieba's ``idf.txt`` and its median for unknown
  words (:func:`neardup.text.dictionaries.jieba_median`), jieba's ``STOP_WORDS``
  (:func:`neardup.text.jieba_dict.jieba_analyse_stop_words`), pieces shorter than two characters after
  ``strip()`` dropped, ties in order of first occurrence, the first ``top_n`` (jieba's ``topK``: 20);
* the fingerprint: md5 of each keyword, 1e0ng's majority over float weights
  (:mod:`neardup.kernels.jieba_analyse`).

``stop_words`` (a path): ``jieba.analyse.set_stop_words(path)`` before the recipe — the file's words are
stop words besides jieba's (a piece is one when its ASCII-lowered text is), its lines read as
:func:`neardup.text.dictionaries.load_stop_words` reads them (``\n`` or ``\r\n`` ends, a byte-order mark
dropped; jieba also ends lines at ``\r``, ``\v``, ``\f``, U+001C–U+001E, U+0085, U+2028, U+2029 and keeps
a byte-order mark, so a file with those gives other stop words). ``idf`` (a path):
``jieba.analyse.set_idf_path(path)`` — the file's table and its median (a table ``neardup idf fit``
wrote, whose first line jieba reads as one more word, has the same median either way), read as
:func:`neardup.text.dictionaries.load_idf` reads it (jieba would fail on a blank or malformed line, which
neardup refuses naming it). A user dictionary is refused (``jieba.load_userdict`` changes the cut and the
dictionary's total: not reproduced). A document without keywords (empty, punctuation, one-character
words) has fingerprint 0, the library's value for no features.
"""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ...kernels.jieba_analyse import analyse_batch, analyse_batch_serial, keywords_one, md5_tail64_batch
from ...text.jieba_dict import analyse_args, analyse_keywords
from ...text.jieba_dict import utf8_batch as _utf8_batch
from .yanyiwu import SERIAL_DOCS  # a few documents are signed without starting numba's thread pool

__all__ = ["TOP_K", "extract_tags", "keywords", "simhash_batch", "simhash_batch_sizes", "keyword_hashes"]

TOP_K = 20                   # jieba.analyse.extract_tags's topK
keywords = analyse_keywords  # every distinct keyword of each text (what idf fit --compat jieba-analyse counts)


def _top(top_n) -> int:
    top = TOP_K if top_n is None else int(top_n)
    if top < 1:
        raise ConfigError(f"top_n must be at least 1, got {top_n}")
    return top


def simhash_batch_sizes(texts, top_n: int | None = None, stop_words=None, idf=None) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints uint64, distinct keywords per text) of a batch of texts (str, or UTF-8 bytes);
    ``top_n`` None: jieba's topK, 20; ``stop_words``, ``idf``: files, as ``set_stop_words`` and
    ``set_idf_path`` take them. Compiled, on all cores."""
    top = _top(top_n)
    args = analyse_args(stop_words, idf)
    buf, offsets, _ = _utf8_batch(texts)
    kernel = analyse_batch if offsets.shape[0] - 1 > SERIAL_DOCS else analyse_batch_serial
    return kernel(buf, offsets, top, *args)


def simhash_batch(texts, top_n: int | None = None, stop_words=None, idf=None) -> np.ndarray:
    """Fingerprints of :func:`simhash_batch_sizes`."""
    return simhash_batch_sizes(texts, top_n, stop_words, idf)[0]


def extract_tags(text: str | bytes, top_n: int | None = None, stop_words=None, idf=None) -> list[tuple[str, float]]:
    """``jieba.analyse.extract_tags(text, topK=top_n, withWeight=True)`` by the compiled rules: the
    keywords the fingerprint folds, heaviest first."""
    buf, offsets, data = _utf8_batch([text])
    bs, be, wt, _ = keywords_one(buf, 0, int(offsets[1]), _top(top_n), *analyse_args(stop_words, idf))
    return [(data[a:b].decode("utf-8", "surrogatepass"), float(w)) for a, b, w in zip(bs.tolist(), be.tolist(),
                                                                                      wt.tolist())]


def keyword_hashes(words) -> np.ndarray:
    """The 64-bit hash 1e0ng/simhash folds for each word: the last 8 bytes of md5(UTF-8), big-endian."""
    buf, offsets, _ = _utf8_batch(words)
    return md5_tail64_batch(buf, offsets)
