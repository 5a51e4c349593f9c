"""What every index on disk shares (:mod:`neardup.index.disk`): the acceptance rules, the
configuration check, and :class:`BaseDiskIndex` — signing, storing, querying and the crawler's
check-and-add over an :class:`~neardup.index.store.IndexStore`, each flavour giving its signer, band
keys and scores."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import ConfigError, NeardupError
from .probe import probe
from .segments import SegmentStore
from .sqlite_legacy import is_sqlite_file, legacy_refusal
from .store import IndexStore, NotAnIndexError, ReadOnlyError, check_key

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


def stored_config(raw, path) -> dict:
    """An index's stored configuration (its ``config`` metadata entry, JSON), checked to be of the
    format this neardup reads; :class:`NotAnIndexError` naming ``path`` otherwise."""
    if raw is None:
        raise NotAnIndexError(f"{path} has no index configuration")
    try:
        config = json.loads(raw)
    except (TypeError, ValueError):
        raise NotAnIndexError(f"{path}: the stored configuration is not JSON") from None
    if not isinstance(config, dict):
        raise NotAnIndexError(f"{path}: the stored configuration is not a JSON object")
    if config.get("format") != INDEX_FORMAT:
        raise NotAnIndexError(f"{path}: index format {config.get('format')!r}; this neardup reads format "
                              f"{INDEX_FORMAT}")
    return config


def set_up(index, config: dict, path) -> None:
    """``index._setup(config)``; a stored configuration that lacks a parameter, or holds a value the
    signer refuses, is refused naming ``path`` (:class:`NotAnIndexError`)."""
    try:
        index._setup(config)
    except KeyError as exc:
        raise NotAnIndexError(f"{path}: the stored configuration has no {exc}") from None
    except ConfigError as exc:
        raise NotAnIndexError(f"{path}: the stored configuration is refused ({exc})") from None


class BaseDiskIndex:
    kind = ""
    _EXPECTABLE: tuple[str, ...] = ()
    _STORE_META: dict = {}        # store metadata fixed at creation (a containment index's band order)

    def __init__(self, store: IndexStore, config: dict):
        self._store = store
        self.config = config
        self.path = Path(getattr(store, "path", ""))
        set_up(self, config, self.path)

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
        """Open an existing index (a folder: :class:`SegmentStore`, unless ``store`` says otherwise).
        Keyword arguments among the creation parameters (e.g. ``num_perm=128, scheme="oph"``) are
        checked against the index: :class:`IndexConfigError` on a difference. :class:`NotAnIndexError`
        for a path that is not a neardup index, and for an SQLite index file of neardup 0.x
        (:class:`~neardup.index.sqlite_legacy.LegacyIndexError`, naming ``neardup index migrate``)."""
        if store is None:
            if is_sqlite_file(path):
                raise legacy_refusal(path)
            store = SegmentStore
        unknown = set(expect) - set(cls._EXPECTABLE)
        if unknown:
            raise TypeError(f"{cls.__name__}.open() got unexpected arguments {sorted(unknown)}; "
                            f"checkable parameters: {', '.join(cls._EXPECTABLE)}")
        st = store.open(path, readonly=readonly, synchronous=synchronous)
        try:
            config = stored_config(st.get_meta("config"), path)
            if config.get("kind") != cls.kind:
                other = {"minhash": "DiskIndex", "simhash": "SimHashDiskIndex",
                         "simhash-verified": "VerifiedSimHashDiskIndex",
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
        if stored is None:
            raise NotAnIndexError(f"{self.path} has no probe signature: it cannot be checked against this neardup")
        if stored != self._probe():
            raise IndexConfigError(
                f"{self.path} was built by neardup {self.config.get('neardup')}, which signs text "
                f"differently from this neardup {__version__} (probe signature mismatch); its "
                "signatures cannot be compared with new ones — rebuild the index")

    # -- signatures <-> bytes ---------------------------------------------------------------------
    def _encode(self, values: np.ndarray) -> list[bytes]:
        le = np.ascontiguousarray(values, dtype=self._dtype.newbyteorder("<"))
        return [le[i].tobytes() for i in range(le.shape[0])]

    def _values_of(self, raw: np.ndarray) -> np.ndarray:
        """Stored signature bytes, an (n, bytes) uint8 matrix, as (n, width) values."""
        return raw.view(self._dtype.newbyteorder("<")).reshape(raw.shape[0], self._width).astype(self._dtype)

    # -- writing ----------------------------------------------------------------------------------
    @property
    def _st(self) -> IndexStore:
        if self._store is None:
            raise ConfigError("operation on a closed index")
        return self._store

    def _put(self, keys, values: np.ndarray, empty: np.ndarray, replace: bool, bulk: bool | None = None,
             meta: dict | None = None) -> None:
        keys = [check_key(k) for k in keys]
        if len(keys) != values.shape[0]:
            raise ConfigError(f"{len(keys)} keys for {values.shape[0]} documents")
        st = self._st
        if meta or (bulk if bulk is not None else len(keys) >= BULK_DOCS):
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
            raise ConfigError(f"{len(keys)} keys for {len(texts)} texts")
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
    _probe_scores = True   # the probe kernel's score is this index's estimate (a flavour may say not)

    def _matches(self, values: np.ndarray, empty: np.ndarray, accept):
        """The one query path: arrays (query row, candidate position, score) sorted by query, best
        first, then oldest document; and per candidate position its key, document id and signature.
        Each segment is probed by one compiled pass (:func:`neardup.index.probe.probe`); keys are read
        only of the accepted. A flavour whose estimate the kernel does not compute (bottom-k) takes
        every document sharing a band from it and scores them here, with no bucket bound."""
        rows = np.flatnonzero(~empty)
        st = self._st
        values = np.ascontiguousarray(values, dtype=self._dtype)
        direct = self._probe_scores
        with st.snapshot():
            qi, docs, scores = probe(st, values, rows, self._bands(values[rows]), accept.kind,
                                     accept.limit if direct else -np.inf, self._dtype.type(self._empty_value()),
                                     self._max_bucket if direct else 0)
            ids, ci = np.unique(docs, return_inverse=True)
            keys, raw = st.fetch_arrays(ids)
        cvals = self._values_of(raw)
        if not direct:
            scores = self._scores(values, cvals, qi, ci)
            ok = accept(scores)
            qi, ci, scores = qi[ok], ci[ok], scores[ok]
        order = np.lexsort((ids[ci], self._rank(scores), qi))
        return qi[order], ci[order], scores[order], keys, ids, cvals

    def _query(self, values: np.ndarray, empty: np.ndarray, accept, **how) -> list[list[tuple]]:
        """Per query row, its ``(key, score)`` matches as :meth:`_matches` orders them (``how``: a
        flavour's own options of it, e.g. a containment index's ``direction``)."""
        out: list[list[tuple]] = [[] for _ in range(values.shape[0])]
        if not (~empty).any():
            return out
        qi, ci, scores, keys, _, _ = self._matches(values, empty, accept, **how)
        for q, c, s in zip(qi.tolist(), ci.tolist(), scores.tolist()):
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
            raise ConfigError(f"{len(keys)} keys for {values.shape[0]} documents")
        found = self._check(values, empty, accept)
        lo, hi, sc = self._within(values, empty, accept)
        by_hi: dict = {}
        for i, j, s in zip(lo.tolist(), hi.tolist(), sc.tolist()):
            by_hi.setdefault(j, []).append((i, s))
        taken = st.lookup_many(keys) >= 0
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
            raise ConfigError(f"{len(keys)} keys for {len(texts)} texts")
        if self._st.readonly:
            raise ReadOnlyError(f"{self.path} was opened read-only")
        if not keys:
            return []
        values, empty = self._sign(texts)
        return self._check_and_add(keys, values, empty, self._default_accept())

    def flush(self) -> None:
        """Make the logged online adds a segment now (they are durable already)."""
        self._st.flush()

    def note_writer(self, what: str) -> None:
        """Name this writer (after its pid) to a second one, which is refused naming it."""
        self._st.note_writer(what)

    def backup(self, dest) -> dict:
        """A consistent copy of the index as a new folder ``dest`` (opened for writing: see
        :meth:`~neardup.index.segments.SegmentStore.backup`)."""
        return self._st.backup(dest)

    def compact(self) -> None:
        """Rewrite the index as one segment without removed documents."""
        self._st.compact()

    def get(self, key):
        """The stored signature of ``key`` (a NumPy row), or ``KeyError``."""
        st = self._st
        with st.snapshot():
            doc = st.lookup(key)
            if doc < 0:
                raise KeyError(key)
            _, raw = st.fetch_arrays([doc])
        return self._values_of(raw)[0]

    def stats(self) -> dict:
        """documents, bytes on disk, segments, and the parameters the index was built with."""
        st = self._st
        out = {"documents": len(self), "path": str(self.path), "store": type(st).__name__,
               "bytes": st.size_bytes(), "segments": len(st.segments()), "generation": st.generation}
        out["parameters"] = {k: v for k, v in self.config.items() if k not in ("hasher",)}
        return out

    def __len__(self) -> int:
        return self._st.count()

    def snapshot(self):
        """Context manager: every read inside sees one committed state of the index."""
        return self._st.snapshot()

    def check(self) -> dict:
        """Store consistency report (see :meth:`IndexStore.check`)."""
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



_BaseDiskIndex = BaseDiskIndex
