"""An index on local disk that new documents are checked against: "have I seen this before?"

:class:`DiskIndex` keeps each document's MinHash signature and its b LSH band keys in an
:class:`~neardup.index.store.IndexStore` (a folder of memory-mapped segments by default,
:mod:`neardup.index.segments`; an SQLite file is still read). A query signs the text, collects the
stored documents that share at least one band key with it (candidates), and keeps those whose
Jaccard similarity, estimated from the two full signatures, is at least the threshold — the
answer of the batch engine's banding plus verification, including its one limit: a band key
shared by more than :data:`~neardup.index.lsh.MAX_BUCKET` (64) stored documents is checked against
the oldest of them only (on the folder store; the SQLite store checks all). That bounds the cost of
boilerplate buckets; a pair found only through such buckets can be missed (3 of 2,204 pairs in
``benchmarks/bench_index_peers.py``). :class:`SimHashDiskIndex` does the same with SimHash
fingerprints, Manku-style block keys and exact Hamming distances (no bucket limit: it is exact).

Guarantees:

* a batch (``add_batch``, ``add_signatures``) is one transaction: after a crash, all of it or
  none of it is in the index, and a document is never present without its band rows;
* a query reads one snapshot: concurrent writers (other processes) never show it half a batch;
* the file records how it was built (scheme, seed, k, b, r, tokenizer, n-gram, normaliser,
  neardup version) and the signature of a fixed probe text; opening checks both, so an index
  is never queried with signatures it cannot compare against (:class:`IndexConfigError`).

One :class:`DiskIndex` object belongs to one thread; open one per thread or process.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._arrays import sorted_unique, unique_pairs
from .._checks import as_int
from .._version import __version__
from ..errors import InputFormatError, NeardupError
from ..kernels.lsh import band_keys
from ..sketches.minhash import _DTYPES, MinHasher, Signatures, empty_value, jaccard_rows
from ..sketches.simhash import SimHasher, hamming_array
from .lsh import MAX_BUCKET, choose_params
from .segments import MANIFEST, SegmentStore
from .store import (
    DuplicateKeyError,
    IndexStore,
    NotAnIndexError,
    ReadOnlyError,
    SQLiteStore,
    check_key,
)

__all__ = ["ContainmentDiskIndex", "DiskIndex", "SimHashDiskIndex", "IndexConfigError", "NotAnIndexError",
           "DuplicateKeyError", "ReadOnlyError", "open_index"]

INDEX_FORMAT = 1
BULK_DOCS = 4096     # a batch at least this large becomes a segment directly (folder store)
# Signed at creation and again at every open: a change in normalisation, tokenisation or hashing
# between neardup versions shows up as a different signature, before any query is answered.
PROBE_TEXT = ("neardup probe: The quick brown fox jumps over the lazy dog, 0123456789 times; "
              "Ærøskøbing naïve café — ΑΒΓ δέλτα; 近似重复文档检测 near-duplicate detection.")


class AtLeast:
    """Accept scores ≥ ``limit`` (MinHash similarity); ``kind`` 0 for the probe kernel."""
    kind = 0

    def __init__(self, limit):
        self.limit = float(limit)

    def __call__(self, scores):
        return scores >= self.limit


class AtMost(AtLeast):
    """Accept scores ≤ ``limit`` (SimHash distance); ``kind`` 1 for the probe kernel."""
    kind = 1

    def __call__(self, scores):
        return scores <= self.limit


class IndexConfigError(NeardupError, ValueError):
    """The index was built with other parameters (or another neardup) than asked for / running."""


def _unsigned_pipeline(index, exc: Exception) -> IndexConfigError:
    """The refusal of an index whose stored text pipeline this neardup no longer signs."""
    return IndexConfigError(f"{getattr(index, 'path', '')}: the index was built with a text pipeline this "
                            f"neardup does not sign any more ({exc}); rebuild the index")


def _numpy_scalar(o):
    if isinstance(o, np.generic):   # NumPy integers and floats are parameters like any other
        return o.item()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _jsonable(obj):
    return json.loads(json.dumps(obj, sort_keys=True, default=_numpy_scalar))


class _BaseDiskIndex:
    kind = ""
    _EXPECTABLE: tuple[str, ...] = ()
    _STORE_META: dict = {}        # store metadata fixed at creation (a containment index's band order)

    def __init__(self, store: IndexStore, config: dict):
        self._store = store
        self.config = config
        self.path = Path(getattr(store, "path", ""))
        self._setup(config)

    # -- to be provided by each flavour -----------------------------------------------------------
    def _setup(self, config: dict) -> None:
        raise NotImplementedError

    def _sign(self, texts: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """(values (n, w), empty (n,) bool) for a batch of texts."""
        raise NotImplementedError

    def _bands(self, values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _scores(self, qvals, cvals, qi, ci) -> np.ndarray:
        raise NotImplementedError

    # -- creating and opening -------------------------------------------------------------------
    @classmethod
    def _create(cls, path, config: dict, exist_ok: bool, store, options: dict):
        p = Path(path)
        given, store = store, store or SegmentStore
        present = p.is_file() and p.stat().st_size > 0 or p.is_dir() and any(p.iterdir())
        if not (exist_ok and present):
            proto = cls.__new__(cls)
            proto.config, proto.path = config, p
            proto._setup(config)
            meta = {"config": json.dumps(config, sort_keys=True), "probe": proto._probe(), **cls._STORE_META}
            try:
                return cls(store.create(p, meta, **options), config)
            except FileExistsError:
                if not exist_ok:
                    raise
        idx = cls.open(p, store=given, **options)    # exist_ok: there is one (perhaps made meanwhile)
        try:
            idx._compare(config, "asked for", strict=True)
        except BaseException:
            idx.close()
            raise
        return idx

    @classmethod
    def open(cls, path, readonly: bool = False, *, store: type[IndexStore] | None = None,
             synchronous: str = "NORMAL", **expect):
        """Open an existing index (a folder: :class:`SegmentStore`; a file: the SQLite store of
        neardup ≤ 0.x, unless ``store`` says otherwise). Keyword arguments among the creation
        parameters (e.g. ``num_perm=128, scheme="oph"``) are checked against the index:
        :class:`IndexConfigError` on a difference. :class:`NotAnIndexError` for a path that is not
        a neardup index."""
        if store is None:
            store = SQLiteStore if Path(path).is_file() else SegmentStore
        unknown = set(expect) - set(cls._EXPECTABLE)
        if unknown:
            raise TypeError(f"{cls.__name__}.open() got unexpected arguments {sorted(unknown)}; "
                            f"checkable parameters: {', '.join(cls._EXPECTABLE)}")
        st = store.open(path, readonly=readonly, synchronous=synchronous)
        try:
            raw = st.get_meta("config")
            if raw is None:
                raise NotAnIndexError(f"{path} has no index configuration")
            try:
                config = json.loads(raw)
            except ValueError:
                raise NotAnIndexError(f"{path}: the stored configuration is not JSON") from None
            if config.get("format") != INDEX_FORMAT:
                raise NotAnIndexError(f"{path}: index format {config.get('format')!r}; this neardup "
                                      f"reads format {INDEX_FORMAT}")
            if config.get("kind") != cls.kind:
                other = {"minhash": "DiskIndex", "simhash": "SimHashDiskIndex",
                         "containment": "ContainmentDiskIndex"}.get(config.get("kind"), "?")
                raise IndexConfigError(f"{path} is a {config.get('kind')!r} index: open it with {other}.open()")
            idx = cls(st, config)
            idx._verify_probe(st.get_meta("probe"))
            idx._compare({**config, **expect}, "asked for")
        except BaseException:
            st.close()
            raise
        return idx

    def _compare(self, wanted: dict, what: str, strict: bool = False) -> None:
        """:class:`IndexConfigError` naming every parameter of ``wanted`` that differs from the index's
        (``strict``: None, or absent, is a value too — "no top-N", "no compat", "no user dictionary" —
        as when a run creates or reuses an index; otherwise None means "any")."""
        diffs = [f"{name}={self.config.get(name)!r} (you {what} {wanted.get(name)!r})"
                 for name in self._EXPECTABLE if (name in wanted or strict)
                 and (strict or wanted[name] is not None) and _jsonable(wanted.get(name)) != self.config.get(name)]
        if diffs:
            raise IndexConfigError(f"{self.path} was built with " + ", ".join(diffs))

    def _probe(self) -> str:
        values, _ = self._sign([PROBE_TEXT])
        return json.dumps({"signature": self._encode(values)[0].hex(),
                           "bands": self._bands(values)[0].astype("<u8").tobytes().hex()})

    def _verify_probe(self, stored) -> None:
        if stored != self._probe():
            raise IndexConfigError(
                f"{self.path} was built by neardup {self.config.get('neardup')}, which signs text "
                f"differently from this neardup {__version__} (probe signature mismatch); its "
                "signatures cannot be compared with new ones — rebuild the index")

    # -- signatures <-> bytes ---------------------------------------------------------------------
    def _encode(self, values: np.ndarray) -> list[bytes]:
        le = np.ascontiguousarray(values, dtype=self._dtype.newbyteorder("<"))
        return [le[i].tobytes() for i in range(le.shape[0])]

    def _decode(self, blobs: list[bytes]) -> np.ndarray:
        return self._values_of(np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1))

    def _values_of(self, raw: np.ndarray) -> np.ndarray:
        """Stored signature bytes, an (n, bytes) uint8 matrix, as (n, width) values."""
        return raw.view(self._dtype.newbyteorder("<")).reshape(raw.shape[0], self._width).astype(self._dtype)

    # -- writing ----------------------------------------------------------------------------------
    @property
    def _st(self) -> IndexStore:
        if self._store is None:
            raise ValueError("operation on a closed index")
        return self._store

    def _put(self, keys, values: np.ndarray, empty: np.ndarray, replace: bool, bulk: bool | None = None,
             meta: dict | None = None) -> None:
        keys = [check_key(k) for k in keys]
        if len(keys) != values.shape[0]:
            raise ValueError(f"{len(keys)} keys for {values.shape[0]} documents")
        st = self._st
        if hasattr(st, "add_segment") and (meta or (bulk if bulk is not None else len(keys) >= BULK_DOCS)):
            # a large batch becomes a segment at once (written once, not logged first)
            le = np.ascontiguousarray(values, dtype=self._dtype.newbyteorder("<"))
            st.add_segment(keys, le.view(np.uint8).reshape(len(keys), self._dtype.itemsize * self._width),
                           self._bands(values), banded=~empty,
                           replace=replace, meta=meta)
            return
        if not keys:
            return
        st.put_batch(keys, self._encode(values), self._bands(values), banded=~empty, replace=replace)

    def _put_stored(self, keys, raw: np.ndarray, bulk: bool = True) -> None:
        """Add documents from their stored signature bytes (an (n, bytes) uint8 matrix, as
        :meth:`IndexStore.fetch_arrays` gives them), replacing any of the same key; band keys
        are computed again (``neardup index verify --repair``)."""
        values = self._values_of(np.ascontiguousarray(raw))
        self._put(list(keys), values, self._stored_empty(values), replace=True, bulk=bulk)

    def _stored_empty(self, values: np.ndarray) -> np.ndarray:
        """Which stored signatures are of empty documents (no band rows)."""
        return (values == self._empty_value()).all(axis=1)

    def add(self, key, text, replace: bool = False) -> None:
        """Add one document. :class:`DuplicateKeyError` if ``key`` is stored (unless ``replace``)."""
        self.add_batch([key], [text], replace=replace)

    def add_batch(self, keys: Sequence, texts: Sequence, replace: bool = False, bulk: bool | None = None) -> None:
        """Sign a batch with the batch kernels and store it in one transaction (all or nothing).
        Folder store: ``bulk`` writes the batch as a segment at once rather than logging it (default:
        for batches of at least :data:`BULK_DOCS`)."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("add_batch() takes a sequence of texts; use add() for one")
        keys, texts = list(keys), list(texts)
        if len(keys) != len(texts):
            raise ValueError(f"{len(keys)} keys for {len(texts)} texts")
        if not keys:
            return
        if self._st.readonly:
            raise ReadOnlyError(f"{self.path} was opened read-only")
        values, empty = self._sign(texts)
        self._put(keys, values, empty, replace, bulk)

    def remove(self, key) -> None:
        """Remove a document and its band rows (one transaction); ``KeyError`` if absent."""
        if self._st.delete([key]) == 0:
            raise KeyError(key)

    # -- reading ----------------------------------------------------------------------------------
    def _matches(self, values: np.ndarray, empty: np.ndarray, accept):
        """Vectorised matching (the folder store): arrays (query row, candidate position, score)
        sorted by query, best first, then oldest document; and per candidate position its key,
        document id and signature. Each segment is probed by one compiled pass
        (:func:`neardup.kernels.index_probe.probe_segment`); keys are read only of the accepted."""
        rows = np.flatnonzero(~empty)
        st = self._st
        values = np.ascontiguousarray(values, dtype=self._dtype)
        with st.snapshot():
            qi, docs, scores = st.probe(values, rows, self._bands(values[rows]), accept.kind, accept.limit,
                                        self._dtype.type(self._empty_value()), self._max_bucket)
            ids, ci = np.unique(docs, return_inverse=True)
            keys, raw = st.fetch_arrays(ids)
        cvals = self._values_of(raw)
        order = np.lexsort((ids[ci], self._rank(scores), qi))
        return qi[order], ci[order], scores[order], keys, ids, cvals

    def _query(self, values: np.ndarray, empty: np.ndarray, accept) -> list[list[tuple]]:
        nq = values.shape[0]
        out: list[list[tuple]] = [[] for _ in range(nq)]
        rows = np.flatnonzero(~empty)
        if rows.shape[0] == 0:
            return out
        st = self._st
        if hasattr(st, "probe") and sys.byteorder == "little" and getattr(self, "scheme", "") != "bottomk":
            qi, ci, scores, keys, _, _ = self._matches(values, empty, accept)
            for q, c, s in zip(qi.tolist(), ci.tolist(), scores.tolist()):
                out[q].append((keys[c], s))
            return out
        with st.snapshot():
            cands = st.candidates(self._bands(values[rows]))
            sizes = np.array([c.shape[0] for c in cands], dtype=np.int64)
            if sizes.sum() == 0:
                return out
            flat = np.concatenate(cands)
            ids = sorted_unique(flat)
            keys, blobs = st.fetch(ids.tolist())
        cvals = self._decode(blobs)
        qi = np.repeat(rows, sizes)
        ci = np.searchsorted(ids, flat)
        scores = self._scores(values, cvals, qi, ci)
        ok = accept(scores)
        qi, ci, scores = qi[ok], ci[ok], scores[ok]
        order = np.lexsort((ci, self._rank(scores), qi))  # per query: best first, then oldest id
        for q, c, s in zip(qi[order].tolist(), ci[order].tolist(), scores[order].tolist()):
            out[q].append((keys[c], s))
        return out

    def __contains__(self, key) -> bool:
        return self._st.contains(key)

    # -- the crawler's question -------------------------------------------------------------------
    def _check(self, values: np.ndarray, empty: np.ndarray, accept) -> list[list[tuple]]:
        """The indexed documents a new one is a near-duplicate of (what ``check`` answers): those
        within the rule — for a containment index, those that hold it (C(new ⊆ indexed) ≥ t)."""
        return self._query(values, empty, accept)

    def _within(self, values: np.ndarray, empty: np.ndarray, accept) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs (i < j) of one batch that the index would match with each other (candidates as the
        flavour finds them — :meth:`_batch_pairs` — accepted on the full signatures)."""
        rows = np.flatnonzero(~empty)
        if rows.shape[0] < 2:
            z = np.zeros(0, np.int64)
            return z, z, np.zeros(0)
        lo, hi = self._batch_pairs(values, rows)
        scores = self._scores(values, values, lo, hi)
        ok = accept(scores)
        return lo[ok], hi[ok], scores[ok]

    def _check_and_add(self, keys: list, values: np.ndarray, empty: np.ndarray, accept) -> list[dict]:
        st = self._st
        keys = [check_key(k) for k in keys]
        if len(keys) != values.shape[0]:
            raise ValueError(f"{len(keys)} keys for {values.shape[0]} documents")
        found = self._check(values, empty, accept)
        lo, hi, sc = self._within(values, empty, accept)
        by_hi: dict = {}
        for i, j, s in zip(lo.tolist(), hi.tolist(), sc.tolist()):
            by_hi.setdefault(j, []).append((i, s))
        taken = (st.lookup_many(keys) >= 0) if hasattr(st, "lookup_many") else [st.contains(k) for k in keys]
        added = np.zeros(len(keys), dtype=bool)
        out = []
        seen: set = set()
        sign = -1.0 if self._rank(np.ones(1))[0] < 0 else 1.0     # best first: highest similarity, least distance
        for j in range(len(keys)):
            matches = list(found[j])
            for i, s in by_hi.get(j, ()):
                if added[i]:
                    matches.append((keys[i], s))
            if len(matches) > 1:
                matches.sort(key=lambda m: sign * m[1])
            res = {"id": keys[j], "duplicate": bool(matches), "added": False, "matches": matches}
            if not matches:
                if keys[j] in seen or taken[j]:
                    res["reason"] = "id already in the index"
                else:
                    added[j] = True
                    seen.add(keys[j])
                    res["added"] = True
            out.append(res)
        take = np.flatnonzero(added)
        if take.shape[0]:
            self._put([keys[i] for i in take.tolist()], values[take], empty[take], replace=False, bulk=False)
        return out

    def check_and_add(self, keys: Sequence, texts: Sequence) -> list[dict]:
        """The crawler's question for a batch, answered and acted on at once: each document, in
        order, is a duplicate when it matches an indexed document or an earlier document of this
        batch that was added; every other one is added (one atomic write). Per document:
        ``{"id", "duplicate", "added", "matches": [(key, score), …]}`` (best first; ``"reason"``
        when a new document is not added because its id is taken). Call it from one thread at a
        time per index (a service serialises its requests) so that two near-identical documents
        sent at once are never both added."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("check_and_add() takes sequences of keys and texts")
        keys, texts = list(keys), list(texts)
        if len(keys) != len(texts):
            raise ValueError(f"{len(keys)} keys for {len(texts)} texts")
        if self._st.readonly:
            raise ReadOnlyError(f"{self.path} was opened read-only")
        if not keys:
            return []
        values, empty = self._sign(texts)
        return self._check_and_add(keys, values, empty, self._default_accept())

    def flush(self) -> None:
        """Folder store: make the logged online adds a segment now (they are durable already)."""
        if hasattr(self._st, "flush"):
            self._st.flush()

    def compact(self) -> None:
        """Rewrite the index as one segment without removed documents (folder store), or
        checkpoint the SQLite log."""
        st = self._st
        if hasattr(st, "compact"):
            st.compact()
        elif hasattr(st, "checkpoint"):
            st.checkpoint()

    def get(self, key):
        """The stored signature of ``key`` (a NumPy row), or ``KeyError``."""
        st = self._st
        if hasattr(st, "lookup"):
            with st.snapshot():
                doc = st.lookup(key)
                if doc < 0:
                    raise KeyError(key)
                _, raw = st.fetch_arrays([doc])
            return self._values_of(raw)[0]
        raise NotImplementedError("get() needs the folder store")

    def stats(self) -> dict:
        """documents, bytes on disk, segments, and the parameters the index was built with."""
        st = self._st
        out = {"documents": len(self), "path": str(self.path), "store": type(st).__name__,
               "bytes": st.size_bytes() if hasattr(st, "size_bytes") else None}
        if hasattr(st, "segments"):
            out["segments"] = len(st.segments())
            out["generation"] = st.generation
        out["parameters"] = {k: v for k, v in self.config.items() if k not in ("hasher",)}
        return out

    def __len__(self) -> int:
        return self._st.count()

    def snapshot(self):
        """Context manager: every read inside sees one committed state of the index."""
        return self._st.snapshot()

    def check(self) -> dict:
        """Store consistency report (see :meth:`SQLiteStore.check`)."""
        return self._st.check()

    @property
    def store(self) -> IndexStore:
        return self._st

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._store is None else f"{len(self)} docs"
        return f"{type(self).__name__}({str(self.path)!r}, {state})"


class DiskIndex(_BaseDiskIndex):
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
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
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
        from .lsh import candidate_pairs  # noqa: PLC0415

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
            raise ValueError(f"signatures must be an (n, {width}) array, got shape {a.shape}")
        if a.dtype != self._dtype:
            info = np.iinfo(self._dtype)
            if a.dtype.kind not in "iu" or (a.size and (a.min() < 0 or a.max() > info.max)):
                raise TypeError(f"signatures must be {self._dtype} values for scheme {self.scheme!r}, got {a.dtype}")
            a = a.astype(self._dtype)
        return np.ascontiguousarray(a)

    def _threshold(self, threshold) -> float:
        t = self.threshold if threshold is None else float(threshold)
        if not 0.0 <= t <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
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
        from .containment import GRID, MODES, _layouts  # noqa: PLC0415

        if not 0.0 < float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
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
            raise ValueError(f"set sizes must be at most {np.iinfo(self._dtype).max} (stored as {self._dtype}), "
                             f"got {int(sizes.max())}")
        out = np.empty((sig.shape[0], self._width), dtype=self._dtype)
        out[:, :-1] = sig
        out[:, -1] = sizes
        return out, sizes == 0

    def _bands(self, values):
        from .containment import _layout_keys  # noqa: PLC0415

        return _layout_keys(np.ascontiguousarray(values[:, :-1]), self.layouts, self.num_perm)

    def _scores(self, qvals, cvals, qi, ci, direction: str = "either"):
        from ..dedup.verify import containment_from_jaccard, minhash_similarity  # noqa: PLC0415

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
        from .containment import containment_candidates  # noqa: PLC0415

        sizes = values[:, -1].astype(np.int64)
        a, b = containment_candidates(np.ascontiguousarray(values[:, :-1]), sizes, self.threshold, mode=self.mode,
                                      recall=self.recall, grid=self.grid, rows=rows, sort=False)
        return unique_pairs(np.minimum(a, b), np.maximum(a, b))

    def _matches(self, values: np.ndarray, empty: np.ndarray, accept, direction: str = "either"):
        """:meth:`DiskIndex._matches` for containment: each segment probed in the query's direction
        (``direction="in"``) or in both, candidates scored by the containment estimate."""
        from .containment import class_table  # noqa: PLC0415

        if direction not in self.DIRECTIONS:
            raise ValueError(f"direction must be one of {self.DIRECTIONS}, got {direction!r}")
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
                q, d = st.probe_containment(qkeys, qsizes, self.layouts, self.num_perm, tab, max(t, 1e-9), self.grid,
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

    def _query(self, values: np.ndarray, empty: np.ndarray, accept, direction: str = "either") -> list[list[tuple]]:
        out: list[list[tuple]] = [[] for _ in range(values.shape[0])]
        if not (~empty).any():
            return out
        qi, ci, scores, keys, _, _ = self._matches(values, empty, accept, direction)
        for q, c, sc in zip(qi.tolist(), ci.tolist(), scores.tolist()):
            out[q].append((keys[c], sc))
        return out

    def add_signatures(self, keys: Sequence, values, sizes=None, replace: bool = False) -> None:
        """Add precomputed signatures (as :meth:`DiskIndex.add_signatures`) with their distinct-shingle
        counts ``sizes`` (0 exactly for an empty signature)."""
        from .containment import _check_sizes  # noqa: PLC0415

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
        from .containment import _check_sizes  # noqa: PLC0415

        if sizes is None:
            raise TypeError("a containment index needs each query's set size: query_signatures(values, sizes=...)")
        t = self._threshold(threshold)
        if isinstance(values, Signatures):
            values = values.values
        a = self._as_values(values, self.num_perm)
        ext, empty = self._with_sizes(a, _check_sizes(sizes, a, self._empty))
        return self._query(ext, empty, AtLeast(t), direction)


def stored_kind(path) -> str | None:
    """The method an existing folder index was built for (None: no index there yet, or not a folder
    index — opening it then says what is wrong)."""
    try:
        m = json.loads((Path(path) / MANIFEST).read_bytes())
        return json.loads(m["meta"]["config"])["kind"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def open_index_class(kind_or_meta):
    """The index class of a kind (``"minhash"``, ``"simhash"``, ``"containment"``) or of a store's
    metadata (its ``config``); :class:`DiskIndex` for anything else."""
    kind = kind_or_meta
    if isinstance(kind_or_meta, dict):
        try:
            kind = json.loads(kind_or_meta["config"])["kind"]
        except (KeyError, TypeError, ValueError):
            kind = None
    return {"simhash": SimHashDiskIndex, "containment": ContainmentDiskIndex}.get(kind, DiskIndex)


def open_index(path, readonly: bool = False, **options):
    """Open the index at ``path`` with the class of its kind (MinHash, containment or SimHash)."""
    return open_index_class(stored_kind(path)).open(path, readonly=readonly, **options)


def _block_masks(k: int, expected_n: int | None) -> tuple[list[int], str]:
    """Table key masks: with ``expected_n``, the layout of ``simhash_index.plan_tables`` for an
    online workload; otherwise k + 1 contiguous blocks, one table per block (pigeonhole: k
    differing bits leave at least one block equal) — the fewest band rows per document."""
    if expected_n is not None:
        from .simhash_index import plan_tables  # noqa: PLC0415

        plan = plan_tables(64, k, int(expected_n), workload="online")
        return [int(m) for m in plan.key_masks], plan.describe()
    q, rem = divmod(64, k + 1)
    masks, hi = [], 64
    for i in range(k + 1):
        width = q + (1 if i < rem else 0)
        masks.append(((1 << width) - 1) << (hi - width))
        hi -= width
    return masks, f"{k + 1} blocks of {q}-{q + (rem > 0)} bits"


class SimHashDiskIndex(_BaseDiskIndex):
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
        (paths) likewise; ``compat`` ("yanyiwu", "1e0ng") signs as that peer does (tokenizer and
        ngram unused); the feature options are those of :func:`neardup.sketches.simhash.feature_signer`."""
        max_distance = as_int(max_distance, "max_distance", 0, 31)
        if weighting == "tfidf" and idf is None:
            raise ValueError("weighting='tfidf' needs idf='jieba' or an IDF file (a fitted table is not stored by "
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
            from ..text.dictionaries import file_keys  # noqa: PLC0415

            return {"compat": self.compat, "top_n": self.config_top_n, **file_keys(**self._files)}
        return _jsonable(self.hasher.config())

    def _setup(self, config: dict) -> None:
        from ..sketches.simhash import feature_signer  # noqa: PLC0415

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
        from .simhash_index import all_pairs  # noqa: PLC0415

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
            raise ValueError(f"max_distance must be in [0, {self.max_distance}] for this index (its "
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
