"""SimHash (Charikar 2002; Manku, Jain, Das Sarma 2007): a 64-bit fingerprint of weighted features.

f = Σ_i w_i · s(h_i) with s(h)_j = +1 if bit j of h is set else −1; fingerprint bit j = [f_j > 0].
For two documents, P[bit differs] ≈ θ/π (θ the angle between their weighted feature vectors), so
near-duplicates have small Hamming distance; Manku et al. use f = 64 bits and k = 3.

Weighting (``weighting=``): ``"uniform"`` (each distinct feature 1), ``"tf"`` (count in the
document, default), ``"tfidf"`` (count × IDF from an :class:`IdfTable`: ``idf="jieba"`` for
jieba's Chinese table, a path of a ``word idf`` file such as ``neardup idf fit`` writes, or fitted
on a corpus with :meth:`SimHasher.fit_idf`). ``top_n`` keeps only the N heaviest features
(keywords) per document. ``stop_words`` (a file, one word per line) drops those words before
weighting; ``user_dict`` (jieba's format) adds words to the ``jieba`` tokenizer's dictionary.
The words of these files pass through the hasher's normalizer, as document text does.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .._checks import as_int
from ..errors import ConfigError
from ..features.shingles import Features, Shingler
from ..features.weights import IdfTable, hash_words, top_n_mask
from ..kernels.simhash import (
    fold_batch,
    fold_unit_batch,
    hamming_many,
    popcount64,
    simhash_word_batch,
    weighted_fold_batch,
)
from ..text.dictionaries import idf_tokenizer_mismatch, load_idf, load_stop_words
from ..text.jieba_dict import tables
from ..text.normalize import Normalizer, _converter, encode_batch, kernel_char_map, run_nfkc_checked
from ..text.tokenize import keyword_features, signing_tokenizer
from ..text.unicode import class_table
from .compat import jieba_analyse, simhash_1e0ng, yanyiwu

WEIGHTINGS = ("uniform", "tf", "tfidf")
_NO_IDF = IdfTable(np.zeros(0, np.uint64), np.zeros(0, np.float64), 0.0)    # (weightings without IDF)


def hamming(a: int, b: int) -> int:
    """Number of differing bits d of two 64-bit fingerprints. Where neardup reports a SimHash
    similarity (``find_simhash_duplicates``, ``clusters.jsonl`` and ``pairs.parquet`` of
    ``--method simhash --bits k``) it is 1 − d/64: 1.0 for equal fingerprints, 0.953125 at 3 bits."""
    return (int(a) ^ int(b)).bit_count() if hasattr(int, "bit_count") else bin(int(a) ^ int(b)).count("1")


def hamming_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return hamming_many(np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(b, dtype=np.uint64))


def is_near(a: int, b: int, k: int = 3) -> bool:
    """``hamming(a, b) <= k``, stopping as soon as the count passes k (clears the lowest set bit
    of a ^ b once per step: at most k + 1 steps)."""
    if k < 0:
        raise ConfigError(f"k must be >= 0, got {k}")
    x = (int(a) ^ int(b)) & 0xFFFFFFFFFFFFFFFF
    for _ in range(k + 1):
        if x == 0:
            return True
        x &= x - 1
    return x == 0


class SimHasher:
    """Text → 64-bit SimHash fingerprints.

    Defaults: word tokens, 3-gram shingles, term-frequency weights, all features, hash seed 0.
    Compare two with :func:`hamming` (d bits differ); the similarity neardup reports for the classic
    rule is 1 − d/64, so "within k bits" is "similarity ≥ 1 − k/64".
    """

    def __init__(self, tokenizer: str = "word", ngram: int = 3, weighting: str = "tf", idf=None,
                 top_n: int | None = None, normalizer="default", seed: int = 0, *, user_dict=None,
                 stop_words=None):
        if weighting not in WEIGHTINGS:
            raise ConfigError(f"unknown weighting {weighting!r}; expected one of {', '.join(WEIGHTINGS)}")
        if top_n is not None:
            top_n = as_int(top_n, "top_n", 1)
        keywords = keyword_features(ngram, weighting, stop_words)     # where auto segments with jieba
        self.shingler = Shingler(tokenizer=signing_tokenizer(tokenizer, keywords, user_dict), ngram=ngram,
                                 normalizer=normalizer, seed=seed, user_dict=user_dict)
        self.weighting = weighting
        self.top_n = top_n
        self._files = {}
        if tokenizer == "char" and (stop_words is not None or isinstance(idf, os.PathLike)
                                    or (isinstance(idf, str) and idf != "jieba")):
            raise ConfigError("stop_words and IDF files hold words: use tokenizer='word', 'jieba' or 'auto' with them")
        if isinstance(idf, (str, os.PathLike)):
            if ngram != 1:
                raise ConfigError(f"an IDF table weighs single words: use ngram=1 with idf={os.fspath(idf)!r}")
            if idf == "jieba":
                idf = IdfTable.jieba(seed)
            else:
                f = load_idf(idf)
                why = idf_tokenizer_mismatch(idf, tokenizer)
                if why:
                    raise ConfigError(f"idf must be {why}")
                idf = IdfTable.from_words(dict(zip(self._normalized(f.words), f.values.tolist())),
                                          float(f.median), seed)
                self._files["idf_sha256"] = f.sha256
        self.idf = idf
        self._stop = None
        if stop_words is not None:
            if ngram != 1:
                raise ConfigError("stop words are single words: use ngram=1 with stop_words")

            f = load_stop_words(stop_words)
            self._stop = np.unique(hash_words(self._normalized(sorted(f.words)), seed))
            self._files["stop_words_sha256"] = f.sha256

    def _normalized(self, words) -> list[str]:
        return [self.shingler.normalize(w) for w in words]

    def config(self) -> dict:
        return {"method": "simhash", "bits": 64, "weighting": self.weighting, "top_n": self.top_n,
                **self.shingler.config(), **self._files}

    def fit_idf(self, texts: Sequence) -> SimHasher:
        """Fit the IDF table on a corpus (used when ``weighting="tfidf"``)."""
        self.idf = IdfTable.fit(self.shingler.features(texts))
        return self

    def weights(self, features: Features) -> tuple[Features, np.ndarray]:
        uniq = features.unique()
        if self._stop is not None and len(self._stop):
            keep = ~np.isin(uniq.hashes, self._stop)
            uniq = _kept(uniq, keep)
        if self.weighting == "uniform":
            w = np.ones(uniq.hashes.shape[0], dtype=np.float64)
        elif self.weighting == "tf":
            w = uniq.counts.astype(np.float64)
        else:
            if self.idf is None:
                raise ConfigError("weighting='tfidf' needs an IDF table: pass idf=... or call fit_idf()")
            w = uniq.counts * self.idf.lookup(uniq.hashes)
        if self.top_n is not None:
            keep = top_n_mask(w, uniq.offsets, self.top_n)
            uniq = _kept(uniq, keep)
            w = w[keep]
        return uniq, w

    def sign_features(self, features: Features) -> np.ndarray:
        if self.weighting == "tf" and self.top_n is None and self._stop is None:
            return fold_unit_batch(features.hashes, features.offsets)  # no sort needed (same result)
        if self._stop is None and (self.weighting != "tfidf" or self.idf is not None):
            # weights, top N and the fold of the distinct features in one compiled pass (the steps below)
            u = features.unique()
            idf = self.idf if self.weighting == "tfidf" else _NO_IDF
            # the kernel's selection buffers hold top_n entries: never more than a document has
            # features (the same features kept), so --top-n 10**12 allocates no terabytes
            top = min(self.top_n or 0, max(1, int(np.diff(u.offsets).max(initial=0))))
            return weighted_fold_batch(u.hashes, u.counts, u.offsets, WEIGHTINGS.index(self.weighting),
                                       *idf.slots, idf.keys, idf.values, idf.default, top)
        uniq, w = self.weights(features)
        return fold_batch(uniq.hashes, np.ascontiguousarray(w, dtype=np.float64), uniq.offsets)

    def sign_batch(self, texts: Sequence) -> np.ndarray:
        """uint64 fingerprints of a batch of documents."""
        return self.sign_batch_sizes(texts)[0]

    def sign_batch_sizes(self, texts: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """Fingerprints and shingles per document. tf weights with the ``word`` tokenizer run the
        fused kernel (no batch-wide shingle array); results are identical to the two-step path."""
        if (self.weighting == "tf" and self.top_n is None and self._stop is None
                and self.shingler.tokenizer == "word"):
            norm = self.shingler.normalizer
            buf, offsets = encode_batch(texts, norm, whitespace=False, kernel_maps=True, nfkc_checked=True)
            return run_nfkc_checked(simhash_word_batch, buf, offsets, norm, class_table(), *kernel_char_map(norm),
                                    self.shingler.ngram, np.uint64(self.shingler.seed))
        feats = self.shingler.features(texts)
        if self._stop is not None:         # a document of stop words only has no features
            u = feats.unique()             # once: weights() takes distinct features as they are
            return self.sign_features(u), _kept(u, ~np.isin(u.hashes, self._stop)).sizes()
        return self.sign_features(feats), feats.sizes()

    def sign(self, text) -> int:
        return int(self.sign_batch([text])[0])


def _kept(uniq: Features, keep: np.ndarray) -> Features:
    """The features of ``uniq`` where ``keep``, offsets recounted per document."""
    nd = len(uniq)
    doc_of = np.repeat(np.arange(nd), np.diff(uniq.offsets))
    new_off = np.zeros(nd + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc_of[keep], minlength=nd), out=new_off[1:])
    return Features(uniq.hashes[keep], new_off, uniq.counts[keep])


__all__ = ["SimHasher", "hamming", "hamming_array", "is_near", "popcount64", "WEIGHTINGS"]


COMPATS = ("yanyiwu", "1e0ng", "jieba-analyse")


def feature_signer(tokenizer: str = "word", ngram: int | None = 3, weighting: str | None = None,
                   idf: str | None = None, top_n: int | None = None, compat: str | None = None,
                   convert: str | None = None, *, user_dict=None, stop_words=None):
    """The one definition of SimHash's feature options, for every path that signs (``sign``,
    ``dedup``, the index, the service, Spark): a function texts → (fingerprints uint64, features
    per text; 0 means an empty document, which never matches).

    ``compat="yanyiwu"``: yanyiwu/simhash's fingerprints (cppjieba keywords, count × idf, top N —
    by its length rule when ``top_n`` is None; :func:`neardup.sketches.compat.yanyiwu.simhash_batch`,
    compiled); ``"1e0ng"``: the PyPI ``simhash`` package's (its own 4-character windows);
    ``"jieba-analyse"``: ``simhash.Simhash(jieba.analyse.extract_tags(text, topK=top_n,
    withWeight=True)).value``, top_n None: 20 (:mod:`neardup.sketches.compat.jieba_analyse`, compiled). All read
    the raw text, after the ``convert`` script conversion when one is given. Otherwise neardup's
    pipeline: normalised text, ``tokenizer`` tokens, ``ngram`` shingles, ``weighting`` (default tf;
    ``tfidf`` with ``idf="jieba"`` or a file), ``top_n`` heaviest features. ``user_dict`` and
    ``stop_words`` (paths) and an ``idf`` file apply to both: in yanyiwu's mode as cppjieba's
    ``KeywordExtractor`` takes them, else as :class:`SimHasher` does."""
    if compat is not None:
        if compat not in COMPATS:
            raise ConfigError(f"compat must be one of {', '.join(COMPATS)}; got {compat!r}")
        conv = _converter(convert).convert if convert else None

        def prepared(texts):
            return [conv(t) for t in texts] if conv else list(texts)

        if compat == "yanyiwu":
            if top_n is not None:
                top_n = as_int(top_n, "top_n", 1)
            files = {"user_dict": user_dict, "idf": idf, "stop_words": stop_words}
            why = idf_tokenizer_mismatch(idf, "yanyiwu")
            if why:
                raise ConfigError(f"idf must be {why}")

            tables(**files)                        # bad files fail here, before any text is read
            return lambda texts: yanyiwu.simhash_batch_sizes(prepared(texts), top_n, **files)
        if compat == "jieba-analyse" and user_dict is None:
            top = jieba_analyse.TOP_K if top_n is None else as_int(top_n, "top_n", 1)
            why = idf_tokenizer_mismatch(idf, "jieba-analyse")
            if why:
                raise ConfigError(f"idf must be {why}")
            jieba_analyse.simhash_batch_sizes([], top, stop_words, idf)     # a bad file fails here, before any text
            return lambda texts: jieba_analyse.simhash_batch_sizes(prepared(texts), top, stop_words, idf)
        if user_dict is not None or stop_words is not None or idf is not None:
            raise ConfigError(f"compat={compat!r} has its own features: "
                              + ("user_dict does not apply" if compat == "jieba-analyse"
                                else "user_dict, stop_words and idf do not apply"))
        if top_n is not None:
            raise ConfigError("top_n does not apply to compat='1e0ng' (the library weighs every window)")

        def sign_1e0ng(texts):
            texts = prepared(texts)
            fps = np.array([simhash_1e0ng.simhash(t) for t in texts], dtype=np.uint64)
            sizes = np.array([len(simhash_1e0ng.features(t)) if simhash_1e0ng.has_content(t) else 0
                              for t in texts], dtype=np.int64)
            return fps, sizes
        return sign_1e0ng
    return native_hasher(tokenizer, ngram, weighting, idf, top_n, convert, user_dict=user_dict,
                         stop_words=stop_words).sign_batch_sizes


def native_hasher(tokenizer: str = "word", ngram: int | None = 3, weighting: str | None = None,
                  idf: str | None = None, top_n: int | None = None, convert: str | None = None, *,
                  user_dict=None, stop_words=None) -> SimHasher:
    """The SimHasher of :func:`feature_signer`'s options without ``compat`` (ngram None: 3; weighting
    None: tf)."""
    return SimHasher(tokenizer=tokenizer, ngram=3 if ngram is None else ngram, weighting=weighting or "tf",
                     idf=idf, top_n=top_n, normalizer=Normalizer(convert=convert), user_dict=user_dict,
                     stop_words=stop_words)
