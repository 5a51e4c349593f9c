"""MinHash LSH banding (Indyk & Motwani 1998; Broder 1997; Leskovec, Rajaraman, Ullman ch. 3).

The k signature values are cut into b bands of r rows (b r ≤ k). Two documents become a
candidate pair when they agree on every value of at least one band; for Jaccard similarity s,

    P(candidate | s) = 1 − (1 − s^r)^b        (the S-curve).

Parameter choice:

* :func:`recall_params` (our default): the cheapest (b, r) with P(candidate | t) ≥ ``recall``
  at the threshold t itself — "cheapest" = the smallest expected false-positive mass
  ∫₀ᵗ P(candidate | s) ds, ties broken by fewer bands. Verification then removes the false
  positives this admits, so recall is what banding must protect.
* :func:`datasketch_params`: datasketch's choice, minimising w_fp ∫₀ᵗ P ds + w_fn ∫ₜ¹ (1 − P) ds
  over all b, r with b r ≤ k (reproduces its (b, r) exactly).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._arrays import in_threads, sorted_unique
from ..errors import ConfigError
from ..kernels.lsh import band_key_rows, bucket_pairs, group_order, merge_unique, row_keys, rows_equal

# A band bucket of m documents gives m(m−1)/2 pairs; past MAX_BUCKET only a star from its smallest
# row is emitted (m − 1 pairs): a bucket that large is a mass of (near-)identical documents, which
# the star still links into one component. Both engines use this one limit.
MAX_BUCKET = 64

# 64-point Gauss–Legendre nodes: the integrands are smooth polynomials in s of degree ≤ k
_GL_X, _GL_W = np.polynomial.legendre.leggauss(64)


def s_curve(s, b: int, r: int):
    """P(candidate | similarity s) for b bands of r rows."""
    s = np.asarray(s, dtype=np.float64)
    return 1.0 - (1.0 - s ** r) ** b


def _integral(f, lo: float, hi: float, pieces: int = 8) -> float:
    edges = np.linspace(lo, hi, pieces + 1)
    total = 0.0
    for a, c in zip(edges[:-1], edges[1:]):
        x = 0.5 * (c - a) * _GL_X + 0.5 * (c + a)
        total += 0.5 * (c - a) * float(np.dot(_GL_W, f(x)))
    return total


def false_positive_mass(t: float, b: int, r: int) -> float:
    return _integral(lambda s: s_curve(s, b, r), 0.0, t)


def false_negative_mass(t: float, b: int, r: int) -> float:
    return _integral(lambda s: 1.0 - s_curve(s, b, r), t, 1.0)


def _check(threshold: float, num_perm: int) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
    if isinstance(num_perm, bool) or not isinstance(num_perm, (int, np.integer)) or num_perm < 2:
        raise ConfigError(f"num_perm must be an integer >= 2, got {num_perm!r}")


def _masses(t: float, b: int, rs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False-positive and false-negative masses for b bands and every r in ``rs`` at once
    (the quadrature of :func:`_integral`, one matrix product per piece instead of one dot per r)."""
    def integral(f, lo, hi, pieces=8):
        edges = np.linspace(lo, hi, pieces + 1)
        total = np.zeros(rs.shape[0])
        for a, c in zip(edges[:-1], edges[1:]):
            x = 0.5 * (c - a) * _GL_X + 0.5 * (c + a)
            total += 0.5 * (c - a) * (_GL_W @ f(x[:, None]))
        return total
    curve = lambda s: 1.0 - (1.0 - s ** rs[None, :]) ** b  # noqa: E731
    return integral(curve, 0.0, t), integral(lambda s: 1.0 - curve(s), t, 1.0)


@lru_cache(maxsize=256)
def datasketch_params(threshold: float, num_perm: int, false_positive_weight: float = 0.5,
                      false_negative_weight: float = 0.5) -> tuple[int, int]:
    """datasketch's ``MinHashLSH`` (b, r): argmin of the weighted error masses, scanning b then r
    ascending and keeping the first minimum (all r of one b evaluated together: about 1 s for
    k = 65,536)."""
    _check(threshold, num_perm)
    best, best_err = (1, 1), float("inf")
    for b in range(1, num_perm + 1):
        rs = np.arange(1, num_perm // b + 1, dtype=np.float64)
        fp, fn = _masses(threshold, b, rs)
        err = false_positive_weight * fp + false_negative_weight * fn
        j = int(np.argmin(err))            # the first minimum, as the scalar scan keeps it
        if err[j] < best_err:
            best, best_err = (b, j + 1), float(err[j])
    return best


@lru_cache(maxsize=256)
def recall_params(threshold: float, num_perm: int, recall: float = 0.99) -> tuple[int, int]:
    """Cheapest (b, r), b r ≤ k, whose S-curve reaches ``recall`` at s = threshold."""
    _check(threshold, num_perm)
    if not 0.0 < recall < 1.0:
        raise ConfigError(f"recall must be in (0, 1), got {recall!r}")
    best, best_cost = None, None
    for r in range(1, num_perm + 1):
        b_max = num_perm // r
        # the smallest b reaching the target for this r (P grows with b)
        p_band = threshold ** r
        if p_band <= 0.0:
            break
        with np.errstate(over="ignore", divide="ignore"):
            need = np.log1p(-recall) / np.log1p(-p_band) if p_band < 1.0 else 1.0
        if not need <= b_max:          # also inf: t^r so small that no b reaches the target
            continue
        b = max(1, int(np.ceil(need - 1e-12)))
        if b > b_max:
            continue
        cost = (false_positive_mass(threshold, b, r), b)
        if best_cost is None or cost < best_cost:
            best, best_cost = (b, r), cost
    if best is None:
        raise ConfigError(f"no (b, r) with b*r <= {num_perm} reaches recall {recall} at threshold {threshold}; "
                          "use more permutations or a lower recall target")
    return best


@dataclass(frozen=True)
class LSHParams:
    b: int
    r: int
    threshold: float
    mode: str

    def curve(self, s):
        return s_curve(s, self.b, self.r)

    def describe(self, points=(0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)) -> str:
        probs = ", ".join(f"P({p:.2f})={self.curve(p):.4f}" for p in points)
        return f"b={self.b} bands × r={self.r} rows ({self.mode}, t={self.threshold}): {probs}"


def choose_params(threshold: float, num_perm: int, mode: str = "recall", recall: float = 0.99,
                  b: int | None = None, r: int | None = None) -> LSHParams:
    """(b, r) by ``mode`` ``"recall"`` (default), ``"datasketch"``, or explicit ``b`` and ``r``."""
    if b is not None or r is not None:
        if b is None or r is None or b < 1 or r < 1 or b * r > num_perm:
            raise ConfigError(f"explicit bands need b >= 1, r >= 1 and b*r <= num_perm ({num_perm}); got b={b}, r={r}")
        return LSHParams(int(b), int(r), threshold, "explicit")
    if mode == "recall":
        return LSHParams(*recall_params(threshold, num_perm, recall), threshold, f"recall≥{recall}")
    if mode == "datasketch":
        return LSHParams(*datasketch_params(threshold, num_perm), threshold, "datasketch")
    raise ConfigError(f"mode must be 'recall' or 'datasketch', got {mode!r}")


def identical_rows(values: np.ndarray) -> np.ndarray:
    """For each row, the smallest index of a row with exactly the same values (itself if none)."""
    keys = np.concatenate(in_threads(lambda a, b: row_keys(values[a:b]), values.shape[0]))
    order = group_order(keys)                       # (stable: each group's first row comes first)
    sk = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = sk[1:] != sk[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(keys)), 0))
    rep = np.empty(len(keys), dtype=np.int64)
    rep[order] = order[group_start]
    # a 64-bit key collision between different rows is astronomically rare; confirm anyway
    same = rows_equal(values, rep)
    rep[~same] = np.flatnonzero(~same)
    return rep


def candidate_pairs(values: np.ndarray, b: int, r: int, max_bucket: int = MAX_BUCKET,
                    rows: np.ndarray | None = None, done=None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct candidate pairs (lo < hi) among ``rows`` (default all) of a signature matrix.
    ``done(1)`` is called as each band is bucketed (from the thread that did it)."""
    if b * r > values.shape[1]:
        raise ConfigError(f"b*r = {b * r} exceeds the signature length {values.shape[1]}")
    ids = np.arange(values.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if ids.shape[0] < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # band by band, each band's pairs folded into the sorted distinct codes lo·n + hi at once: memory
    # is one band's keys and the distinct pairs, not a copy of the matrix, every band's keys and
    # every band's pairs (1.26 → 0.78 GB peak at 1 M documents, measured); the bands shared among
    # threads (the kernels and NumPy's sorts release the GIL), their codes merged at the end
    n = np.int64(values.shape[0])

    def bands(first, last):
        code = np.empty(0, dtype=np.int64)
        for band in range(first, last):
            col = band_key_rows(values, ids, band, r)
            lo, hi = bucket_pairs(col, group_order(col), ids, max_bucket)      # (equal keys together: enough)
            del col
            code = merge_unique(code, sorted_unique(lo * n + hi))
            if done is not None:
                done(1)
        return code

    parts = in_threads(bands, b, min_chunk=1 if ids.shape[0] >= 1 << 18 else b)
    code = parts[0]
    for more in parts[1:]:
        code = merge_unique(code, more)
    if code.shape[0] == 0:
        return code, code.copy()
    return code // n, code % n
