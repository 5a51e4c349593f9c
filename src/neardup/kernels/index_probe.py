"""Probing one index segment with a batch of signatures, in one pass.

For each query, the key of each band is binary-searched in the segment's sorted band column; the
rows of the equal runs of all bands are collected, sorted and visited once each. Tombstoned and
empty documents are skipped, the others are scored on the full signature and kept when accepted.
No candidate list is materialised for the batch and nothing is gathered: a query costs
O(b log m + c log c + c k) for c rows sharing a band, and touches only the pages it reads.

``kind`` 0 (MinHash): score = fraction of equal slots (an empty row scores 0), accepted when
score ≥ ``limit``. ``kind`` 1 (SimHash, one 64-bit word per row): score = Hamming distance,
accepted when ≤ ``limit``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .minhash import equal_fraction, is_empty_row
from .simhash import popcount64


@njit(cache=True)
def _lower_bound(col, key):
    lo, hi = 0, col.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if col[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _upper_bound(col, key, lo):
    hi = col.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if col[mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def probe_segment(qvals, qrows, qkeys, bands, band_row, sigs, dead, empty, kind, limit, max_bucket,
                  out_q, out_r, out_s):
    """Matches of the query rows ``qrows`` of ``qvals`` (band keys ``qkeys``, one row per entry of
    ``qrows``) in one segment. Writes (query row, segment row, score) to the ``out_*`` arrays while
    they have room and returns how many matches there are (more than their length: call again with
    larger arrays). ``dead``: per segment row, tombstoned (length 0: none). ``max_bucket`` > 0: a
    band run that would make a bucket of more than that many documents with the query is visited
    at its first (oldest) row only — the batch engine's star rule for large buckets."""
    cap = out_q.shape[0]
    cnt = 0
    has_dead = dead.shape[0] > 0
    nb = min(bands.shape[0], qkeys.shape[1])
    first = np.empty(nb, dtype=np.int64)
    stop = np.empty(nb, dtype=np.int64)
    for qi in range(qrows.shape[0]):
        q = qrows[qi]
        a = qvals[q]
        n = 0
        for b in range(nb):                     # every row sharing a band key, repeats included
            col = bands[b]
            key = qkeys[qi, b]
            j = _lower_bound(col, key)
            end = _upper_bound(col, key, j)
            if max_bucket > 0 and end - j + 1 > max_bucket:
                end = j + 1
            first[b] = j
            stop[b] = end
            n += end - j
        if n == 0:
            continue
        # sized first, then filled: an array grown (replaced) inside the loop would cost numba's
        # reference counting at every step
        rows = np.empty(n, dtype=np.int64)
        n = 0
        for b in range(nb):
            for j in range(first[b], stop[b]):
                rows[n] = band_row[b, j]
                n += 1
        rows.sort()
        for i in range(n):
            r = rows[i]
            if i > 0 and r == rows[i - 1]:
                continue
            if has_dead and dead[r]:
                continue
            row = sigs[r]
            if kind == 0:
                if is_empty_row(row, empty):    # never a match, whatever the limit
                    continue
                s = equal_fraction(a, row, empty)
                if not s >= limit:
                    continue
            else:
                s = float(popcount64(a[0] ^ row[0]))
                if not s <= limit:
                    continue
            if cnt < cap:
                out_q[cnt] = q
                out_r[cnt] = r
                out_s[cnt] = s
            cnt += 1
    return cnt


@njit(cache=True, parallel=True)
def probe_segment_parallel(qvals, qrows, qkeys, bands, band_row, sigs, dead, empty, kind, limit, max_bucket,
                           chunks, out_q, out_r, out_s, counts):
    """:func:`probe_segment` over ``chunks`` slices of the queries on all cores: slice c writes to
    its own stretch of the outputs (``len(out_q) // chunks`` long) and its number of matches to
    ``counts[c]`` (more than the stretch: call again with larger outputs)."""
    nq = qrows.shape[0]
    per = (nq + chunks - 1) // chunks
    cap = out_q.shape[0] // chunks
    for c in prange(chunks):
        lo = min(c * per, nq)
        hi = min(lo + per, nq)
        counts[c] = probe_segment(qvals, qrows[lo:hi], qkeys[lo:hi], bands, band_row, sigs, dead, empty, kind, limit,
                                  max_bucket, out_q[c * cap:(c + 1) * cap], out_r[c * cap:(c + 1) * cap],
                                  out_s[c * cap:(c + 1) * cap])
