"""Tokenizers, Python-level view (one document → list of token strings).

The batch path never calls these: it runs :mod:`neardup.kernels.shingle` over a UTF-8 buffer.
These return the very same tokens as strings, for people (``neardup compare``) and for
compatibility modes that hash token text.

* ``word``  — maximal runs of letters/digits/marks of any script; every CJK ideograph, kana or
  hangul syllable is a token of its own; punctuation, symbols and spaces of every script split.
* ``char``  — code points (shingles of n of them are character n-grams).
* ``jieba`` — Chinese word segmentation (rjieba, jieba's dictionary and HMM for unknown words);
  tokens without any letter or digit (punctuation, spaces) are dropped.
* ``auto``  — what the quality table of the Chinese man pages favours (README, "Which tokenizer
  for Chinese"; :func:`signing_tokenizer`): ``word`` for shingles; for keywords (single words
  weighed by an IDF table or filtered by stop words) ``jieba`` on documents where at least ``AUTO_CJK_FRACTION`` of
  the word characters are CJK/kana/hangul, else ``word`` (:class:`~neardup.features.Shingler` with
  ``"auto"`` is that per-document rule).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._arrays import utf8_buffer
from ..errors import ConfigError
from ..kernels.segment import jieba_shingles_batch, rs_cut, rs_pieces_batch
from ..kernels.shingle import solo_fraction_batch, word_scan
from .dictionaries import load_user_dict, user_frequency
from .jieba_dict import tables
from .normalize import to_utf8
from .unicode import char_map, class_table

TOKENIZERS = ("word", "char", "jieba", "auto")
AUTO_CJK_FRACTION = 0.3


def keyword_features(ngram, weighting, stop_words) -> bool:
    """Features that are single words weighed by an IDF table or filtered by stop words (tables of
    jieba's words): where ``auto`` segments Chinese documents with jieba."""
    return ngram == 1 and (weighting == "tfidf" or stop_words is not None)


def signing_tokenizer(tokenizer: str, keywords: bool = False, user_dict=None) -> str:
    """The tokenizer a sketch signs with when the user asks for ``tokenizer``. ``auto`` follows the
    measured table (EVAL.md, the 2,500 zh_CN × zh_TW pairs of the Chinese man pages): as shingles,
    ``word`` tokens (each ideograph a token) separate the duplicates at least as well as jieba's
    words at every n (F1 with t2s conversion: 1.00 against 0.97 at n = 1, 0.36 against 0.28 at n = 3;
    equal with tw2sp) and sign about 15× faster, so ``auto`` shingles with ``word``. Keywords
    (``keywords``: :func:`keyword_features`) need words, so there ``auto`` stays the per-document
    rule: ``jieba`` for CJK documents, ``word`` for the rest.
    A ``user_dict`` (jieba's words) given where ``auto`` means ``word`` is refused."""
    check_tokenizer(tokenizer)
    if tokenizer != "auto" or keywords:
        return tokenizer
    if user_dict is not None:
        raise ConfigError("tokenizer 'auto' shingles with the word tokenizer (it separates duplicates at least as "
                          "well as jieba's words, measured); a user dictionary needs tokenizer='jieba' (or 'auto' "
                          "with keywords: ngram=1 with weighting='tfidf' or stop_words)")
    return "word"


def check_tokenizer(name: str) -> str:
    if name not in TOKENIZERS:
        raise ConfigError(f"unknown tokenizer {name!r}; expected one of {', '.join(TOKENIZERS)}")
    return name


@lru_cache(maxsize=1)
def _jieba():
    import rjieba  # noqa: PLC0415  (imported on first use: loading the dictionary costs ~0.3 s)

    return rjieba


_segmenters: dict = {}


def segmenter(user_dict=None):
    """rjieba's segmenter: the shared default one, or (``user_dict``: a path of jieba's ``word
    [freq] [tag]`` format, :func:`neardup.text.dictionaries.load_user_dict`) one with the user's
    words added as ``jieba.load_userdict`` adds them (no frequency: jieba suggests one that keeps
    the word whole). Cached per file content."""
    if user_dict is None:
        return _jieba()

    ud = load_user_dict(user_dict)
    seg = _segmenters.get(ud.sha256)
    if seg is None:
        seg = _jieba().Jieba()
        for entry in ud.entries:
            freq = user_frequency(entry)
            tag = entry[2] if entry[2] is not None else (entry[1] if freq is None else None)
            seg.add_word(entry[0], freq, tag)
        _segmenters[ud.sha256] = seg
    return seg


def jieba_cut(text: str, user_dict=None) -> list[str]:
    """rjieba's segmentation (HMM on), every piece: with jieba's own dictionary from the compiled
    cut (:func:`jieba_pieces`, tested piece for piece against rjieba), with ``user_dict`` from rjieba."""
    if user_dict is not None:
        return segmenter(user_dict).cut(text, True)

    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int32)
    ends = rs_cut(cp, *tables().rs_args()).tolist()
    return [text[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def jieba_pieces(buf: np.ndarray, offsets: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``"\\x1f".join(rjieba.cut(text, True))`` of documents ``docs`` of a UTF-8 batch, packed (bytes,
    offsets), by the compiled segmenter over jieba's dictionary (:func:`neardup.kernels.segment.rs_cut`:
    rjieba's pieces at about twice its speed, and no Python string per piece)."""

    return rs_pieces_batch(buf, offsets, docs, *tables().rs_args())


def jieba_shingles(buf: np.ndarray, offsets: np.ndarray, docs: np.ndarray, maps: tuple, table: np.ndarray, n: int,
                   seed) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes (and offsets per document) of the ``jieba`` tokenizer over documents ``docs``
    of a UTF-8 batch, the per-character map ``maps`` (:func:`~neardup.text.unicode.char_map`) applied
    first: :func:`neardup.kernels.segment.jieba_shingles_batch`."""

    return jieba_shingles_batch(buf, offsets, docs, *tables().rs_args(), *maps, table, n, seed)


def jieba_tokens(text: str, user_dict=None) -> list[str]:
    """rjieba segmentation (HMM on), keeping tokens that contain a word character."""
    table = class_table()
    return [t for t in jieba_cut(text, user_dict) if any(table[ord(c)] for c in t)]


def word_tokens(text: str) -> list[str]:
    data = to_utf8(text)
    buf = utf8_buffer(data)
    starts = np.empty(len(data) + 1, dtype=np.int64)
    ends = np.empty(len(data) + 1, dtype=np.int64)
    hashes = np.empty(len(data) + 1, dtype=np.uint64)
    m = word_scan(buf, 0, len(data), class_table(), *char_map(False, False), starts, ends, hashes, np.uint64(0))
    return [data[s:e].decode("utf-8", errors="replace") for s, e in zip(starts[:m], ends[:m])]


def cjk_fraction(text: str) -> float:
    data = to_utf8(text)
    buf = utf8_buffer(data)
    return float(solo_fraction_batch(buf, np.array([0, len(data)], dtype=np.int64), class_table())[0])


def resolve_auto(text: str) -> str:
    return "jieba" if cjk_fraction(text) >= AUTO_CJK_FRACTION else "word"


def tokenize(text: str, tokenizer: str = "word", user_dict=None) -> list[str]:
    """Tokens of an already normalised ``text`` (``user_dict``: for the ``jieba`` tokenizer)."""
    check_tokenizer(tokenizer)
    if tokenizer == "auto":
        tokenizer = resolve_auto(text)
    if tokenizer == "word":
        return word_tokens(text)
    if tokenizer == "char":
        return list(text)
    return jieba_tokens(text, user_dict)
