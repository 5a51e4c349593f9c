"""MinHash indexes on disk: :class:`DiskIndex` (Jaccard, LSH bands) and :class:`ContainmentDiskIndex`
(containment, bands per size ratio) — see :mod:`neardup.index.disk` for the guarantees."""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .._arrays import unique_pairs
from .._version import __version__
from ..errors import ConfigError, InputFormatError
from ..kernels.lsh import band_keys
from ..similarity.estimates import containment_from_jaccard, minhash_similarity
from ..sketches.minhash import _DTYPES, SLOTWISE, MinHasher, Signatures, empty_value, jaccard_rows
from .containment import GRID, MODES, _check_sizes, _layout_keys, _layouts, class_table, containment_candidates
from .disk_base import (
    INDEX_FORMAT,
    AtLeast,
    BaseDiskIndex,
    IndexConfigError,
    _jsonable,
    _unsigned_pipeline,
)
from .lsh import MAX_BUCKET, candidate_pairs, choose_params
from .probe import probe_containment
from .segments import SegmentStore
from .store import (
    IndexStore,
)


class DiskIndex(BaseDiskIndex):
    """MinHash + LSH index on disk.

    ``query(text)`` returns ``[(key, estimated_jaccard), ...]``, best first, for every stored
    document that shares a band with the text and whose estimate from the full signatures is at
    least the threshold — except that a band shared by more than ``MAX_BUCKET`` stored documents
    brings in only the oldest of them (see the module docstring). Banding finds a document at the
    index threshold t with probability 1 − (1 − t^r)^b (≥ ``recall``, 0.99 by default); a query
    threshold below t finds only the documents that also collide in a band. Empty documents are
    stored but never match.
    """

    kind = "minhash"
    _EXPECTABLE = ("threshold", "num_perm", "scheme", "seed", "tokenizer", "ngram", "b", "r", "user_dict")

    @classmethod
    def create(cls, path, threshold: float = 0.8, num_perm: int = 128, scheme: str = "oph", seed: int = 1,
               tokenizer: str = "word", ngram: int = 5, lsh_mode: str = "recall", b: int | None = None,
               r: int | None = None, *, recall: float = 0.99, user_dict=None, exist_ok: bool = False,
               store: type[IndexStore] | None = None, synchronous: str = "NORMAL") -> DiskIndex:
        """A new index at ``path`` (``FileExistsError`` if there is one, unless ``exist_ok``:
        then the existing one is opened and must match these parameters). ``user_dict``: a jieba
        user dictionary for the ``jieba`` tokenizer; the index stores its absolute path and
        SHA-256, and refuses to open once the file's content differs."""
        if not 0.0 < float(threshold) <= 1.0:
            raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
        user_dict = None if user_dict is None else os.path.abspath(user_dict)
        hasher = MinHasher(num_perm=num_perm, scheme=scheme, seed=seed, tokenizer=tokenizer, ngram=ngram,
                           user_dict=user_dict)
        params = choose_params(float(threshold), int(num_perm), mode=lsh_mode, recall=recall, b=b, r=r)
        config = {"kind": cls.kind, "format": INDEX_FORMAT, "neardup": __version__,
                  "threshold": float(threshold), "num_perm": int(num_perm), "scheme": scheme,
                  "seed": int(seed), "tokenizer": hasher.shingler.tokenizer, "ngram": int(ngram),
                  "b": params.b, "r": params.r, "lsh_mode": params.mode,
                  "dtype": np.dtype(_DTYPES[scheme]).str, "hasher": _jsonable(hasher.config())}
        if user_dict is not None:            # absent when unused: older indexes read the same
            config["user_dict"] = user_dict
        return cls._create(path, config, exist_ok, store, {"synchronous": synchronous})

    def _setup(self, config: dict) -> None:
        self._setup_hasher(config)
        self.b, self.r = int(config["b"]), int(config["r"])

    def _setup_hasher(self, config: dict) -> None:
        """The MinHasher the index was built with, checked against what this neardup builds."""
        try:
            self.hasher = MinHasher(num_perm=config["num_perm"], scheme=config["scheme"], seed=config["seed"],
                                    tokenizer=config["tokenizer"], ngram=config["ngram"],
                                    user_dict=config.get("user_dict"))
        except InputFormatError as exc:
            raise IndexConfigError(f"{getattr(self, 'path', '')}: the index's user dictionary cannot be used: "
                                   f"{exc}") from None
        except ValueError as exc:   # a stored combination this neardup no longer signs (auto + a user dictionary)
            raise _unsigned_pipeline(self, exc) from None
        mine = _jsonable(self.hasher.config())
        if mine != config["hasher"] and mine.get("user_dict_sha256") != config["hasher"].get("user_dict_sha256"):
            raise IndexConfigError(f"{getattr(self, 'path', '')}: the user_dict file {config.get('user_dict')} has "
                                   f"changed since the index was built (SHA-256 "
                                   f"{config['hasher'].get('user_dict_sha256')}); restore it, or build a new index")
        if mine != config["hasher"]:
            raise IndexConfigError(
                f"{self.path}: the stored text pipeline {config['hasher']} differs from what this neardup "
                f"builds for the same parameters {mine}; rebuild the index")
        self.threshold = float(config["threshold"])
        self.scheme = config["scheme"]
        self._dtype = np.dtype(_DTYPES[self.scheme])
        self._width = int(config["num_perm"])
        self._empty = self._dtype.type(empty_value(self.scheme))
        self._probe_scores = self.scheme in SLOTWISE     # else the probe's candidates are scored by jaccard_rows

    def _sign(self, texts):
        values = np.ascontiguousarray(self.hasher.sign_batch(texts).values)
        return values, np.all(values == self._empty, axis=1)

    def _bands(self, values):
        return band_keys(np.ascontiguousarray(values), self.b, self.r)

    def _scores(self, qvals, cvals, qi, ci):
        both = np.concatenate([qvals, cvals])
        return jaccard_rows(both, qi, ci + qvals.shape[0], self.scheme)

    @staticmethod
    def _rank(scores):
        return -scores

    def _empty_value(self):
        return empty_value(self.scheme)

    def _batch_pairs(self, values, rows):
        """Candidate pairs among ``rows`` of a batch: the batch engine's banding (same b, r, star rule)."""
        return candidate_pairs(np.ascontiguousarray(values), self.b, self.r, rows=rows)

    # a band shared with more than MAX_BUCKET indexed documents is checked against its oldest only:
    # the batch engine's star rule (index.lsh.MAX_BUCKET), which bounds the cost of boilerplate
    _max_bucket = MAX_BUCKET

    def _default_accept(self):
        t = self.threshold
        return AtLeast(t)

    def add_signatures(self, keys: Sequence, values, replace: bool = False) -> None:
        """Add precomputed signatures: a :class:`Signatures` or an (n, num_perm) array, made
        with this index's scheme, seed and text pipeline."""
        values = self._signature_values(values, self._width)
        self._put(list(keys), values, np.all(values == self._empty, axis=1), replace)

    def _signature_values(self, values, width: int) -> np.ndarray:
        """Signatures to store: a :class:`Signatures` of this index's scheme, seed, k and text
        pipeline, or an array (:meth:`_as_values`)."""
        if isinstance(values, Signatures):
            if (values.scheme, values.seed, values.num_perm) != (self.scheme, self.hasher.seed, width):
                raise IndexConfigError(
                    f"signatures use (scheme, seed, num_perm)={(values.scheme, values.seed, values.num_perm)}, "
                    f"the index {(self.scheme, self.hasher.seed, width)}")
            if values.config and _jsonable(values.config) != self.config["hasher"]:
                raise IndexConfigError("signatures were made with another text pipeline than the index's: "
                                       f"{values.config} vs {self.config['hasher']}")
            values = values.values
        return self._as_values(values, width)

    def _as_values(self, values, width: int | None = None) -> np.ndarray:
        """An (n, width) array of this index's dtype; integers out of its range are refused."""
        width = self._width if width is None else width
        a = np.asarray(values)
        if a.ndim != 2 or a.shape[1] != width:
            raise ConfigError(f"signatures must be an (n, {width}) array, got shape {a.shape}")
        if a.dtype != self._dtype:
            info = np.iinfo(self._dtype)
            if a.dtype.kind not in "iu" or (a.size and (a.min() < 0 or a.max() > info.max)):
                raise TypeError(f"signatures must be {self._dtype} values for scheme {self.scheme!r}, got {a.dtype}")
            a = a.astype(self._dtype)
        return np.ascontiguousarray(a)

    def _threshold(self, threshold) -> float:
        t = self.threshold if threshold is None else float(threshold)
        if not 0.0 <= t <= 1.0:
            raise ConfigError(f"threshold must be in [0, 1], got {threshold!r}")
        return t

    def query(self, text, threshold: float | None = None) -> list[tuple[object, float]]:
        """Stored ``(key, estimated Jaccard)`` with estimate ≥ threshold (default: the index's), best first."""
        return self.query_batch([text], threshold)[0]

    def query_batch(self, texts: Sequence, threshold: float | None = None) -> list[list[tuple[object, float]]]:
        """:meth:`query` for each text; signed together, all read from one snapshot."""
        return self._query_texts(texts, threshold)

    def _query_texts(self, texts: Sequence, threshold, **how) -> list[list[tuple[object, float]]]:
        if isinstance(texts, (str, bytes)):
            raise TypeError("query_batch() takes a sequence of texts; use query() for one")
        texts = list(texts)
        if not texts:
            return []
        t = self._threshold(threshold)
        values, empty = self._sign(texts)
        return self._query(values, empty, AtLeast(t), **how)

    def query_signatures(self, values, threshold: float | None = None) -> list[list[tuple[object, float]]]:
        """:meth:`query_batch` for precomputed signatures."""
        t = self._threshold(threshold)
        if isinstance(values, Signatures):
            values = values.values
        values = self._as_values(values)
        return self._query(values, np.all(values == self._empty, axis=1), AtLeast(t))


class ContainmentDiskIndex(DiskIndex):
    """MinHash index on disk for containment: which stored documents X hold a text Q, or are held by it,
    to C ≥ t (C(Q ⊆ X) = |Q ∩ X| / |Q| over distinct shingle sets).

    Each document keeps its signature and its distinct-shingle count; the band keys are those of
    every layout that the ratio classes at the index threshold use (:mod:`neardup.index.containment`,
    after LSH Ensemble), sorted by (key, size) in each segment, so one probe per segment bands every
    pair for its own size ratio and skips the documents too small or too large for it. ``query``
    answers with the rule of ``neardup dedup --metric containment`` — the larger of the two
    containments, estimated from Ĵ and the sizes: Ĉ(Q ⊆ X) = Ĵ (q + x) / ((1 + Ĵ) q) —
    or, with ``direction="in"``, only C(Q ⊆ X) (the documents that contain the text, as
    :class:`~neardup.index.containment.ContainmentIndex` answers). Candidates are exactly those that
    the batch engine's :func:`~neardup.index.containment.containment_candidates` gives over the
    stored and the new documents together.
    """

    kind = "containment"
    _EXPECTABLE = ("threshold", "num_perm", "scheme", "seed", "tokenizer", "ngram", "mode", "recall", "user_dict")
    _STORE_META = {"band_order": "size"}
    DIRECTIONS = ("either", "in")

    @classmethod
    def create(cls, path, threshold: float = 0.8, num_perm: int = 128, scheme: str = "oph", seed: int = 1,
               tokenizer: str = "word", ngram: int = 5, mode: str = "recall", *, recall: float = 0.99,
               user_dict=None, exist_ok: bool = False, store: type[IndexStore] | None = None,
               synchronous: str = "NORMAL") -> ContainmentDiskIndex:
        """A new containment index at ``path`` (as :meth:`DiskIndex.create`); ``mode``/``recall``: how
        each size ratio is banded (``"recall"``: P(candidate | C = t) ≥ ``recall``; ``"ensemble"``:
        Zhu et al.'s criterion)."""
        if not 0.0 < float(threshold) <= 1.0:
            raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
        if scheme == "bottomk":
            raise IndexConfigError("bottom-k sketches cannot be banded; use scheme 'oph' or 'permutation'")
        if mode not in MODES:
            raise IndexConfigError(f"mode must be one of {MODES}, got {mode!r}")
        if not 0.0 < float(recall) < 1.0:
            raise IndexConfigError(f"recall must be in (0, 1), got {recall!r}")
        if store not in (None, SegmentStore):
            raise IndexConfigError("a containment index needs the folder store (its bands are sorted by set size)")
        user_dict = None if user_dict is None else os.path.abspath(user_dict)
        hasher = MinHasher(num_perm=num_perm, scheme=scheme, seed=seed, tokenizer=tokenizer, ngram=ngram,
                           user_dict=user_dict)
        layouts = _layouts(float(threshold), int(num_perm), mode, float(recall), GRID)
        config = {"kind": cls.kind, "format": INDEX_FORMAT, "neardup": __version__,
                  "threshold": float(threshold), "num_perm": int(num_perm), "scheme": scheme,
                  "seed": int(seed), "tokenizer": hasher.shingler.tokenizer, "ngram": int(ngram),
                  "mode": mode, "recall": float(recall), "grid": GRID, "layouts": list(layouts),
                  "dtype": np.dtype(_DTYPES[scheme]).str, "hasher": _jsonable(hasher.config())}
        if user_dict is not None:
            config["user_dict"] = user_dict
        return cls._create(path, config, exist_ok, store, {"synchronous": synchronous})

    def _setup(self, config: dict) -> None:
        self._setup_hasher(config)
        self.mode, self.recall, self.grid = config["mode"], float(config["recall"]), int(config["grid"])
        self.layouts = tuple(int(r) for r in config["layouts"])
        self.num_perm = int(config["num_perm"])
        self._width = self.num_perm + 1            # the signature's slots, then the set size

    def _sign(self, texts):
        feats = self.hasher.shingler.features(list(texts)).unique()
        if self.scheme.startswith("datasketch"):
            sig = self.hasher.sign_batch(list(texts)).values
        else:
            sig = self.hasher.sign_features(feats).values
        return self._with_sizes(sig, feats.sizes())

    def _with_sizes(self, sig: np.ndarray, sizes) -> tuple[np.ndarray, np.ndarray]:
        sizes = np.asarray(sizes, dtype=np.int64)
        if sizes.size and sizes.max() > np.iinfo(self._dtype).max:
            raise ConfigError(f"set sizes must be at most {np.iinfo(self._dtype).max} (stored as {self._dtype}), "
                              f"got {int(sizes.max())}")
        out = np.empty((sig.shape[0], self._width), dtype=self._dtype)
        out[:, :-1] = sig
        out[:, -1] = sizes
        return out, sizes == 0

    def _bands(self, values):
        return _layout_keys(np.ascontiguousarray(values[:, :-1]), self.layouts, self.num_perm)

    def _scores(self, qvals, cvals, qi, ci, direction: str = "either"):

        both = np.ascontiguousarray(np.concatenate([qvals[:, :-1], cvals[:, :-1]]))
        j = jaccard_rows(both, qi, ci + qvals.shape[0], self.scheme)
        q = qvals[qi, -1].astype(np.int64)
        x = cvals[ci, -1].astype(np.int64)
        if direction == "in":
            return containment_from_jaccard(j, q, x)
        return minhash_similarity(j, q, x, "containment")

    def _check(self, values, empty, accept):
        """A new document is a copy only of a document that holds it: ``direction="in"`` (the directed
        rule of :mod:`neardup.clusters.containment`); one that holds an indexed document is new."""
        return self._query(values, empty, accept, direction="in")

    def _within(self, values, empty, accept):
        """Pairs (i < j) of one batch where the earlier document holds the later one, C(j ⊆ i) ≥ t:
        the directed rule within a check-and-add batch (a document holding an earlier one is added)."""
        rows = np.flatnonzero(~empty)
        if rows.shape[0] < 2:
            z = np.zeros(0, np.int64)
            return z, z, np.zeros(0)
        lo, hi = self._batch_pairs(values, rows)
        scores = self._scores(values, values, hi, lo, direction="in")      # C(values[hi] ⊆ values[lo])
        ok = accept(scores)
        return lo[ok], hi[ok], scores[ok]

    def _batch_pairs(self, values, rows):
        """Candidate pairs among ``rows`` of a batch: the batch engine's containment banding."""
        sizes = values[:, -1].astype(np.int64)
        a, b = containment_candidates(np.ascontiguousarray(values[:, :-1]), sizes, self.threshold, mode=self.mode,
                                      recall=self.recall, grid=self.grid, rows=rows, sort=False)
        return unique_pairs(np.minimum(a, b), np.maximum(a, b))

    def _matches(self, values: np.ndarray, empty: np.ndarray, accept, direction: str = "either"):
        """:meth:`DiskIndex._matches` for containment: each segment probed in the query's direction
        (``direction="in"``) or in both, candidates scored by the containment estimate."""
        if direction not in self.DIRECTIONS:
            raise ConfigError(f"direction must be one of {self.DIRECTIONS}, got {direction!r}")
        rows = np.flatnonzero(~empty)
        values = np.ascontiguousarray(values, dtype=self._dtype)
        st = self._st
        t = float(accept.limit)
        tab = class_table(max(t, 1e-9), self.num_perm, self.layouts, self.mode, self.recall, self.grid)
        qkeys = self._bands(values[rows])
        qsizes = values[rows, -1].astype(np.int64)
        with st.snapshot():
            qs, ds = [], []
            for reverse in ((False,) if direction == "in" else (False, True)):
                q, d = probe_containment(st, qkeys, qsizes, self.layouts, self.num_perm, tab, max(t, 1e-9), self.grid,
                                            reverse)
                qs.append(q)
                ds.append(d)
            qi, docs = unique_pairs(np.concatenate(qs), np.concatenate(ds))
            ids, ci = np.unique(docs, return_inverse=True)
            keys, raw = st.fetch_arrays(ids)
        cvals = self._values_of(raw)
        qi = rows[qi]
        scores = self._scores(values, cvals, qi, ci, direction)
        ok = accept(scores)
        qi, ci, scores = qi[ok], ci[ok], scores[ok]
        order = np.lexsort((ids[ci], self._rank(scores), qi))
        return qi[order], ci[order], scores[order], keys, ids, cvals

    def add_signatures(self, keys: Sequence, values, sizes=None, replace: bool = False) -> None:
        """Add precomputed signatures (as :meth:`DiskIndex.add_signatures`) with their distinct-shingle
        counts ``sizes`` (0 exactly for an empty signature)."""
        if sizes is None:
            raise TypeError("a containment index needs each signature's set size: add_signatures(keys, values, sizes)")
        sig = self._signature_values(values, self.num_perm)
        ext, empty = self._with_sizes(sig, _check_sizes(sizes, sig, self._empty))
        self._put(list(keys), ext, empty, replace)

    def query(self, text, threshold: float | None = None, direction: str = "either") -> list[tuple[object, float]]:
        """Stored ``(key, estimated containment)`` with estimate ≥ threshold (default: the index's), best
        first: the larger of the two containments, or with ``direction="in"`` C(text ⊆ document)."""
        return self.query_batch([text], threshold, direction)[0]

    def query_batch(self, texts: Sequence, threshold: float | None = None,
                    direction: str = "either") -> list[list[tuple[object, float]]]:
        """:meth:`query` for each text; signed together, all read from one snapshot."""
        return self._query_texts(texts, threshold, direction=direction)

    def query_signatures(self, values, threshold: float | None = None, sizes=None,
                         direction: str = "either") -> list[list[tuple[object, float]]]:
        """:meth:`query_batch` for precomputed signatures with their set sizes."""
        if sizes is None:
            raise TypeError("a containment index needs each query's set size: query_signatures(values, sizes=...)")
        t = self._threshold(threshold)
        if isinstance(values, Signatures):
            values = values.values
        a = self._as_values(values, self.num_perm)
        ext, empty = self._with_sizes(a, _check_sizes(sizes, a, self._empty))
        return self._query(ext, empty, AtLeast(t), direction=direction)

