"""Feature weights for SimHash: term frequency, IDF tables (fitted or jieba's), top-N keywords.

IDF fitted on N documents: idf(t) = ln((1 + N) / (1 + df(t))) + 1 (smoothed; always > 0);
a feature never seen gets the value of df = 0. jieba's table: the idf column of jieba's
``analyse/idf.txt``; unknown words get the median of that column (as jieba does).
Features are keyed by the same 64-bit hashes the shingler produces, so lookups are one
vectorised ``searchsorted`` per batch.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources

import numpy as np
from numba import njit

from .._arrays import utf8_buffer
from ..errors import ConfigError
from ..kernels.shingle import token_shingles_batch
from ..kernels.simhash import key_slots
from ..text.dictionaries import MAX_IDF
from ..text.jieba_dict import analyse_keywords, cut_compiled_batch
from ..text.normalize import Normalizer, _converter, _pack
from ..text.tokenize import jieba_pieces, tokenize
from ..text.unicode import char_map, class_table
from .shingles import Features


def hash_words(words: list[str], seed: int = 0) -> np.ndarray:
    """Hashes of whole words exactly as the ``jieba`` tokenizer's unigram shingles hash them."""
    parts = [w.replace("\x1f", " ").encode("utf-8") for w in words]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    buf = utf8_buffer(parts)
    hashes, doc_off = token_shingles_batch(buf, offsets, np.zeros(1, np.uint8), *char_map(False, False), 1,
                                           np.uint64(seed), 1)
    out = np.zeros(len(parts), dtype=np.uint64)
    has = np.diff(doc_off) > 0
    out[has] = hashes
    return out


class IdfTable:
    """Sorted uint64 feature keys → IDF values, with a default for unknown features."""

    def __init__(self, keys: np.ndarray, values: np.ndarray, default: float):
        order = np.argsort(keys, kind="stable")
        self.keys = np.ascontiguousarray(keys[order], dtype=np.uint64)
        self.values = np.ascontiguousarray(values[order], dtype=np.float64)
        self.default = float(default)

    def __len__(self) -> int:
        return self.keys.shape[0]

    @property
    def slots(self) -> tuple:
        """(slots, shift): the keys in an open-addressing table for the compiled weighting
        (:func:`neardup.kernels.simhash.weighted_fold_batch`), made on first use."""
        s = self.__dict__.get("_slots")
        if s is None or s[0] is not self.keys:          # (built again if the keys were replaced)
            s = self.__dict__["_slots"] = (self.keys, *key_slots(self.keys))
        return s[1:]

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.keys, hashes)
        pos = np.minimum(pos, max(len(self) - 1, 0))
        found = (self.keys[pos] == hashes) if len(self) else np.zeros(hashes.shape, bool)
        return np.where(found, self.values[pos] if len(self) else 0.0, self.default)

    @classmethod
    def fit(cls, features: Features) -> IdfTable:
        """Smoothed IDF from document frequencies of a feature batch."""
        uniq = features.unique()
        n = len(uniq)
        keys, df = np.unique(uniq.hashes, return_counts=True)
        values = np.log((1.0 + n) / (1.0 + df)) + 1.0
        return cls(keys, values, np.log(1.0 + n) + 1.0)

    @classmethod
    def from_words(cls, idf: Mapping[str, float], default: float | None = None, seed: int = 0) -> IdfTable:
        """The table of ``word → idf``; every value (and ``default``) a finite number in [0,
        :data:`~neardup.text.dictionaries.MAX_IDF`] (ValueError naming the word otherwise)."""
        words = list(idf)
        vals = np.array([float(idf[w]) for w in words], dtype=np.float64)
        bad = np.flatnonzero(~((vals >= 0.0) & (vals <= MAX_IDF)))
        if bad.shape[0]:
            raise ConfigError(f"the idf of {words[bad[0]]!r} must be a finite number in [0, {MAX_IDF:g}], got "
                              f"{float(vals[bad[0]])!r}")
        if default is not None and not 0.0 <= default <= MAX_IDF:
            raise ConfigError(f"the default idf must be a finite number in [0, {MAX_IDF:g}], got {default!r}")
        keys = hash_words(words, seed)
        return cls(keys, vals, float(np.median(vals)) if default is None else default)

    @classmethod
    def jieba(cls, seed: int = 0) -> IdfTable:
        """jieba's IDF table (``jieba/analyse/idf.txt``), unknown words → median IDF."""
        return _jieba_table(seed)


@lru_cache(maxsize=4)
def _jieba_table(seed: int) -> IdfTable:
    words, vals = jieba_idf_words()
    keys = hash_words(words, seed)
    return IdfTable(keys, vals, float(np.median(vals)))


@lru_cache(maxsize=1)
def jieba_idf_words() -> tuple[list[str], np.ndarray]:
    """(words, idf values) of jieba's shipped IDF file, in file order."""
    text = resources.files("jieba.analyse").joinpath("idf.txt").read_text(encoding="utf-8")
    words, vals = [], []
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) == 2:
            words.append(parts[0])
            vals.append(float(parts[1]))
    return words, np.array(vals, dtype=np.float64)


@njit(cache=True)
def top_n_mask(weights, offsets, n):
    """Per document keep the n largest weights; ties keep the smaller feature (earlier in order)."""
    keep = np.zeros(weights.shape[0], dtype=np.bool_)
    for d in range(offsets.shape[0] - 1):
        s = offsets[d]
        e = offsets[d + 1]
        if e - s <= n:
            keep[s:e] = True
            continue
        order = np.argsort(-weights[s:e], kind="mergesort")
        for t in range(n):
            keep[s + order[t]] = True
    return keep


def fit_idf_words(batches, tokenizer: str = "jieba", compat: str | None = None, user_dict=None,
                  convert: str | None = None) -> tuple[list[str], np.ndarray, int]:
    """Document frequencies of words over a corpus, as IDF values of the ``word idf`` file format
    (``neardup idf fit``): (words sorted by code point, idf, documents).

    idf(w) = ln((1 + N) / (1 + df(w))) + 1, the smoothing of :meth:`IdfTable.fit`, so that a file
    fitted here and :meth:`SimHasher.fit_idf <neardup.sketches.simhash.SimHasher.fit_idf>` on the same
    corpus weigh every word of it alike. Words are those the signer looks up: ``compat="yanyiwu"``
    — cppjieba's segmentation of the raw text (after ``convert``), words of two or more characters;
    ``compat="jieba-analyse"`` — the keywords ``jieba.analyse.extract_tags`` finds in the raw text;
    otherwise the ``tokenizer``'s tokens of the normalised text. ``batches``: iterables of texts.
    A word holding white space cannot be written in the format and is left out (no tokenizer makes one)."""

    df: Counter = Counter()
    n = 0
    if compat == "yanyiwu":
        conv = _converter(convert).convert if convert else None
        for batch in batches:
            # a lone surrogate becomes '?' here: it could not be written to the table
            for words in cut_compiled_batch([conv(x) if conv else x for x in batch], user_dict, errors="replace"):
                df.update({w for w in words if len(w) > 1})
                n += 1
    elif compat == "jieba-analyse":
        conv = _converter(convert).convert if convert else None
        for batch in batches:
            for words in analyse_keywords([conv(x) if conv else x for x in batch]):
                df.update(words)
                n += 1
    elif compat is not None:
        raise ConfigError(f"compat={compat!r} has no IDF table (only yanyiwu and jieba-analyse weigh words by IDF)")
    elif tokenizer == "jieba" and user_dict is None:
        # the compiled cut over each batch; a document's distinct pieces as one bytes.split + set, and
        # only the corpus's distinct pieces decoded and checked for a word character

        norm = Normalizer(convert=convert)
        raw: Counter = Counter()
        for batch in batches:
            parts = [norm(text).encode("utf-8", "replace") for text in batch]   # (a lone surrogate: U+FFFD)
            if not parts:
                continue
            out, off = jieba_pieces(*_pack(parts), np.arange(len(parts), dtype=np.int64))
            data = out.tobytes()
            for d in range(len(parts)):
                raw.update(set(data[off[d]:off[d + 1]].split(b"\x1f")))
            n += len(parts)
        table = class_table()
        for piece, count in raw.items():
            word = piece.decode("utf-8")
            if any(table[ord(c)] for c in word):          # as jieba_tokens keeps them
                df[word] += count
    else:
        norm = Normalizer(convert=convert)
        for batch in batches:
            for text in batch:
                # a lone surrogate (possible in JSON text) cannot reach the segmenter: U+FFFD, as the signer's buffer
                text = norm(text).encode("utf-8", "replace").decode("utf-8")
                df.update(set(tokenize(text, tokenizer, user_dict)))
                n += 1
    words = sorted(w for w in df if w and not any(c.isspace() for c in w))
    counts = np.array([df[w] for w in words], dtype=np.float64)
    return words, np.log((1.0 + n) / (1.0 + counts)) + 1.0, n
