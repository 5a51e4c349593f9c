"""All pairs of SimHash fingerprints within Hamming distance k: batch and online.

Method (Manku, Jain & Das Sarma, "Detecting near-duplicates for web crawling", WWW 2007)
---------------------------------------------------------------------------------------
Cut the f fingerprint bits into B contiguous blocks, B > k.  Two fingerprints at distance
d <= k differ in at most d blocks, so (pigeonhole) they agree on at least B - k whole blocks.
A *table* takes one set of B - k blocks as its key; with all C(B, k) such sets as tables,
every pair within distance k has equal keys in at least one table.  Only pairs with equal keys
are compared, and each comparison is an exact popcount of the XOR, so the search is exact:
no pair within k is missed and no pair beyond k is reported.

Manku's *two-level* layout shortens the list of tables for the same key length: after choosing
the B1 - k agreeing first-level blocks, the bits of the remaining k blocks still hold at most
k differences; cutting them into B2 sub-blocks and choosing B2 - k of those gives
C(B1, k) * C(B2, k) tables whose keys are the union of both choices (for f = 64, k = 3:
4 x 4 = 16 tables with 28-bit keys, between 10 tables of 25-26 bits and 20 tables of 32 bits).

A pair may share the key of several tables.  It is reported by the first one only: from the
XOR ``x`` of the pair, table t matches iff ``x & key_mask[t] == 0``, so "t is the first matching
table" is checked in a few instructions and no set of seen pairs is kept.

Batch (:func:`all_pairs`): per table, each fingerprint becomes one 64-bit word
``key | fold(other bits) | index``; ``np.sort`` (SIMD quicksort on CPUs that have it) brings equal
keys together; a numba kernel walks the runs of equal keys, rejects most candidates from the
folded bits of the word alone (the XOR fold of the non-key bits is a lower bound on the
distance), and checks survivors exactly.

Online (:class:`SimHashIndex`): per table, a chained hash table keyed by the fingerprint's key
bits (``fp & key_mask``); chains are doubly linked int32 arrays, so add and remove are
O(tables) and a query is O(tables + candidates), all inside numba, with the chains of all
tables walked in lockstep so their cache misses overlap.  Only distinct values are linked in
the tables; further keys with the same value hang off the value's node, so copies of one
fingerprint never lengthen a chain.  Hashed buckets are chosen over sorted arrays plus an
append buffer because they have no merge step: a sorted layout must either re-sort
(amortised O(tables * n / buffer) per add) or scan the whole unsorted buffer on every query,
and at a million fingerprints both cost more than the few cache misses of a bucket walk.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import NamedTuple

import numpy as np

from ..errors import ConfigError
from ..kernels import hamming_tables as _k

__all__ = ["TablePlan", "CollapsedPairs", "plan_tables", "layout", "all_pairs", "SimHashIndex"]

# Cost model constants, nanoseconds on one core of a current x86 server (see plan_tables).
BATCH_TABLE_NS = 30_000.0   # fixed cost of one table (allocation, Python, kernel calls)
BATCH_ELEM_NS = 16.0        # pack one fingerprint into a word + its share of np.sort
BATCH_PAIR_NS = 1.0         # one candidate pair inside a run of equal keys
ONLINE_TABLE_NS = 60.0      # one table in one add + one query (hash, bucket head, links)
ONLINE_CAND_NS = 30.0       # one candidate walked in a bucket chain during a query
MAX_TABLES = 4096
DEFAULT_MAX_PAIRS = 100_000_000


# ---------------------------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------------------------

def _split(bits: list[int], parts: int) -> list[list[int]]:
    """Cut the bit list into ``parts`` consecutive pieces whose sizes differ by at most one."""
    q, r = divmod(len(bits), parts)
    out, pos = [], 0
    for p in range(parts):
        size = q + (1 if p < r else 0)
        out.append(bits[pos:pos + size])
        pos += size
    return out


def _fields(key_bits: list[int]) -> tuple[tuple[int, int], ...]:
    """Runs of consecutive descending bit positions as ``(shift, width)`` fields, in order."""
    fields: list[list[int]] = []
    for b in key_bits:
        if fields and fields[-1][0] - 1 == b:      # extends the current run downwards
            fields[-1][0] = b
            fields[-1][1] += 1
        else:
            fields.append([b, 1])
    return tuple((s, w) for s, w in fields)


def _combos(n: int, r: int):
    return combinations(range(n), r)


def _key_bits_hist(sizes: list[int], choose: int) -> dict[int, int]:
    """Histogram of key lengths over all ways to pick ``choose`` of the blocks ``sizes``.

    Blocks come in at most two sizes (q and q + 1), so the count of choices taking j big
    blocks is C(big, j) * C(small, choose - j).
    """
    q = min(sizes)
    big = sum(1 for s in sizes if s > q)
    small = len(sizes) - big
    hist: dict[int, int] = {}
    for j in range(0, min(big, choose) + 1):
        c = math.comb(big, j) * math.comb(small, choose - j)
        if c:
            kb = choose * q + j
            hist[kb] = hist.get(kb, 0) + c
    return hist


def _sizes(total: int, parts: int) -> list[int]:
    q, r = divmod(total, parts)
    return [q + 1] * r + [q] * (parts - r)


def _idx_bits(n: int) -> int:
    return max(1, (max(n, 2) - 1).bit_length())


def _table_cost(kb: int, n: int, workload: str) -> float:
    if workload == "batch":
        kbe = min(kb, 64 - _idx_bits(n))
        pairs = 0.5 * n * (n - 1) * 2.0 ** (-kbe)
        return BATCH_TABLE_NS + BATCH_ELEM_NS * n + BATCH_PAIR_NS * pairs
    cands = n * 2.0 ** (-kb)
    return ONLINE_TABLE_NS + ONLINE_CAND_NS * cands


def _layouts(f: int, k: int, max_tables: int):
    """Every one- and two-level layout with at most ``max_tables`` tables.

    Yields ``(levels, histogram of key lengths)`` where ``levels`` is ``(B,)`` or ``(B1, B2)``.
    """
    for b1 in range(k + 1, f + 1):
        t1 = math.comb(b1, k)
        if t1 > max_tables:
            break
        sizes1 = _sizes(f, b1)
        h1 = _key_bits_hist(sizes1, b1 - k)
        yield (b1,), h1
        if k == 0:
            continue
        # two-level: the k unchosen first-level blocks (rest bits) split again into b2 pieces
        for b2 in range(k + 1, f + 1):
            t2 = math.comb(b2, k)
            if t1 * t2 > max_tables:
                break
            hist: dict[int, int] = {}
            ok = True
            for kb1, c1 in h1.items():
                rest = f - kb1
                if rest < b2:
                    ok = False
                    break
                for kb2, c2 in _key_bits_hist(_sizes(rest, b2), b2 - k).items():
                    hist[kb1 + kb2] = hist.get(kb1 + kb2, 0) + c1 * c2
            if not ok:
                break
            yield (b1, b2), hist


@dataclass(frozen=True)
class TablePlan:
    """A block layout: which fingerprint bits form the key of each table.

    ``tables[t]`` is a tuple of ``(shift, width)`` bit fields whose concatenation (first field
    most significant) is table t's key; ``levels`` is ``(B,)`` for C(B, k) tables over B
    blocks or ``(B1, B2)`` for Manku's two-level layout.  ``cost_ns`` is the model estimate
    for ``n`` fingerprints (see :func:`plan_tables`).
    """

    f: int
    k: int
    n: int
    workload: str
    levels: tuple[int, ...]
    tables: tuple[tuple[tuple[int, int], ...], ...]
    cost_ns: float
    key_masks: np.ndarray = field(repr=False, compare=False)
    key_bits: np.ndarray = field(repr=False, compare=False)
    shifts: np.ndarray = field(repr=False, compare=False)
    widths: np.ndarray = field(repr=False, compare=False)
    nfields: np.ndarray = field(repr=False, compare=False)

    @property
    def n_tables(self) -> int:
        return len(self.tables)

    def describe(self) -> str:
        lv = "x".join(map(str, self.levels))
        kb = sorted(set(int(b) for b in self.key_bits))
        return (f"{'two-level' if len(self.levels) == 2 else 'one-level'} B={lv}: "
                f"{self.n_tables} tables, key bits {kb[0]}" + (f"-{kb[-1]}" if len(kb) > 1 else "")
                + (f", model {self.cost_ns / 1e6:.1f} ms for n={self.n}" if self.workload == "batch"
                   else f", model {self.cost_ns:.0f} ns per add+query at n={self.n}"))


def _build_plan(f: int, k: int, n: int, workload: str, levels: tuple[int, ...],
                cost: float) -> TablePlan:
    bits = list(range(f - 1, -1, -1))               # high to low
    blocks1 = _split(bits, levels[0])
    keys: list[list[int]] = []
    for keep1 in _combos(levels[0], levels[0] - k):
        key1 = [b for i in keep1 for b in blocks1[i]]
        if len(levels) == 1:
            keys.append(key1)
            continue
        rest = [b for i in range(levels[0]) if i not in keep1 for b in blocks1[i]]
        blocks2 = _split(rest, levels[1])
        for keep2 in _combos(levels[1], levels[1] - k):
            keys.append(key1 + [b for i in keep2 for b in blocks2[i]])
    tables = tuple(_fields(key) for key in keys)
    t = len(tables)
    maxf = max(len(fl) for fl in tables)
    shifts = np.zeros((t, maxf), np.int64)
    widths = np.ones((t, maxf), np.int64)
    nfields = np.zeros(t, np.int64)
    masks = np.zeros(t, np.uint64)
    kbits = np.zeros(t, np.int64)
    for i, (key, fl) in enumerate(zip(keys, tables)):
        nfields[i] = len(fl)
        for m, (s, w) in enumerate(fl):
            shifts[i, m] = s
            widths[i, m] = w
        masks[i] = np.uint64(sum(1 << b for b in key))
        kbits[i] = len(key)
    for arr in (masks, kbits, shifts, widths, nfields):
        arr.flags.writeable = False       # plans are cached and shared
    return TablePlan(f, k, n, workload, tuple(levels), tables, cost, masks, kbits, shifts,
                     widths, nfields)


@lru_cache(maxsize=256)
def plan_tables(f: int = 64, k: int = 3, n: int = 1_000_000, workload: str = "batch",
                max_tables: int = MAX_TABLES) -> TablePlan:
    """Choose the block layout for ``n`` fingerprints of ``f`` bits and distance ``k``.

    Candidates: every one-level layout (B blocks, k < B <= f, C(B, k) tables whose keys are
    B - k blocks) and every two-level layout (B1 x B2, C(B1, k) * C(B2, k) tables) with at
    most ``max_tables`` tables.  Blocks are contiguous and differ in size by at most one bit.
    Any of them is exact; they differ only in speed, and the cheapest under this model wins
    (ties: fewer tables).

    Cost model (``workload="batch"``, :func:`all_pairs`), for a table whose key has b bits::

        cost(table) = T0 + c_elem * n + c_pair * C(n, 2) * 2**-b

    — every table packs and sorts all n fingerprints (c_elem ~ 16 ns), and random
    fingerprints share a b-bit key with probability 2**-b, so a table scans about
    C(n, 2) / 2**b candidate pairs (c_pair ~ 1 ns, most rejected from the packed word).
    The key is cut to 64 - ceil(log2 n) bits when key and index do not fit in one word,
    and b is capped accordingly.  Summed over tables, more blocks mean more (and longer-keyed)
    tables: per-table work grows like C(B, k) * n while candidates shrink like
    n^2 / 2^(f (B-k)/B).  Small n therefore picks B = k + 1 (k + 1 tables of f/(k+1)-bit
    keys); the optimum moves to more blocks as n grows — for k = 3 and f = 64: B = 4
    (4 tables, 16-bit keys) up to about 3 M fingerprints (measured crossover 3-4 M), then
    B = 5 (10 tables, 25-26 bits) up to about 2e9, then 4 x 4 (16 tables, 28 bits) and from
    about 3e9 B = 6 (20 tables, 31-33 bits).

    ``workload="online"`` (:class:`SimHashIndex`) drops the sort and prices a table per
    add + query (``c_table`` ~ 60 ns, mostly cache misses) plus each bucket candidate
    (``c_cand`` ~ 30 ns, about n / 2^b per table), so it prefers longer keys sooner.
    """
    if workload not in ("batch", "online"):
        raise ConfigError("workload must be 'batch' or 'online'")
    if not 1 <= f <= 64:
        raise ConfigError("f must be in 1..64")
    if not 0 <= k < f:
        raise ConfigError(f"k must be in 0..{f - 1} (need more blocks than differing bits)")
    n = max(int(n), 2)
    best = None
    for levels, hist in _layouts(f, k, max_tables):
        t = sum(hist.values())
        cost = sum(c * _table_cost(kb, n, workload) for kb, c in hist.items())
        if best is None or (cost, t) < (best[0], best[1]):
            best = (cost, t, levels)
    if best is None:  # only when max_tables < C(k + 1, k) = k + 1
        raise ConfigError(f"max_tables={max_tables} is below the minimum of {k + 1} tables")
    return _build_plan(f, k, n, workload, best[2], best[0])


def layout(f: int, k: int, levels: tuple[int, ...], n: int = 1_000_000,
           workload: str = "batch") -> TablePlan:
    """A plan with a fixed layout, e.g. ``layout(64, 3, (5,))`` (simhash-py's 5 blocks)."""
    if not 0 <= k < f <= 64:
        raise ConfigError("need 0 <= k < f <= 64")
    if not 1 <= len(levels) <= 2 or any(b <= k for b in levels) or levels[0] > f:
        raise ConfigError("levels must be (B,) or (B1, B2) with every B > k")
    for lv, hist in _layouts(f, k, 10**9):
        if lv == tuple(levels):
            cost = sum(c * _table_cost(kb, max(n, 2), workload) for kb, c in hist.items())
            return _build_plan(f, k, max(n, 2), workload, tuple(levels), cost)
        if lv[0] > levels[0]:
            break
    raise ConfigError(f"layout {levels} does not fit f={f}")


# ---------------------------------------------------------------------------------------------
# Batch
# ---------------------------------------------------------------------------------------------

class CollapsedPairs(NamedTuple):
    """Result of ``all_pairs(..., collapse_identical=True)``.

    ``rep[x]`` is the smallest index whose fingerprint equals ``fps[x]`` (``rep[x] == x`` for
    the first copy).  ``i < j`` / ``dist`` are the pairs among *distinct* values within
    distance k (1 <= dist <= k), each value named by its representative index.  Every index
    pair of the full answer is either two copies of one value (distance 0) or one copy each of
    a listed pair, so the full answer is ``expand()``.
    """

    i: np.ndarray
    j: np.ndarray
    dist: np.ndarray
    rep: np.ndarray

    def groups(self) -> list[np.ndarray]:
        """Index arrays (ascending) of the values that occur more than once."""
        order = np.argsort(self.rep, kind="stable")
        r = self.rep[order]
        cuts = np.flatnonzero(r[1:] != r[:-1]) + 1
        return [g for g in np.split(order, cuts) if g.size > 1]

    def n_pairs(self) -> int:
        """Number of index pairs in the full (expanded) answer."""
        _, inv, counts = np.unique(self.rep, return_inverse=True, return_counts=True)
        gi = inv[self.i] if self.i.size else self.i
        gj = inv[self.j] if self.j.size else self.j
        return int(_k.count_expanded(gi.astype(np.int64), gj.astype(np.int64),
                                     counts.astype(np.int64)))

    def expand(self, max_pairs: int | None = DEFAULT_MAX_PAIRS):
        """The full ``(i, j, dist)`` answer, as :func:`all_pairs` returns it uncollapsed."""
        _, inv, counts = np.unique(self.rep, return_inverse=True, return_counts=True)
        members = np.argsort(inv, kind="stable").astype(np.int64)
        starts = np.zeros(counts.size + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        gi = inv[self.i].astype(np.int64)
        gj = inv[self.j].astype(np.int64)
        return _expand(gi, gj, self.dist, starts, members, counts.astype(np.int64), max_pairs)


def _check_size(total: int, max_pairs: int | None) -> None:
    if max_pairs is not None and total > max_pairs:
        gb = total * 17 / 1e9
        raise ConfigError(
            f"the answer has {total:,} index pairs (~{gb:,.1f} GB), more than max_pairs="
            f"{max_pairs:,}; identical fingerprints make every copy pair an answer. Use "
            "all_pairs(..., collapse_identical=True) to get the groups of identical values "
            "plus the pairs among distinct values, or raise max_pairs.")


def _expand(gi, gj, gd, starts, members, counts, max_pairs):
    total = int(_k.count_expanded(gi, gj, counts))
    _check_size(total, max_pairs)
    return _k.expand_groups(gi, gj, gd, starts, members, total)


def _as_fps(fps) -> np.ndarray:
    """A contiguous 1-D uint64 array; non-negative integers only (no silent float casts)."""
    if not isinstance(fps, np.ndarray):
        try:
            return np.fromiter(map(operator.index, fps), dtype=np.uint64)
        except OverflowError:
            raise ConfigError("fingerprints must be integers in 0..2**64-1") from None
    if fps.ndim != 1:
        raise ConfigError("fingerprints must be a 1-D array")
    if fps.dtype != np.uint64:
        if fps.dtype.kind not in "iu" and fps.size:
            raise TypeError(f"fingerprints must be unsigned 64-bit integers, got {fps.dtype}")
        if fps.dtype.kind == "i" and fps.size and fps.min() < 0:
            raise ConfigError("fingerprints must be non-negative (or already uint64)")
        fps = fps.astype(np.uint64)
    return np.ascontiguousarray(fps)


def _distinct_pairs(fps: np.ndarray, k: int, plan: TablePlan):
    """All pairs within ``k`` among fingerprints that are pairwise distinct."""
    n = fps.shape[0]
    cap = max(1024, n // 8)
    oi = np.empty(cap, np.int64)
    oj = np.empty(cap, np.int64)
    od = np.empty(cap, np.uint8)
    n_out = 0
    if n < 2 or k == 0:
        return oi[:0], oj[:0], od[:0]
    idx_bits = _idx_bits(n)
    buf = np.empty(n, np.uint64)
    for t in range(plan.n_tables):
        kb = int(plan.key_bits[t])
        kbe = min(kb, 64 - idx_bits)
        extra = 64 - idx_bits - kbe
        _k.pack_table(fps, plan.shifts[t], plan.widths[t], int(plan.nfields[t]), kb, kbe, extra,
                      plan.key_masks[t], idx_bits, buf)
        buf.sort()
        pos = np.zeros(3, np.int64)
        while True:
            n_out = _k.scan_table(buf, fps, k, kbe, idx_bits, t, plan.key_masks, oi, oj, od,
                                  n_out, pos)
            if pos[0] >= n:
                break
            oi, oj, od = (np.concatenate((v, np.empty_like(v))) for v in (oi, oj, od))
    return oi[:n_out].copy(), oj[:n_out].copy(), od[:n_out].copy()


def all_pairs(fps, k: int = 3, plan: TablePlan | None = None, *,
              collapse_identical: bool = False, max_pairs: int | None = DEFAULT_MAX_PAIRS):
    """Every pair of fingerprints within Hamming distance ``k``, exactly.

    Returns ``(i, j, dist)``: int64 index arrays with ``i < j`` and uint8 distances, each
    pair once, in no particular (but deterministic) order.  ``plan`` defaults to
    ``plan_tables(64, k, n)``; any plan with ``plan.k >= k`` is exact.

    Identical fingerprints: copies of one value are all within distance 0 of each other, so
    m copies give C(m, 2) answer pairs.  They are found once: the values are deduplicated
    first (only when a sort shows repeats), the tables run on the distinct values, and the
    answer is expanded group by group, so time is O(n log n + pairs among distinct values +
    size of the answer) — no per-table rework of the copies.

    The answer itself can be enormous: 100 000 copies of one fingerprint make
    C(100 000, 2) = 4 999 950 000 pairs (~85 GB as int64/int64/uint8).  By default the size is
    counted before anything is allocated and a ``ValueError`` is raised above ``max_pairs``
    (1e8, None = no limit), which for that input happens after one sort, in milliseconds.
    ``collapse_identical=True`` returns a :class:`CollapsedPairs` instead: each index's
    representative (first copy) plus the pairs among distinct values — for 100 000 copies a
    single group and no pairs, in about the time of a sort.
    """
    a = _as_fps(fps)
    n = a.shape[0]
    if k < 0:
        raise ConfigError("k must be >= 0")
    if plan is not None:
        if plan.k < k:
            raise ConfigError(f"plan was built for k={plan.k} < k={k}: pairs could be missed")
    s = np.sort(a)
    has_dup = n > 1 and bool(np.any(s[1:] == s[:-1]))
    if not has_dup:
        p = plan or plan_tables(64, k, n)
        i, j, d = _distinct_pairs(a, k, p)
        if collapse_identical:
            return CollapsedPairs(i, j, d, np.arange(n, dtype=np.int64))
        return i, j, d
    vals, inv = np.unique(a, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    counts = np.bincount(inv, minlength=vals.size).astype(np.int64)
    members = np.argsort(inv, kind="stable").astype(np.int64)
    starts = np.zeros(vals.size + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    if not collapse_identical and max_pairs is not None:
        # copies alone already exceed the limit: fail before any table work
        _check_size(int((counts * (counts - 1) // 2).sum()), max_pairs)
    p = plan or plan_tables(64, k, vals.size)
    gi, gj, gd = _distinct_pairs(vals, k, p)
    if collapse_identical:
        rep_of = members[starts[:-1]]
        ri, rj = rep_of[gi], rep_of[gj]
        lo, hi = np.minimum(ri, rj), np.maximum(ri, rj)
        return CollapsedPairs(lo, hi, gd, rep_of[inv])
    return _expand(gi, gj, gd, starts, members, counts, max_pairs)


# ---------------------------------------------------------------------------------------------
# Online
# ---------------------------------------------------------------------------------------------

_U64_MAX = (1 << 64) - 1


def _u64(fp) -> int:
    """``fp`` as a Python int in 0..2**64-1 (ValueError otherwise)."""
    v = operator.index(fp)
    if not 0 <= v <= _U64_MAX:
        raise ConfigError(f"fingerprint {fp!r} is not an unsigned 64-bit integer")
    return v


def _as_i64(v: int) -> int:
    """The int64 with the same bits as the uint64 ``v``: a plain int argument is the cheapest
    for numba to dispatch on (kernels reinterpret it with ``np.uint64``)."""
    return v - (1 << 64) if v >> 63 else v


class SimHashIndex:
    """Online index of keyed fingerprints answering "all stored within distance k".

    ``SimHashIndex(k=3, f=64, plan=None, expected_n=100_000)``: the table layout is
    ``plan`` or ``plan_tables(f, k, expected_n, workload="online")``; a larger actual size
    stays exact, only slower.  Each table is a chained hash table (2 x capacity buckets) over
    the key bits of its layout, holding distinct values only; keys sharing a value are listed
    behind it (see the module docstring for the design).  Arrays double when full; memory is
    about 8 bytes x tables x capacity for the links, 8 bytes x tables x capacity for the
    buckets and 20 bytes x capacity for values and copy lists, plus a Python dict key -> slot.

    ``add(key, fp)`` stores or replaces; ``query(fp)`` returns ``[(key, dist), ...]`` sorted by
    distance, then insertion slot (so copies of a value come back in a stable order);
    ``remove(key)`` raises ``KeyError`` if absent.  ``add_many`` / ``query_many`` do the same
    for arrays in one kernel call each.  Identical fingerprints: m copies cost one table entry;
    a query matching them returns all m keys in O(m).
    """

    def __init__(self, k: int = 3, f: int = 64, plan: TablePlan | None = None,
                 expected_n: int = 100_000, capacity: int = 1024):
        if plan is None:
            plan = plan_tables(f, k, max(int(expected_n), 2), workload="online")
        elif plan.k < k:
            raise ConfigError(f"plan was built for k={plan.k} < k={k}: matches could be missed")
        self.k = int(k)
        self.f = int(f)
        self.plan = plan
        self._masks = np.ascontiguousarray(plan.key_masks)
        self._slot_of: dict[Hashable, int] = {}
        self._keys: list = []
        self._free: list[int] = []
        self._used = 0
        self._qbuf = np.empty(64, np.int64)
        self._alloc(1 << max(4, (max(16, int(capacity)) - 1).bit_length()))

    # storage ------------------------------------------------------------------------------
    def _alloc(self, cap: int) -> None:
        """(Re)allocate for ``cap`` slots: copy values and copy-lists, re-link value nodes."""
        t = self._masks.shape[0]
        used = self._used
        fps = np.zeros(cap, np.uint64)
        same = np.full((3, cap), -1, np.int32)
        same[2] = 0
        if used:
            fps[:used] = self._fps[:used]
            same[:, :used] = self._same[:, :used]
        self._fps, self._same = fps, same
        self._keys.extend([None] * (cap - len(self._keys)))
        self._cap = cap
        self._hbits = max(5, (cap - 1).bit_length() + 1)   # 2 * capacity buckets
        self._links = np.full((2, t, cap), -1, np.int32)
        self._heads = np.full((t, 1 << self._hbits), -1, np.int32)
        nodes = np.flatnonzero(same[2, :used]).astype(np.int64)
        if nodes.size:
            _k.online_link_nodes(nodes, self._fps, self._masks, self._heads, self._links,
                                 self._hbits)

    def _reserve(self, m: int) -> None:
        """Make room for ``m`` more fingerprints (one reallocation at most)."""
        need = self._used + max(0, m - len(self._free))
        if need > self._cap:
            cap = self._cap
            while cap < need:
                cap *= 2
            if cap > 2**31 - 1:
                raise MemoryError("SimHashIndex holds at most 2**31 - 1 fingerprints")
            self._alloc(cap)

    def _new_slot(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == self._cap:
            if self._cap * 2 > 2**31 - 1:
                raise MemoryError("SimHashIndex holds at most 2**31 - 1 fingerprints")
            self._alloc(self._cap * 2)
        s = self._used
        self._used += 1
        return s

    # public API ---------------------------------------------------------------------------
    def add(self, key: Hashable, fp) -> None:
        """Store ``fp`` under ``key`` (replacing the fingerprint stored under it, if any)."""
        v = _u64(fp)
        if key in self._slot_of:
            self.remove(key)
        s = self._new_slot()
        _k.online_add(s, _as_i64(v), self._masks, self._heads, self._links, self._same,
                      self._fps, self._hbits)
        self._keys[s] = key
        self._slot_of[key] = s

    def add_many(self, keys: Iterable[Hashable], fps) -> None:
        """``add`` for each ``(key, fp)``; new keys are linked in one kernel call."""
        keys = list(keys)
        a = _as_fps(fps)
        if len(keys) != a.shape[0]:
            raise ConfigError("keys and fingerprints differ in length")
        slots = np.empty(len(keys), np.int64)
        pending: dict[Hashable, int] = {}
        for pos, key in enumerate(keys):
            if key in pending:           # repeated key inside the batch: last one wins
                slots[pending[key]] = -1
            elif key in self._slot_of:
                self.remove(key)
            pending[key] = pos
        # all new slots exist before any is linked: a reallocation re-links every stored slot
        self._reserve(len(pending))
        for key, pos in pending.items():
            s = self._new_slot()
            slots[pos] = s
            self._keys[s] = key
            self._slot_of[key] = s
        keep = slots >= 0
        _k.online_add_many(slots[keep], a[keep], self._masks, self._heads, self._links,
                           self._same, self._fps, self._hbits)

    def query(self, fp, k: int | None = None) -> list[tuple[Hashable, int]]:
        """All stored ``(key, distance)`` with distance <= k (default: the index's k)."""
        kk = self.k if k is None else int(k)
        if not 0 <= kk <= self.plan.k:
            raise ConfigError(f"k must be in 0..{self.plan.k} for this index")
        q = _as_i64(_u64(fp))
        n = _k.online_query(q, kk, self._masks, self._heads, self._links, self._same,
                            self._fps, self._hbits, self._qbuf)
        if n > self._qbuf.shape[0]:
            self._qbuf = np.empty(2 * n, np.int64)
            n = _k.online_query(q, kk, self._masks, self._heads, self._links, self._same,
                                self._fps, self._hbits, self._qbuf)
        keys = self._keys
        return [(keys[c & 0xFFFFFFFF], c >> 32) for c in self._qbuf[:n].tolist()]

    def query_many(self, fps, k: int | None = None) -> list[list[tuple[Hashable, int]]]:
        """``query`` for each fingerprint, in one kernel call."""
        kk = self.k if k is None else int(k)
        if not 0 <= kk <= self.plan.k:
            raise ConfigError(f"k must be in 0..{self.plan.k} for this index")
        a = _as_fps(fps)
        offsets = np.empty(a.shape[0] + 1, np.int64)
        out = np.empty(max(16, 2 * a.shape[0]), np.int64)
        n = _k.online_query_many(a, kk, self._masks, self._heads, self._links, self._same,
                                 self._fps, self._hbits, offsets, out)
        if n > out.shape[0]:
            out = np.empty(n, np.int64)
            _k.online_query_many(a, kk, self._masks, self._heads, self._links, self._same,
                                 self._fps, self._hbits, offsets, out)
        keys = self._keys
        off = offsets.tolist()
        comp = out[:n].tolist()
        return [[(keys[c & 0xFFFFFFFF], c >> 32) for c in comp[off[q]:off[q + 1]]]
                for q in range(a.shape[0])]

    def remove(self, key: Hashable) -> None:
        """Forget ``key``; ``KeyError`` if it is not stored."""
        s = self._slot_of.pop(key)
        _k.online_remove(s, self._masks, self._heads, self._links, self._same, self._fps,
                         self._hbits)
        self._keys[s] = None
        self._free.append(s)

    def discard(self, key: Hashable) -> None:
        """``remove`` without the ``KeyError``."""
        if key in self._slot_of:
            self.remove(key)

    def fingerprint(self, key: Hashable) -> int:
        """The fingerprint stored under ``key``."""
        return int(self._fps[self._slot_of[key]])

    @property
    def nbytes(self) -> int:
        """Bytes held by the index arrays (not counting the Python key dict and key list)."""
        return int(self._heads.nbytes + self._links.nbytes + self._same.nbytes + self._fps.nbytes)

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key) -> bool:
        return key in self._slot_of

    def __repr__(self) -> str:
        return f"SimHashIndex(k={self.k}, n={len(self)}, {self.plan.describe()})"
