"""Stage 2, candidates: signatures → the pairs worth verifying.

* **Jaccard** — identical signature rows are linked first (so n copies cost O(n)); LSH banding
  (b bands of r rows, P(candidate | J) = 1 − (1 − Jʳ)ᵇ, :mod:`neardup.index.lsh`) proposes pairs among
  the distinct rows; a bucket holding more than ``MAX_BUCKET`` rows links each row to its first.
* **Containment** — banding chosen per pair of set sizes (LSH Ensemble, Zhu et al. 2016), because a
  passage inside a long document never reaches a Jaccard threshold.
* **SimHash** — permuted tables (Manku et al. 2007): pairs within Hamming distance k
  (:mod:`neardup.index.simhash_index`).

One rule for both engines: the Spark engine bands with the same parameters and the same bucket
limit, and calls :func:`containment_candidate_pairs` on its partitions.
"""
from __future__ import annotations

import numpy as np

from .._arrays import sorted_unique
from ..index.containment import containment_candidates, containment_params
from ..index.lsh import MAX_BUCKET, LSHParams, candidate_pairs, choose_params, identical_rows

__all__ = ["MAX_BUCKET", "LSHParams", "candidate_pairs", "choose_params", "containment_candidate_pairs",
           "containment_lsh", "identical_rows"]


def containment_candidate_pairs(values, sizes, threshold: float, lsh_mode: str, recall: float, rows=None):
    """Candidate pairs (lo < hi) for ``metric="containment"``: either document may hold the other to
    ≥ t, each pair banded for its own size ratio (:func:`neardup.index.containment.containment_candidates`,
    after LSH Ensemble) — not as a Jaccard threshold, which a passage in a long document never reaches.
    ``lsh_mode`` ``recall…`` targets ``recall`` at C = t per pair; ``datasketch`` uses Zhu et al.'s
    equal-weight error criterion. The one rule both engines use."""

    ci, cj = containment_candidates(values, np.asarray(sizes, dtype=np.int64), threshold,
                                    mode=_containment_mode(lsh_mode), recall=recall, rows=rows, sort=False)
    if ci.shape[0] == 0:
        return ci, cj
    n = np.int64(values.shape[0])
    code = np.minimum(ci, cj) * n + np.maximum(ci, cj)
    del ci, cj
    code = sorted_unique(code)
    return code // n, code % n


def _containment_mode(lsh_mode: str) -> str:
    """The containment banding rule for an ``--lsh`` mode: datasketch's criterion, else recall."""
    return "ensemble" if lsh_mode == "datasketch" else "recall"


def containment_lsh(threshold: float, num_perm: int, lsh_mode: str, recall: float) -> LSHParams:
    """What a report shows of containment banding: the (b, r) of two documents of one size (every
    other size ratio has its own), and the rule."""
    mode = _containment_mode(lsh_mode)
    b, r = containment_params(threshold, num_perm, 1000, 1000, mode=mode, recall=recall)
    label = f"recall≥{recall}" if mode == "recall" else "datasketch"
    return LSHParams(b, r, threshold, f"containment per size ratio ({label})")
