"""SimHash indexes on disk: :class:`SimHashDiskIndex` (the classic rule: every stored fingerprint
within k bits) — see :mod:`neardup.index.disk` for the guarantees."""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .._checks import as_int
from .._version import __version__
from ..errors import ConfigError, InputFormatError
from ..sketches.minhash import MinHasher
from ..sketches.simhash import SimHasher, feature_signer, hamming_array
from ..text.dictionaries import file_keys
from ..text.normalize import Normalizer
from .disk_base import (
    INDEX_FORMAT,
    AtLeast,
    AtMost,
    BaseDiskIndex,
    IndexConfigError,
    _jsonable,
    _unsigned_pipeline,
)
from .simhash_index import all_pairs, plan_tables
from .store import IndexStore


def _block_masks(k: int, expected_n: int | None) -> tuple[list[int], str]:
    """Table key masks: with ``expected_n``, the layout of ``simhash_index.plan_tables`` for an
    online workload; otherwise k + 1 contiguous blocks, one table per block (pigeonhole: k
    differing bits leave at least one block equal) — the fewest band rows per document."""
    if expected_n is not None:
        plan = plan_tables(64, k, int(expected_n), workload="online")
        return [int(m) for m in plan.key_masks], plan.describe()
    q, rem = divmod(64, k + 1)
    masks, hi = [], 64
    for i in range(k + 1):
        width = q + (1 if i < rem else 0)
        masks.append(((1 << width) - 1) << (hi - width))
        hi -= width
    return masks, f"{k + 1} blocks of {q}-{q + (rem > 0)} bits"


class SimHashDiskIndex(BaseDiskIndex):
    """SimHash index on disk: ``query(text)`` returns every stored ``(key, hamming distance)`` with
    distance ≤ ``max_distance``, nearest first — exact, by the pigeonhole argument of Manku, Jain &
    Das Sarma (2007): each table's key is a set of fingerprint bits that two fingerprints within
    the distance agree on in at least one table. Empty documents are stored but never match."""

    kind = "simhash"
    _EXPECTABLE = ("max_distance", "compat", "tokenizer", "ngram", "weighting", "idf", "user_dict", "stop_words",
                   "top_n", "seed")

    @classmethod
    def create(cls, path, max_distance: int = 3, tokenizer: str = "word", ngram: int | None = 3,
               weighting: str = "tf", top_n: int | None = None, seed: int = 0, *, idf: str | None = None,
               compat: str | None = None, user_dict=None, stop_words=None, expected_n: int | None = None,
               exist_ok: bool = False, store: type[IndexStore] | None = None,
               synchronous: str = "NORMAL") -> SimHashDiskIndex:
        """``weighting="tfidf"`` needs a named table (``idf="jieba"``, or the path of a ``word idf`` file:
        the index stores the name or path and the file's SHA-256, and refuses to open once the file's
        content differs; a fitted in-memory table cannot be stored); ``user_dict`` and ``stop_words``
        (paths) likewise; ``compat`` ("yanyiwu", "1e0ng", "jieba-analyse") signs as that peer does (tokenizer and
        ngram unused); the feature options are those of :func:`neardup.sketches.simhash.feature_signer`."""
        max_distance = as_int(max_distance, "max_distance", 0, 31)
        if weighting == "tfidf" and idf is None:
            raise ConfigError("weighting='tfidf' needs idf='jieba' or an IDF file (a fitted table is not stored by "
                              "the index)")
        masks, layout = _block_masks(max_distance, expected_n)
        config = {"kind": cls.kind, "format": INDEX_FORMAT, "neardup": __version__,
                  "max_distance": max_distance, "tokenizer": tokenizer, "ngram": None if ngram is None else int(ngram),
                  "weighting": weighting, "top_n": None if top_n is None else int(top_n), "seed": int(seed),
                  "idf": idf if idf in (None, "jieba") else os.path.abspath(idf), "compat": compat, "masks": masks,
                  "layout": layout, "dtype": "<u8"}
        for name, value in (("user_dict", user_dict), ("stop_words", stop_words)):
            if value is not None:                # absent when unused: older indexes read the same
                config[name] = os.path.abspath(value)
        proto = cls.__new__(cls)
        proto._setup({**config, "hasher": None})
        config["hasher"] = proto._hasher_config()
        return cls._create(path, config, exist_ok, store, {"synchronous": synchronous})

    def _hasher_config(self):
        if self.compat:
            return {"compat": self.compat, "top_n": self.config_top_n, **file_keys(**self._files)}
        return _jsonable(self.hasher.config())

    def _setup(self, config: dict) -> None:
        self.compat = config.get("compat")
        self.config_top_n = config["top_n"]
        self._files = {"idf": config.get("idf"), "user_dict": config.get("user_dict"),
                       "stop_words": config.get("stop_words")}
        try:
            self.hasher = None if self.compat else SimHasher(
                tokenizer=config["tokenizer"], ngram=config["ngram"], weighting=config["weighting"],
                top_n=config["top_n"], seed=config["seed"], **self._files)
            # one signer: the SimHasher itself (its seed included), or the peer's for compat
            self._features = (feature_signer(config["tokenizer"], config["ngram"], config["weighting"],
                                             top_n=config["top_n"], compat=self.compat, **self._files) if self.compat
                              else self.hasher.sign_batch_sizes)
        except InputFormatError as exc:
            raise IndexConfigError(f"{getattr(self, 'path', '')}: the index's word files cannot be used: {exc}") \
                from None
        except ValueError as exc:   # a stored combination this neardup no longer signs (auto + a user dictionary)
            raise _unsigned_pipeline(self, exc) from None
        mine = self._hasher_config()
        if config["hasher"] is not None and mine != config["hasher"]:
            for name in ("idf", "user_dict", "stop_words"):
                key = f"{name}_sha256"
                if config["hasher"].get(key) != mine.get(key):
                    raise IndexConfigError(f"{getattr(self, 'path', '')}: the {name} file {self._files[name]} has "
                                           f"changed since the index was built (SHA-256 {config['hasher'].get(key)}); "
                                           "restore it, or build a new index")
            raise IndexConfigError(f"{getattr(self, 'path', '')}: the stored text pipeline {config['hasher']} differs "
                                   f"from this neardup's {mine}; rebuild the index")
        self.max_distance = int(config["max_distance"])
        self._masks = np.array(config["masks"], dtype=np.uint64)
        self._dtype = np.dtype(np.uint64)
        self._width = 1

    def _sign(self, texts):
        fps, sizes = self._features(texts)
        return np.asarray(fps, dtype=np.uint64).reshape(-1, 1), np.asarray(sizes) == 0

    def _bands(self, values):
        return np.ascontiguousarray(values.reshape(-1, 1) & self._masks[None, :])

    def _scores(self, qvals, cvals, qi, ci):
        return hamming_array(qvals[qi, 0], cvals[ci, 0]).astype(np.int64)

    @staticmethod
    def _rank(scores):
        return scores

    def _empty_value(self):
        return 0

    def _batch_pairs(self, values, rows):
        """Every pair of ``rows`` within the distance (exact: permuted tables)."""
        i, j, _ = all_pairs(np.ascontiguousarray(values[rows, 0], dtype=np.uint64), k=self.max_distance)
        a, b = rows[np.asarray(i, dtype=np.int64)], rows[np.asarray(j, dtype=np.int64)]
        return np.minimum(a, b), np.maximum(a, b)

    _max_bucket = 0     # exact: every fingerprint within the distance is found

    def _default_accept(self):
        k = self.max_distance
        return AtMost(k)

    def add_signatures(self, keys: Sequence, fingerprints, replace: bool = False) -> None:
        """Add precomputed 64-bit fingerprints (made with this index's SimHasher settings)."""
        fps = np.asarray(fingerprints, dtype=np.uint64).reshape(-1, 1)
        self._put(list(keys), fps, np.zeros(fps.shape[0], dtype=bool), replace)

    def _distance(self, max_distance) -> int:
        k = self.max_distance if max_distance is None else int(max_distance)
        if not 0 <= k <= self.max_distance:
            raise ConfigError(f"max_distance must be in [0, {self.max_distance}] for this index (its "
                              "block keys guarantee no more)")
        return k

    def query(self, text, max_distance: int | None = None) -> list[tuple[object, int]]:
        """Stored ``(key, distance)`` with distance ≤ max_distance, nearest first."""
        return self.query_batch([text], max_distance)[0]

    def query_batch(self, texts: Sequence, max_distance: int | None = None) -> list[list[tuple[object, int]]]:
        if isinstance(texts, (str, bytes)):
            raise TypeError("query_batch() takes a sequence of texts; use query() for one")
        texts = list(texts)
        if not texts:
            return []
        k = self._distance(max_distance)
        values, empty = self._sign(texts)
        return self._query(values, empty, AtMost(k))

    def query_signatures(self, fingerprints, max_distance: int | None = None) -> list[list[tuple[object, int]]]:
        k = self._distance(max_distance)
        fps = np.asarray(fingerprints, dtype=np.uint64).reshape(-1, 1)
        return self._query(fps, np.zeros(fps.shape[0], dtype=bool), AtMost(k))


SKETCH = {"tokenizer": "word", "ngram": 5, "scheme": "oph", "seed": 1}   # what the stored sketches hash
SKETCH_SLOTS = 32


def sketcher(slots: int = SKETCH_SLOTS, convert: str | None = None) -> MinHasher:
    """The MinHasher of verified SimHash's stored sketches: ``slots`` one-permutation slots of the word
    5-gram shingles (the sets verification checks exactly when the texts are at hand)."""
    return MinHasher(num_perm=slots, scheme=SKETCH["scheme"], seed=SKETCH["seed"], tokenizer=SKETCH["tokenizer"],
                     ngram=SKETCH["ngram"], normalizer=Normalizer(convert=convert))


def sketch_width(slots: int) -> int:
    """uint64 words of a stored row: the fingerprint, then the uint32 slots two to a word."""
    return 1 + (slots + 1) // 2


def pack_sketches(fps, sketches, slots: int) -> np.ndarray:
    """(n, :func:`sketch_width`) uint64 rows: each fingerprint, then its sketch's slots."""
    fps = np.asarray(fps, dtype=np.uint64).reshape(-1)
    n = fps.shape[0]
    out = np.zeros((n, sketch_width(slots)), dtype=np.uint64)
    out[:, 0] = fps
    out[:, 1:].view(np.uint32)[:, :slots] = np.asarray(sketches, dtype=np.uint32).reshape(n, slots)
    return out


def unpack_sketches(values, slots: int) -> np.ndarray:
    """The (n, slots) uint32 sketches of rows of :func:`pack_sketches`."""
    v = np.ascontiguousarray(values, dtype=np.uint64)
    return np.ascontiguousarray(v[:, 1:]).view(np.uint32)[:, :slots]


def sketch_jaccard(values_a, rows_a, values_b, rows_b, slots: int) -> np.ndarray:
    """The Jaccard estimate of row pairs from their sketches: the fraction of equal slots."""
    a = unpack_sketches(values_a, slots)[np.asarray(rows_a, dtype=np.int64)]
    b = unpack_sketches(values_b, slots)[np.asarray(rows_b, dtype=np.int64)]
    return (a == b).mean(axis=1) if a.shape[0] else np.zeros(0)


class VerifiedSimHashDiskIndex(SimHashDiskIndex):
    """Verified SimHash on disk (what ``dedup --method simhash --index`` keeps without ``--bits``): each
    document stores its fingerprint and a small MinHash sketch of its word 5-gram shingles (``slots``
    one-permutation slots of 4 bytes: 136 bytes with the fingerprint for 32 slots). A query takes the
    stored documents within ``candidate_bits`` of its fingerprint (the tables are built for that radius)
    and keeps those whose Jaccard, estimated from the two sketches (the fraction of equal slots;
    standard error √(J(1 − J)/slots), 0.07 at J = 0.8 with 32 slots), is at least ``threshold``:
    ``query(text)`` returns ``(key, similarity)``, best first. The texts themselves are not stored,
    so this estimate is what decides (``decided: estimate``); ``dedup --index`` checks the pairs among
    its own documents exactly."""

    kind = "simhash-verified"
    _EXPECTABLE = (*SimHashDiskIndex._EXPECTABLE, "candidate_bits", "threshold", "slots")

    @classmethod
    def create(cls, path, candidate_bits: int = 9, threshold: float = 0.8, slots: int = SKETCH_SLOTS,
               tokenizer: str = "word",
               ngram: int | None = 1, weighting: str = "tf", top_n: int | None = None, seed: int = 0, *,
               idf: str | None = None, user_dict=None, stop_words=None, expected_n: int | None = None,
               exist_ok: bool = False, store: type[IndexStore] | None = None,
               synchronous: str = "NORMAL") -> VerifiedSimHashDiskIndex:
        """A new verified SimHash index (the feature options as :meth:`SimHashDiskIndex.create`; no
        ``compat``: the peers' modes keep the classic rule)."""
        candidate_bits = as_int(candidate_bits, "candidate_bits", 0, 31)
        slots = as_int(slots, "slots", 2, 1024)
        if not 0.0 < float(threshold) <= 1.0:
            raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
        if weighting == "tfidf" and idf is None:
            raise ConfigError("weighting='tfidf' needs idf='jieba' or an IDF file (a fitted table is not stored by "
                              "the index)")
        masks, layout = _block_masks(candidate_bits, expected_n)
        config = {"kind": cls.kind, "format": INDEX_FORMAT, "neardup": __version__,
                  "max_distance": candidate_bits, "candidate_bits": candidate_bits, "threshold": float(threshold),
                  "slots": slots, "sketch": dict(SKETCH), "tokenizer": tokenizer,
                  "ngram": None if ngram is None else int(ngram), "weighting": weighting,
                  "top_n": None if top_n is None else int(top_n), "seed": int(seed),
                  "idf": idf if idf in (None, "jieba") else os.path.abspath(idf), "compat": None, "masks": masks,
                  "layout": layout, "dtype": "<u8"}
        for name, value in (("user_dict", user_dict), ("stop_words", stop_words)):
            if value is not None:
                config[name] = os.path.abspath(value)
        proto = cls.__new__(cls)
        proto._setup({**config, "hasher": None})
        config["hasher"] = proto._hasher_config()
        return cls._create(path, config, exist_ok, store, {"synchronous": synchronous})

    def _setup(self, config: dict) -> None:
        super()._setup(config)
        self.candidate_bits = int(config["candidate_bits"])
        self.threshold = float(config["threshold"])
        self.slots = int(config["slots"])
        if config["sketch"] != SKETCH:
            raise _unsigned_pipeline(self, ValueError(f"its sketches hash {config['sketch']}"))
        self.sketcher = sketcher(self.slots)
        self._width = sketch_width(self.slots)

    def _sign(self, texts):
        fps, empty = super()._sign(texts)
        return self._with_sketches(fps, self.sketcher.sign_batch(list(texts)).values), empty

    def _with_sketches(self, fps, sketches) -> np.ndarray:
        return pack_sketches(fps, sketches, self.slots)

    def sketch_of(self, values) -> np.ndarray:
        """The (n, slots) uint32 sketches of stored rows."""
        return unpack_sketches(values, self.slots)

    def sketch_of_row(self, row) -> np.ndarray:
        """The uint32 sketch of one stored row (as :meth:`get` returns it)."""
        return unpack_sketches(np.asarray(row, dtype=np.uint64).reshape(1, -1), self.slots)[0]

    def _bands(self, values):
        return super()._bands(np.ascontiguousarray(values[:, :1]))

    def _scores(self, qvals, cvals, qi, ci):
        """The sketches' Jaccard estimate (:func:`sketch_jaccard`)."""
        return sketch_jaccard(qvals, qi, cvals, ci, self.slots)

    @staticmethod
    def _rank(scores):
        return -scores

    def _default_accept(self):
        return AtLeast(self.threshold)

    def _batch_pairs(self, values, rows):
        """Every pair of ``rows`` within the candidate radius (exact: permuted tables)."""
        i, j, _ = all_pairs(np.ascontiguousarray(values[rows, 0], dtype=np.uint64), k=self.candidate_bits)
        a, b = rows[np.asarray(i, dtype=np.int64)], rows[np.asarray(j, dtype=np.int64)]
        return np.minimum(a, b), np.maximum(a, b)

    def _matches(self, values, empty, accept):
        """Candidates within the radius (the probe of :class:`SimHashDiskIndex`), decided by the sketches."""
        qi, ci, dist, keys, ids, cvals = super()._matches(values, empty, AtMost(self.candidate_bits))
        scores = self._scores(values, cvals, qi, ci)
        ok = accept(scores)
        qi, ci, scores = qi[ok], ci[ok], scores[ok]
        order = np.lexsort((ids[ci], self._rank(scores), qi))
        return qi[order], ci[order], scores[order], keys, ids, cvals

    def _threshold(self, threshold) -> float:
        t = self.threshold if threshold is None else float(threshold)
        if not 0.0 <= t <= 1.0:
            raise ConfigError(f"threshold must be in [0, 1], got {threshold!r}")
        return t

    def query(self, text, threshold: float | None = None) -> list[tuple[object, float]]:
        """Stored ``(key, estimated Jaccard)`` within the radius and ≥ threshold, best first."""
        return self.query_batch([text], threshold)[0]

    def query_batch(self, texts: Sequence, threshold: float | None = None) -> list[list[tuple[object, float]]]:
        if isinstance(texts, (str, bytes)):
            raise TypeError("query_batch() takes a sequence of texts; use query() for one")
        texts = list(texts)
        if not texts:
            return []
        values, empty = self._sign(texts)
        return self._query(values, empty, AtLeast(self._threshold(threshold)))

    def add_signatures(self, keys: Sequence, fingerprints, sketches=None, replace: bool = False) -> None:
        """Add precomputed fingerprints with their (n, slots) uint32 sketches."""
        if sketches is None:
            raise TypeError("a verified SimHash index needs each document's sketch: add_signatures(keys, "
                            "fingerprints, sketches)")
        fps = np.asarray(fingerprints, dtype=np.uint64).reshape(-1)
        self._put(list(keys), self._with_sketches(fps, sketches), np.zeros(fps.shape[0], dtype=bool), replace)

    def query_signatures(self, fingerprints, threshold: float | None = None, sketches=None):
        if sketches is None:
            raise TypeError("a verified SimHash index needs each query's sketch: query_signatures(fps, sketches=…)")
        fps = np.asarray(fingerprints, dtype=np.uint64).reshape(-1)
        return self._query(self._with_sketches(fps, sketches), np.zeros(fps.shape[0], dtype=bool),
                           AtLeast(self._threshold(threshold)))
