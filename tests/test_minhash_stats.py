"""Statistical checks of every MinHash scheme against sets with known Jaccard similarity.

For R independent seeds the estimates Ĵ_r have mean J and variance σ² = J(1−J)/k (independent
hash functions). For one-permutation schemes (oph, bottomk) the k values are drawn without
replacement from |A ∪ B| = n elements, which multiplies the variance by the finite-population
correction (n − k)/(n − 1).

Bounds: 20 cases × 2 checks = 40 tests at a family-wise false-alarm rate of 1% (Bonferroni:
α = 2.5e-4 per check, two-sided z = 3.66): the mean lies within z standard errors σ/√R of J,
and (R − 1)s²/σ² lies between the χ²(R − 1) quantiles at ±z. (A plain 3-SE bound would fail by
chance in ~10% of such suites; seeds are fixed, so the outcome is deterministic.)
"""
import math

import numpy as np
import pytest
from conftest import chi2_quantile

from neardup import SCHEMES, MinHash

K = 128
N_UNION = 2000
R = 200
Z = 3.66


def make_sets(j: float):
    inter = int(round(j * N_UNION))
    rest = N_UNION - inter
    a = list(range(inter)) + list(range(inter, inter + rest // 2))
    b = list(range(inter)) + list(range(inter + rest // 2, N_UNION))
    return a, b


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("j", [0.1, 0.5, 0.8, 0.95])
def test_mean_and_variance(scheme, j):
    a, b = make_sets(j)
    true_j = len(set(a) & set(b)) / len(set(a) | set(b))
    if scheme.startswith("datasketch"):
        a, b = [str(x) for x in a], [str(x) for x in b]
        rounds = R // 2  # SHA-1 per item in Python: fewer rounds, bounds scale with R
    else:
        a, b = np.array(a), np.array(b)
        rounds = R
    est = np.empty(rounds)
    for r in range(rounds):
        ma = MinHash(K, scheme, seed=r + 1).update(a)
        mb = MinHash(K, scheme, seed=r + 1).update(b)
        est[r] = ma.jaccard(mb)
    var = true_j * (1 - true_j) / K
    if scheme in ("oph", "bottomk"):
        var *= (N_UNION - K) / (N_UNION - 1)
    se = math.sqrt(var / rounds)
    assert abs(est.mean() - true_j) <= Z * se, (est.mean(), true_j, se)
    ratio = (rounds - 1) * est.var(ddof=1) / var
    lo, hi = chi2_quantile(-Z, rounds - 1), chi2_quantile(Z, rounds - 1)
    assert lo <= ratio <= hi, (ratio, lo, hi)
