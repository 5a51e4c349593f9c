"""SimHash's collision curve, the S-curve of verified SimHash's candidate radius.

Charikar (2002): a fingerprint bit is the sign of the weighted feature vector's projection on a
random hyperplane (the hashed features' ±1 per bit), so two vectors at angle θ differ in it with
probability p = θ / π. Taking the 64 bits as independent trials (the model's assumption: they come
from independent hash bits), the Hamming distance is Binomial(64, p), and a pair at cosine c lies
within k bits with probability F(k; 64, arccos(c) / π).

Verified SimHash (``dedup --method simhash`` without ``--bits``) takes candidates within k_c bits and
decides them by exact Jaccard. The radius is chosen as LSH bands are: the smallest k_c whose
probability of finding a pair at cosine :data:`COSINE_AT_T` is at least the recall target — the
cosine of unigram-tf features that near-duplicates at Jaccard t = 0.8 reach: on the Chinese man
pages (each page simplified and traditional-converted-back; ``benchmarks/bench_simhash_verified.py``),
99 % of the same-page pairs with word 5-gram Jaccard ≥ 0.8 have cosine ≥ 0.98 (median 0.995).
"""
from __future__ import annotations

import math

BITS = 64
COSINE_AT_T = 0.98


def within(k: int, cosine: float, bits: int = BITS) -> float:
    """P(Hamming distance ≤ k) for two fingerprints of feature vectors at ``cosine``."""
    p = math.acos(max(-1.0, min(1.0, float(cosine)))) / math.pi
    if p <= 0.0:
        return 1.0
    return min(1.0, sum(math.comb(bits, i) * p ** i * (1.0 - p) ** (bits - i) for i in range(min(int(k), bits) + 1)))


def candidate_radius(recall: float, cosine: float = COSINE_AT_T, bits: int = BITS) -> int:
    """The smallest k with :func:`within` (k, ``cosine``) ≥ ``recall``."""
    for k in range(bits + 1):
        if within(k, cosine, bits) >= recall:
            return k
    return bits


def curve(k: int, points: int = 41) -> list[list[float]]:
    """[cosine, P(found within k bits)] for cosines from 0.9 to 1 (the report's S-curve)."""
    return [[round(0.9 + 0.1 * i / (points - 1), 4), round(within(k, 0.9 + 0.1 * i / (points - 1)), 6)]
            for i in range(points)]


__all__ = ["BITS", "COSINE_AT_T", "candidate_radius", "curve", "within"]
