"""Union–find (disjoint sets) over edge lists: connected components in near-linear time.

Union by smaller root index and path halving: every component's label is its smallest member,
independent of edge order — so clusters are deterministic across runs, engines and partitions.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(inline="always", cache=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def components(n, lo, hi):
    """Label of every node 0..n-1: the smallest node of its connected component."""
    parent = np.arange(n, dtype=np.int64)
    for e in range(lo.shape[0]):
        a = _find(parent, lo[e])
        b = _find(parent, hi[e])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    for x in range(n):
        parent[x] = _find(parent, x)
    return parent


@njit(cache=True)
def pick_representatives(labels, score):
    """Per component: the member with the largest ``score`` (ties: smallest index)."""
    n = labels.shape[0]
    best = np.full(n, -1, dtype=np.int64)
    for x in range(n):
        c = labels[x]
        cur = best[c]
        if cur < 0 or score[x] > score[cur] or (score[x] == score[cur] and x < cur):
            best[c] = x
    rep = np.empty(n, dtype=np.int64)
    for x in range(n):
        rep[x] = best[labels[x]]
    return rep
