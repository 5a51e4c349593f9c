"""MinHash LSH in memory, for people coming from datasketch: ``insert(key, sketch)``,
``query(sketch)``, ``remove(key)``, ``key in lsh``, batch insertion, and ``top_k`` (an LSH Forest).

Sketches may be neardup :class:`~neardup.sketches.minhash.MinHash` objects, rows of a
:class:`~neardup.sketches.minhash.Signatures` matrix or plain arrays — and datasketch ``MinHash`` /
``LeanMinHash`` objects when the index uses the scheme that reproduces them bit for bit
(``datasketch-legacy`` or ``datasketch-affine32``, as the sketch's own ``scheme`` says; same seed
and ``num_perm``).

``query`` returns the keys whose estimated Jaccard is at least the threshold (banding finds a pair
at the threshold with probability ≥ ``recall``; candidates are verified on the full signature,
which datasketch leaves to the caller). :meth:`save` writes the on-disk format of
:class:`~neardup.index.disk.DiskIndex`, so an index built here can be grown by ``dedup --index``
and served by ``neardup serve``.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from ..errors import ConfigError
from ..kernels.jaccard import top_k_jaccard
from ..kernels.lsh import band_keys
from ..sketches.minhash import _DTYPES, empty_value, jaccard_rows
from .lsh import choose_params
from .sketch_input import SketchInput, new_keys


class MinHashLSH(SketchInput):
    """Banded MinHash LSH over sketches of ``num_perm`` slots (``scheme``, ``seed``), all in memory."""

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, scheme: str = "oph", seed: int = 1,
                 lsh_mode: str = "recall", recall: float = 0.99, b: int | None = None, r: int | None = None,
                 trees: int = 8):
        if scheme == "bottomk":
            raise ConfigError("bottom-k sketches cannot be banded; use scheme 'oph' or 'permutation'")
        params = choose_params(float(threshold), int(num_perm), lsh_mode, recall, b, r)
        self.threshold, self.num_perm, self.scheme, self.seed = float(threshold), int(num_perm), scheme, int(seed)
        self.b, self.r = params.b, params.r
        self.lsh_mode, self.recall = params.mode, recall
        if trees < 1 or num_perm // trees < 1:
            raise ConfigError(f"trees must be in [1, num_perm]; got {trees}")
        self.trees = int(trees)
        self._dtype = np.dtype(_DTYPES[scheme])
        self._empty = self._dtype.type(empty_value(scheme))
        self._sig = np.zeros((0, self.num_perm), dtype=self._dtype)
        self._n = 0
        self._keys: list = []
        self._row: dict = {}
        self._live = np.zeros(0, dtype=bool)
        self._tables: list[dict] = [{} for _ in range(self.b)]
        self._perms = None
        # shingle sets for exact top-k (insert_batch(..., features=)): one CSR of sorted distinct
        # hashes, row r at _fh[_fstart[r]:_fend[r]] (−1: none kept)
        self._fh = np.zeros(0, dtype=np.uint64)
        self._fused = 0
        self._fstart = np.full(0, -1, dtype=np.int64)
        self._fend = np.full(0, -1, dtype=np.int64)

    # -- sketches in ------------------------------------------------------------------------------
    # -- writing ------------------------------------------------------------------------------------
    def insert(self, key: Hashable, sketch) -> None:
        """Add one sketch under ``key`` (``ValueError`` if the key is there)."""
        self.insert_batch([key], [sketch])

    def insert_batch(self, keys: Sequence, sketches, features=None) -> None:
        """Add many sketches at once (band keys by the batch kernel); all or nothing. ``features``
        (a :class:`~neardup.features.Features` of the same rows, e.g. ``Shingler().features(texts)``)
        keeps each document's distinct shingle hashes (8 bytes each) so that :meth:`top_k` can rank
        by exact Jaccard."""
        values = self._values(sketches)
        keys = new_keys(keys, values.shape[0], self._row)
        if features is not None:
            features = features.unique()
            if len(features) != values.shape[0]:
                raise ConfigError(f"features of {len(features)} documents for {values.shape[0]} sketches")
        if not keys:
            return
        start = self._n
        need = start + len(keys)
        if need > self._sig.shape[0]:
            grown = np.empty((max(need, 2 * self._sig.shape[0], 64), self.num_perm), dtype=self._dtype)
            grown[:start] = self._sig[:start]
            self._sig = grown
            live = np.zeros(grown.shape[0], dtype=bool)
            live[:start] = self._live[:start]
            self._live = live
            fs, fe = np.full(grown.shape[0], -1, np.int64), np.full(grown.shape[0], -1, np.int64)
            fs[:start], fe[:start] = self._fstart[:start], self._fend[:start]
            self._fstart, self._fend = fs, fe
        self._fstart[start:need] = -1
        self._fend[start:need] = -1
        if features is not None:
            h = features.hashes
            if self._fused + h.shape[0] > self._fh.shape[0]:
                grown_h = np.empty(max(self._fused + h.shape[0], 2 * self._fh.shape[0]), dtype=np.uint64)
                grown_h[:self._fused] = self._fh[:self._fused]
                self._fh = grown_h
            self._fh[self._fused:self._fused + h.shape[0]] = h
            self._fstart[start:need] = self._fused + features.offsets[:-1]
            self._fend[start:need] = self._fused + features.offsets[1:]
            self._fused += h.shape[0]
        self._sig[start:need] = values
        self._live[start:need] = True
        empty = np.all(values == self._empty, axis=1)
        bk = band_keys(values, self.b, self.r)
        for i, k in enumerate(keys):
            row = start + i
            self._row[k] = row
            self._keys.append(k)
            if empty[i]:
                continue
            for t in range(self.b):
                self._tables[t].setdefault(int(bk[i, t]), []).append(row)
        self._n = need
        self._perms = None

    def remove(self, key: Hashable) -> None:
        """Remove ``key`` (``KeyError`` if absent)."""
        row = self._row.pop(key)
        self._live[row] = False
        if not np.all(self._sig[row] == self._empty):
            bk = band_keys(self._sig[row:row + 1], self.b, self.r)[0]
            for t in range(self.b):
                bucket = self._tables[t].get(int(bk[t]))
                if bucket is not None:
                    bucket.remove(row)
                    if not bucket:
                        del self._tables[t][int(bk[t])]

    # -- reading ------------------------------------------------------------------------------------
    def __contains__(self, key) -> bool:
        return key in self._row

    def __len__(self) -> int:
        return len(self._row)

    def query(self, sketch, threshold: float | None = None, with_scores: bool = False) -> list:
        """Keys whose estimated Jaccard with ``sketch`` is ≥ the threshold (default: the index's),
        best first (ties: the older key); ``with_scores``: (key, estimate) pairs."""
        return self.query_batch([sketch], threshold, with_scores)[0]

    def query_batch(self, sketches, threshold: float | None = None, with_scores: bool = False) -> list[list]:
        """:meth:`query` for many sketches: candidates gathered from the band tables, then scored in
        one call and sorted once."""
        t = self.threshold if threshold is None else float(threshold)
        values = self._values(sketches)
        nq = values.shape[0]
        bk = band_keys(values, self.b, self.r).tolist()
        empty = np.all(values == self._empty, axis=1)
        qs, rows = [], []
        tables = self._tables
        for i in range(nq):
            if empty[i]:
                continue
            found: set = set()
            for b, key in enumerate(bk[i]):
                bucket = tables[b].get(key)
                if bucket:
                    found.update(bucket)
            qs.extend([i] * len(found))
            rows.extend(found)
        out: list[list] = [[] for _ in range(nq)]
        if not rows:
            return out
        qi = np.asarray(qs, dtype=np.int64)
        ri = np.asarray(rows, dtype=np.int64)
        uniq, at = np.unique(ri, return_inverse=True)          # only the candidates' rows are read
        both = np.concatenate([values, self._sig[uniq]])
        est = jaccard_rows(both, qi, at.astype(np.int64) + nq, self.scheme)
        ok = est >= t
        qi, ri, est = qi[ok], ri[ok], est[ok]
        order = np.lexsort((ri, -est, qi))
        keys = self._keys
        for q, r, e in zip(qi[order].tolist(), ri[order].tolist(), est[order].tolist()):
            out[q].append((keys[r], e) if with_scores else keys[r])
        return out

    def top_k(self, sketch, k: int = 10, candidates: int | None = None, features=None) -> list[tuple]:
        """The ``k`` indexed sketches most similar to ``sketch``, as (key, Jaccard), best first —
        from an LSH Forest of ``trees`` trees (:mod:`neardup.kernels.forest`) that gathers at least
        ``candidates`` by longest shared prefix. Without ``features`` they are ranked by the estimate
        on the full signature (default 4k candidates); with the query's ``features`` (its shingles,
        a one-document :class:`~neardup.features.Features`) by exact Jaccard against the shingle sets
        kept by :meth:`insert_batch` (default max(15k, 150) candidates; the scores are then exact):
        the estimate's ±sqrt(J(1 − J)/num_perm) noise reorders documents of nearly equal J, which
        exact ranking does not. Fewer than ``k`` when fewer indexed sketches share even the first slot
        of a tree with it (they are then dissimilar: a slot agrees with probability J)."""
        from ..kernels.forest import build_keys, build_perms, forest_top_k  # noqa: PLC0415  (numba kernels, 2-5 ms of import for every command: only top_k runs them)

        if k < 1:
            raise ConfigError(f"k must be ≥ 1; got {k}")
        q = self._values([sketch])[0]
        n = self._n
        if n == 0:
            return []
        m = self.num_perm // self.trees
        if self._perms is None:
            self._perms = build_perms(self._sig[:n], self.trees, m)
            self._pkeys = build_keys(self._sig[:n], self._perms, m)
        if features is None:
            rows, est = forest_top_k(self._sig[:n], self._perms, self._pkeys, self._live[:n], m, q,
                                     int(candidates or 4 * k), int(k), self._empty)
            return [(self._keys[r], float(e)) for r, e in zip(rows.tolist(), est.tolist())]
        u = features.unique()
        if len(u) != 1:
            raise ConfigError(f"features must be of the one query document; got {len(u)} documents")
        # 150 for k = 10: recall@10 0.937 at ~1,190 queries/s on the 92 MB corpus (200: 0.941 at
        # ~1,040; 100: 0.927 at ~1,300; benchmarks/INDEX.md)
        want = int(candidates or max(15 * k, 150))
        rows, _ = forest_top_k(self._sig[:n], self._perms, self._pkeys, self._live[:n], m, q, want, want,
                               self._empty)
        missing = rows[self._fstart[rows] < 0]
        if missing.shape[0]:
            raise ConfigError(f"no shingles kept for {self._keys[int(missing[0])]!r} (inserted without features): "
                              "exact top-k needs every document's; insert_batch(keys, sketches, features=...)")
        rows, exact = top_k_jaccard(u.hashes, self._fh, self._fstart, self._fend, rows, int(k))
        return [(self._keys[r], float(e)) for r, e in zip(rows.tolist(), exact.tolist())]

    # -- on disk -------------------------------------------------------------------------------------
    def save(self, path, tokenizer: str = "word", ngram: int = 5) -> None:
        """Write the live sketches as a :class:`~neardup.index.disk.DiskIndex` folder (keys must be
        str, int or bytes). ``tokenizer``/``ngram`` record the text pipeline that queries by text
        will use; they do not change the stored sketches."""
        from .disk import DiskIndex  # noqa: PLC0415  (a cycle: disk → disk_minhash → containment → this module)

        rows = np.flatnonzero(self._live[:self._n])          # a key removed and inserted again: its new row
        live = [self._keys[r] for r in rows.tolist()]
        with DiskIndex.create(path, threshold=self.threshold, num_perm=self.num_perm, scheme=self.scheme,
                              seed=self.seed, tokenizer=tokenizer, ngram=ngram, b=self.b, r=self.r) as idx:
            idx.add_signatures(live, self._sig[rows] if rows.size else np.zeros((0, self.num_perm), self._dtype))

    @classmethod
    def load(cls, path, trees: int = 8) -> MinHashLSH:
        """The sketches of a :class:`~neardup.index.disk.DiskIndex` folder, in memory."""
        from .disk import DiskIndex  # noqa: PLC0415  (a cycle: disk → disk_minhash → containment → this module)

        with DiskIndex.open(path, readonly=True) as idx:
            c = idx.config
            lsh = cls(c["threshold"], c["num_perm"], c["scheme"], c["seed"], b=c["b"], r=c["r"], trees=trees)
            st = idx.store
            with st.snapshot():
                keys, raw = st.fetch_arrays(st.live_ids())
            values = idx._values_of(raw)
        lsh.insert_batch(keys, values)
        return lsh
