"""Containment search with MinHash: which indexed documents X hold a query Q to C = |Q ∩ X| / |Q| ≥ t.

After LSH Ensemble (E. Zhu, F. Nargesian, K. Q. Pu, R. J. Miller, "LSH Ensemble: Internet-Scale
Domain Search", VLDB 2016). MinHash estimates Jaccard, and for sizes q = |Q|, x = |X|

    J = C q / (q + x − C q) = C / (1 + ρ − C),      ρ = x / q,

so a containment threshold t is the Jaccard threshold t / (1 + ρ − t) — one that falls as the
document grows (a 200-word passage in a 1,154-word document: C = 1, J ≈ 0.15). Banding with
(b, r) tuned for J ≥ t misses such pairs entirely: the parameters have to depend on ρ.

Partitioning. J falls with x at fixed C, so banding a set of documents with x ≤ u as if all had
size u never loses recall; it only admits more false positives from the smaller ones, which is
why Zhu et al. split the documents by size (equi-depth, near-optimal for power-law sizes) into a
few partitions with an index each. Here the band key of band i of layout r (⌊k/r⌋ bands of r
rows, :mod:`neardup.kernels.containment`) is the same function of the signature in every size
class, so one table per band serves all classes; a class only decides which probed hits count.
Classes are therefore free, and they are fine and fixed: ratio class m = ⌈G log₂(x / q)⌉ holds
ρ ∈ (2^((m−1)/G), 2^(m/G)] and is banded for its upper end ρ_m = 2^(m/G) (G = 8 by default,
so each pair is banded for a ρ at most 9 % above its own, whatever the size distribution, and an
index that grows never re-partitions).

Banding per class (the query's size enters only through ρ): with P(c) = 1 − (1 − J(c)^r)^b,
J(c) = c / (1 + ρ_m − c),

* ``mode="recall"`` (default, as :func:`neardup.index.lsh.recall_params`): the (b, r) with
  P(t) ≥ ``recall`` (0.99) that admits the least false-positive mass ∫₀ᵗ P(c) dc; where no
  (b, r) with b r ≤ k reaches it (tiny J_t: passages far smaller than the document) the one with
  the largest P(t). The bound holds per pair: P grows with J, J grows with C and falls with ρ,
  and ρ_m ≥ ρ, so a pair with C ≥ t is a candidate with probability ≥ P(t) of its class.
* ``mode="ensemble"``: Zhu et al.'s criterion, the least ∫₀ᵗ P dc + ∫ₜ¹ (1 − P) dc (the second
  integral with ρ_m raised to 1 for documents smaller than the query, which reach only C ≤ ρ).

The index stores band keys for the layouts r that the table at its threshold uses, so queries of
every size are answered from one set of tables. Documents with x < t q cannot reach C ≥ t and are
never visited. Candidates are then checked: on the exact shingle sets when the index keeps them
(``verify="exact"``), or by the estimate Ĉ = Ĵ (q + x) / ((1 + Ĵ) q) (``"minhash"``; noisy when
the query is a small part of the document: Ĵ's relative error is about 1 / sqrt(J k)), or not at
all (``"none"``).
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from functools import lru_cache

import numpy as np

from ..errors import ConfigError
from ..features.shingles import Features
from ..kernels.containment import cross_intersections, probe
from ..kernels.lsh import band_keys
from ..similarity.estimates import containment_from_jaccard
from ..sketches.minhash import _DTYPES, MinHasher, Signatures, empty_value, jaccard_rows
from .lsh import _GL_W, _GL_X
from .sketch_input import SketchInput, new_keys

MODES = ("recall", "ensemble")
VERIFY = ("exact", "minhash", "none")
GRID = 8                 # ratio classes per doubling of x / q
MAX_OCTAVES = 24         # classes cover x / q up to 2^24; larger ratios use the last class


def _check_threshold(t) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not 0.0 < float(t) <= 1.0:
        raise ConfigError(f"threshold must be a number in (0, 1], got {t!r}")
    return float(t)


def _nodes(lo: float, hi: float, pieces: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [lo, hi] (64 per piece)."""
    edges = np.linspace(lo, hi, pieces + 1)
    xs = [0.5 * (c - a) * _GL_X + 0.5 * (c + a) for a, c in zip(edges[:-1], edges[1:])]
    ws = [0.5 * (c - a) * _GL_W for a, c in zip(edges[:-1], edges[1:])]
    return np.concatenate(xs), np.concatenate(ws)


def containment_to_jaccard(c, ratio):
    """J of a pair with containment C of Q in X and ρ = |X| / |Q|: C / (1 + ρ − C)."""
    c = np.asarray(c, dtype=np.float64)
    return c / (1.0 + np.asarray(ratio, dtype=np.float64) - c)


def _choose(t: float, ratio: float, num_perm: int, layouts: tuple, mode: str, recall: float) -> tuple[int, int]:
    """(b, r) for one ratio class (see the module docstring); r among ``layouts``."""
    c0, w0 = _nodes(0.0, t)
    j0 = containment_to_jaccard(c0, ratio)
    jt = t / (1.0 + ratio - t)
    rs = np.asarray(layouts, dtype=np.int64)
    if mode == "recall":
        pt = jt ** rs.astype(np.float64)
        bmax = num_perm // rs
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # pt → 0: need → inf
            need = np.where(pt >= 1.0, 1.0, np.log1p(-recall) / np.log1p(-np.minimum(pt, 1.0)))
        ok = (pt > 0) & (need <= bmax + 1e-12)
        b = np.where(ok, np.maximum(1.0, np.ceil(need - 1e-12)), bmax).astype(np.int64)
        if not ok.any():             # no (b, r) reaches the target: the most sensitive one
            p_at_t = 1.0 - (1.0 - pt) ** b
            ok = p_at_t >= p_at_t.max() * (1 - 1e-12)
        fp = (1.0 - (1.0 - j0[None, :] ** rs[:, None]) ** b[:, None]) @ w0
        cost = np.where(ok, fp, np.inf)
        best = int(np.lexsort((b * rs, cost))[0])
        return int(b[best]), int(rs[best])
    # documents smaller than the query (ρ < 1) only reach C ≤ ρ, so FN would weigh [t, ρ], a range that
    # vanishes at ρ = t and lets the criterion pick bands that find nothing; they are weighed as ρ = 1
    c1, w1 = _nodes(t, 1.0) if t < 1.0 else (np.zeros(0), np.zeros(0))
    j1 = containment_to_jaccard(c1, max(ratio, 1.0))
    best, best_err = (1, int(rs[0])), np.inf
    for r in rs.tolist():
        bs = np.arange(1, num_perm // r + 1, dtype=np.float64)[:, None]
        fp = (1.0 - (1.0 - j0[None, :] ** r) ** bs) @ w0
        fn = ((1.0 - j1[None, :] ** r) ** bs) @ w1
        err = fp + fn
        i = int(np.argmin(err))
        if err[i] < best_err:
            best, best_err = (i + 1, r), float(err[i])
    return best


@lru_cache(maxsize=64)
def class_table(threshold: float, num_perm: int, layouts: tuple, mode: str = "recall", recall: float = 0.99,
                grid: int = GRID) -> tuple[int, np.ndarray, np.ndarray]:
    """(m_lo, r per class, b per class) for ratio classes m_lo … grid·MAX_OCTAVES, where m_lo is
    the class of ρ = t (smaller documents cannot hold a fraction t of the query)."""
    m_lo = math.ceil(grid * math.log2(threshold) - 1e-9)
    ms = np.arange(m_lo, grid * MAX_OCTAVES + 1)
    tab = np.array([_choose(threshold, 2.0 ** (m / grid), num_perm, layouts, mode, recall) for m in ms.tolist()],
                   dtype=np.int64)
    tab_b, tab_r = tab[:, 0].copy(), tab[:, 1].copy()
    tab_b.flags.writeable = tab_r.flags.writeable = False
    return m_lo, tab_r, tab_b


def containment_params(threshold: float, num_perm: int, query_size: int, doc_size: int, mode: str = "recall",
                       recall: float = 0.99, layouts: Sequence[int] | None = None, grid: int = GRID) -> tuple[int, int]:
    """The (b, r) with which a query of ``query_size`` distinct shingles is banded against a document of
    ``doc_size`` (those of its ratio class)."""
    t = _check_threshold(threshold)
    if not (query_size >= 1 and doc_size >= 1):
        raise ConfigError(f"sizes must be ≥ 1 (an empty set is in no pair); got {query_size}, {doc_size}")
    lay = tuple(layouts) if layouts is not None else tuple(range(1, num_perm + 1))
    m_lo, tab_r, tab_b = class_table(t, int(num_perm), lay, mode, float(recall), int(grid))
    m = math.ceil(grid * math.log2(doc_size / query_size) - 1e-9)
    i = min(max(m - m_lo, 0), tab_r.shape[0] - 1)
    return int(tab_b[i]), int(tab_r[i])


def _check_sizes(sizes, values: np.ndarray, empty=None) -> np.ndarray:
    """Distinct-shingle counts as int64: finite, whole, ≥ 0, one per row, and (given the ``empty``
    slot value) 0 exactly on empty rows."""
    s = np.asarray(sizes)
    if s.ndim != 1 or s.shape[0] != values.shape[0]:
        raise ConfigError(f"sizes must be a 1-d array with one size per sketch ({values.shape[0]}); "
                          f"got shape {s.shape}")
    if s.dtype.kind not in "iuf" and s.size:
        raise ConfigError(f"sizes must be numbers, got dtype {s.dtype}")
    sf = s.astype(np.float64)
    if s.size and not (np.all(np.isfinite(sf)) and np.all(sf >= 0) and np.all(sf == np.floor(sf))):
        raise ConfigError("sizes must be whole numbers ≥ 0 (distinct shingles per document); got NaN, "
                          "infinite, negative or fractional values")
    s = s.astype(np.int64)
    if empty is None:
        return s
    is_empty = np.all(values == empty, axis=1)
    bad = np.flatnonzero(is_empty != (s == 0))
    if bad.size:
        raise ConfigError(f"row {int(bad[0])}: size {int(s[bad[0]])} but the sketch is "
                          f"{'empty' if is_empty[bad[0]] else 'not empty'} (size 0 ⇔ empty sketch)")
    return s


class _Table:
    """Band tables of the rows [start, end): per band column, the rows sorted by (key, size)."""

    __slots__ = ("start", "end", "keys", "rows")

    def __init__(self, start: int, end: int, values: np.ndarray, sizes: np.ndarray, layouts: tuple, num_perm: int):
        self.start, self.end = start, end
        by_size = np.argsort(sizes, kind="stable")
        bk = _layout_keys(np.ascontiguousarray(values[by_size]), layouts, num_perm)
        nb, n = bk.shape[1], bk.shape[0]
        self.keys = np.empty((nb, n), dtype=np.uint64)
        self.rows = np.empty((nb, n), dtype=np.int32)    # global row ids (< 2^31)
        for c in range(nb):
            col = bk[:, c]
            o = np.argsort(col, kind="stable")          # stable: equal keys stay in size order
            self.keys[c] = col[o]
            self.rows[c] = by_size[o] + start

    def __len__(self) -> int:
        return self.end - self.start


def _layout_keys(values: np.ndarray, layouts: tuple, num_perm: int) -> np.ndarray:
    """Band keys of every layout side by side: (n × Σ ⌊k/r⌋)."""
    if not layouts:
        return np.zeros((values.shape[0], 0), dtype=np.uint64)
    return np.concatenate([band_keys(values, num_perm // r, r) for r in layouts], axis=1)


def _probe(tables: list[_Table], qvalues, qsizes, qrows, sizes, live, layouts, num_perm, threshold, tab, grid):
    """Candidate (query, row) pairs of a batch against every table."""
    m_lo, tab_r, tab_b = tab
    lay_r = np.asarray(layouts, dtype=np.int64)
    lay_start = np.concatenate([[0], np.cumsum(num_perm // lay_r)]).astype(np.int64)
    qkeys = _layout_keys(np.ascontiguousarray(qvalues), layouts, num_perm)
    max_size = int(sizes.max()) if sizes.shape[0] else 0
    seen = np.zeros(sizes.shape[0], dtype=np.bool_)
    qs, rs = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for tb in tables:
        qi, ri = probe(qkeys, qsizes, qrows, tb.keys, tb.rows, sizes, live, lay_r, lay_start, tab_r, tab_b,
                       m_lo, float(grid), float(threshold), max_size, seen)
        qs.append(qi)
        rs.append(ri)
    return np.concatenate(qs), np.concatenate(rs)


def containment_candidates(signatures, sizes, threshold: float, *, mode: str = "recall", recall: float = 0.99,
                           grid: int = GRID, rows=None, sort: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs (i, j) of a collection for containment of document i in document j,
    C(i ⊆ j) = |S_i ∩ S_j| / |S_i| ≥ ``threshold``: each pair banded for its own size ratio
    (module docstring), i ≠ j, documents of size 0 never in a pair, pairs sorted by (i, j). Both
    directions of a pair may appear. ``signatures``: a :class:`Signatures` or an n × k array;
    ``sizes``: distinct shingles per document; ``rows``: the documents to consider (default all;
    the pairs name rows of the whole matrix); ``sort=False`` leaves them in no particular order (a
    caller that folds both directions together sorts once itself)."""
    t = _check_threshold(threshold)
    if isinstance(signatures, Signatures):
        if signatures.scheme == "bottomk":
            raise ConfigError("bottom-k sketches cannot be banded; use scheme 'oph' or 'permutation'")
        values = signatures.values
    else:
        values = np.asarray(signatures)
        if values.ndim != 2 or values.dtype.kind not in "iu":
            raise ConfigError(f"signatures must be an n × k integer matrix; got shape {values.shape}, {values.dtype}")
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {mode!r}")
    k = values.shape[1]
    sizes = _check_sizes(sizes, values)
    ids = np.arange(values.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    sub_sizes = sizes[ids]
    ids, sub_sizes = ids[sub_sizes > 0], sub_sizes[sub_sizes > 0]
    if ids.shape[0] < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    sub = np.ascontiguousarray(values[ids])
    layouts = _layouts(t, k, mode, recall, grid)
    tab = class_table(t, k, layouts, mode, float(recall), int(grid))
    table = _Table(0, ids.shape[0], sub, sub_sizes, layouts, k)
    local = np.arange(ids.shape[0], dtype=np.int64)
    qi, ri = _probe([table], sub, sub_sizes, local, sub_sizes, np.ones(ids.shape[0], np.bool_), layouts, k, t, tab,
                    grid)
    if not sort:
        return ids[qi], ids[ri]
    order = np.lexsort((ri, qi))
    return ids[qi[order]], ids[ri[order]]


def _layouts(threshold: float, num_perm: int, mode: str, recall: float, grid: int) -> tuple:
    """The layouts r that the classes at ``threshold`` use, when any r ≤ k may be chosen."""
    _, tab_r, _ = class_table(threshold, num_perm, tuple(range(1, num_perm + 1)), mode, float(recall), int(grid))
    return tuple(sorted(set(tab_r.tolist())))


class ContainmentIndex(SketchInput):     # (sketches of any accepted kind → an n × k matrix)
    """Documents indexed for containment queries: :meth:`query` gives the keys of the indexed
    documents that contain a text to at least the threshold (C = |Q ∩ X| / |Q| over shingle sets).

    ``ContainmentIndex(threshold=0.8, num_perm=128, scheme="oph", seed=1, tokenizer="word", ngram=5)``;
    documents come in by text (:meth:`add`), as :class:`Features` (:meth:`add_features`) or as
    sketches with their distinct-shingle counts (:meth:`add_signatures`). ``keep_shingles`` (default
    True) keeps each document's distinct shingle hashes (8 bytes each) so that answers can be
    exact; an index without them answers from the MinHash estimate. ``mode``/``recall``: how each
    size ratio is banded (module docstring). The threshold can be changed per query; the bands
    stored are those that the index threshold's classes use, and another threshold chooses among
    them.
    """

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, scheme: str = "oph", seed: int = 1, *,
                 tokenizer: str = "word", ngram: int = 5, normalizer="default", hash_seed: int = 0,
                 mode: str = "recall", recall: float = 0.99, keep_shingles: bool = True, grid: int = GRID):
        self.threshold = _check_threshold(threshold)
        if scheme == "bottomk":
            raise ConfigError("bottom-k sketches cannot be banded; use scheme 'oph' or 'permutation'")
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {mode!r}")
        if not 0.0 < recall < 1.0:
            raise ConfigError(f"recall must be in (0, 1), got {recall!r}")
        if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or not 1 <= grid <= 64:
            raise ConfigError(f"grid must be an integer in [1, 64], got {grid!r}")
        self.hasher = MinHasher(num_perm, scheme, seed, tokenizer=tokenizer, ngram=ngram, normalizer=normalizer,
                                hash_seed=hash_seed)
        if num_perm < 2:
            raise ConfigError(f"num_perm must be ≥ 2 for banding, got {num_perm}")
        self.num_perm, self.scheme, self.seed = int(num_perm), scheme, int(seed)
        self.mode, self.recall, self.grid = mode, float(recall), int(grid)
        self.keep_shingles = bool(keep_shingles)
        self.layouts = _layouts(self.threshold, self.num_perm, mode, self.recall, self.grid)
        self._dtype = np.dtype(_DTYPES[scheme])
        self._empty = self._dtype.type(empty_value(scheme))
        self._sig = np.zeros((0, self.num_perm), dtype=self._dtype)
        self._sizes = np.zeros(0, dtype=np.int64)
        self._live = np.zeros(0, dtype=np.bool_)
        self._n = 0
        self._keys: list = []
        self._row: dict = {}
        self._tables: list[_Table] = []
        self._sh = np.zeros(0, dtype=np.uint64)          # distinct shingle hashes of row d:
        self._sh_off = np.zeros(1, dtype=np.int64)       # _sh[_sh_off[d]:_sh_off[d+1]]

    # -- writing ------------------------------------------------------------------------------------
    def add(self, keys: Sequence, texts: Sequence) -> None:
        """Index documents given as text (``str`` or UTF-8 ``bytes``), one key each."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("add() takes a sequence of texts; wrap one text in a list")
        self.add_features(keys, self.hasher.shingler.features(list(texts)), texts=texts)

    def add_features(self, keys: Sequence, features: Features, *, texts: Sequence | None = None) -> None:
        """Index documents given as shingle :class:`Features` (of this index's shingler)."""
        u = features.unique()
        self._insert(keys, self._sign(u, texts), u.sizes(), u if self.keep_shingles else None)

    def _sign(self, feats: Features, texts) -> np.ndarray:
        if not self.scheme.startswith("datasketch"):
            return self.hasher.sign_features(feats).values
        if texts is None:
            raise ConfigError(f"scheme {self.scheme!r} hashes shingle strings: give these documents as text")
        return self.hasher.sign_batch(list(texts)).values

    def add_signatures(self, keys: Sequence, sketches, sizes) -> None:
        """Index documents given as sketches (a :class:`Signatures`, an n × k array, or MinHash
        objects) with their distinct-shingle counts. Only for an index with ``keep_shingles=False``:
        the others answer exactly and need every document's shingles."""
        if self.keep_shingles:
            raise ConfigError("this index keeps shingles for exact answers (keep_shingles=True): add documents "
                              "by text or features, or create it with keep_shingles=False")
        values = self._values(sketches)
        self._insert(keys, values, _check_sizes(sizes, values, self._empty), None)

    def _insert(self, keys: Sequence, values: np.ndarray, sizes: np.ndarray, feats: Features | None) -> None:
        keys = new_keys(keys, values.shape[0], self._row)
        if not keys:
            return
        start, end = self._n, self._n + len(keys)
        if end > self._sig.shape[0]:
            cap = max(end, 2 * self._sig.shape[0], 64)
            self._sig = _grown(self._sig, cap, start)
            self._sizes = _grown(self._sizes, cap, start)
            self._live = _grown(self._live, cap, start)
        self._sig[start:end] = values
        self._sizes[start:end] = sizes
        self._live[start:end] = True
        if feats is not None:
            need = self._sh_off[-1] + feats.hashes.shape[0]
            if need > self._sh.shape[0]:
                self._sh = _grown(self._sh, max(need, 2 * self._sh.shape[0]), int(self._sh_off[-1]))
            self._sh[self._sh_off[-1]:need] = feats.hashes
            self._sh_off = np.concatenate([self._sh_off, self._sh_off[-1] + feats.offsets[1:]])
        for i, k in enumerate(keys):
            self._row[k] = start + i
        self._keys.extend(keys)
        self._n = end
        self._tables.append(_Table(start, end, values, sizes, self.layouts, self.num_perm))
        # binary-counter merging: O(log n) tables, each row re-sorted O(log n) times
        while len(self._tables) > 1 and len(self._tables[-1]) >= len(self._tables[-2]):
            b, a = self._tables.pop(), self._tables.pop()
            self._tables.append(_Table(a.start, b.end, self._sig[a.start:b.end], self._sizes[a.start:b.end],
                                       self.layouts, self.num_perm))

    def remove(self, key: Hashable) -> None:
        """Remove ``key`` (``KeyError`` if absent); its entries stay in the tables, skipped."""
        row = self._row.pop(key)
        self._live[row] = False

    # -- reading ------------------------------------------------------------------------------------
    def __contains__(self, key) -> bool:
        return key in self._row

    def __len__(self) -> int:
        return len(self._row)

    def params(self, query_size: int, doc_size: int, threshold: float | None = None) -> tuple[int, int]:
        """(b, r) with which a query of ``query_size`` distinct shingles meets a document of ``doc_size``."""
        return containment_params(self.threshold if threshold is None else threshold, self.num_perm, query_size,
                                  doc_size, self.mode, self.recall, self.layouts, self.grid)

    def query(self, text, threshold: float | None = None, verify: str | None = None, with_scores: bool = False):
        """Keys of the documents that contain ``text`` to at least the threshold, best first."""
        if not isinstance(text, (str, bytes)):
            raise TypeError(f"query() takes one text (str or bytes), got {type(text).__name__}")
        return self.query_batch([text], threshold, verify, with_scores)[0]

    def query_batch(self, texts: Sequence, threshold: float | None = None, verify: str | None = None,
                    with_scores: bool = False) -> list[list]:
        """:meth:`query` for many texts. ``verify``: ``"exact"`` (the default when the index keeps
        shingles: C on the shingle sets), ``"minhash"`` (the estimate from Ĵ and the sizes; the
        default otherwise), ``"none"`` (every candidate, scored by the estimate)."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("query_batch() takes a sequence of texts; use query() for one")
        return self.query_features(self.hasher.shingler.features(list(texts)), threshold, verify, with_scores,
                                   texts=texts)

    def query_features(self, features: Features, threshold: float | None = None, verify: str | None = None,
                       with_scores: bool = False, *, texts: Sequence | None = None) -> list[list]:
        """:meth:`query_batch` for queries given as shingle :class:`Features` (of this index's shingler)."""
        feats = features.unique()
        return self._answer(self._sign(feats, texts), feats.sizes(), feats, threshold, verify, with_scores)

    def query_signatures(self, sketches, sizes, threshold: float | None = None, verify: str = "minhash",
                         with_scores: bool = False) -> list[list]:
        """Queries given as sketches with their distinct-shingle counts (``verify`` ``"minhash"`` or
        ``"none"``: there are no shingles to check)."""
        if verify not in ("minhash", "none"):
            raise ConfigError(f"a query by sketch has no shingles: verify must be 'minhash' or 'none', got {verify!r}")
        values = self._values(sketches)
        return self._answer(values, _check_sizes(sizes, values, self._empty), None, threshold, verify, with_scores)

    def candidates(self, sketches, sizes, threshold: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The raw candidate pairs (query index, row) of a batch of sketches, before any check."""
        values = self._values(sketches)
        sizes = _check_sizes(sizes, values, self._empty)
        t = self.threshold if threshold is None else _check_threshold(threshold)
        tab = class_table(t, self.num_perm, self.layouts, self.mode, self.recall, self.grid)
        n = self._n
        return _probe(self._tables, values, sizes, np.full(values.shape[0], -1, np.int64), self._sizes[:n],
                      self._live[:n], self.layouts, self.num_perm, t, tab, self.grid)

    def _answer(self, values, qsizes, feats, threshold, verify, with_scores) -> list[list]:
        t = self.threshold if threshold is None else _check_threshold(threshold)
        if verify is None:
            verify = "exact" if self.keep_shingles and feats is not None else "minhash"
        if verify not in VERIFY:
            raise ConfigError(f"verify must be one of {VERIFY}, got {verify!r}")
        if verify == "exact" and not self.keep_shingles:
            raise ConfigError("verify='exact' needs the documents' shingles; this index was made with "
                              "keep_shingles=False")
        nq = values.shape[0]
        out: list[list] = [[] for _ in range(nq)]
        qi, ri = self.candidates(values, qsizes, t)
        if qi.shape[0] == 0:
            return out
        if verify == "exact":
            by_row = np.argsort(ri, kind="stable")          # each document's shingles read once, in order
            qi, ri = qi[by_row], ri[by_row]
            q = qsizes[qi]
            need = np.ceil(t * q - 1e-9).astype(np.int64)   # |Q ∩ X| ≥ t q; the kernel stops once out of reach
            score = np.maximum(cross_intersections(feats.hashes, feats.offsets, qi, self._sh, self._sh_off, ri, need),
                               0) / q
        else:

            uniq, at = np.unique(ri, return_inverse=True)
            both = np.concatenate([values.astype(self._dtype, copy=False), self._sig[uniq]])
            j = jaccard_rows(both, qi, at.astype(np.int64) + nq, self.scheme)
            score = containment_from_jaccard(j, qsizes[qi], self._sizes[ri])
        if verify != "none":
            ok = score >= t
            qi, ri, score = qi[ok], ri[ok], score[ok]
        order = np.lexsort((ri, -score, qi))
        keys = self._keys
        for q, r, s in zip(qi[order].tolist(), ri[order].tolist(), score[order].tolist()):
            out[q].append((keys[r], s) if with_scores else keys[r])
        return out


def _grown(a: np.ndarray, cap: int, used: int) -> np.ndarray:
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[:used] = a[:used]
    return out
