"""Kernels for Hamming-distance search over 64-bit fingerprints with permuted block tables.

Background (Manku, Jain & Das Sarma, WWW 2007): split the fingerprint bits into B blocks.
Two fingerprints that differ in at most k bits differ in at most k blocks, so at least
B - k blocks are bit-for-bit equal.  A *table* is one choice of such blocks; its *key* is
the concatenation of the chosen blocks' bits.  Every pair within distance k shares the key of
at least one table, so scanning the groups of equal keys in every table finds all pairs.

A table is described here by a few contiguous bit *fields* ``(shift, width)``; its key is the
fields' bits concatenated in order (first field most significant).  ``key_masks[t]`` has the
table's key bits set; a pair with XOR ``x`` shares table ``t``'s key iff ``x & key_masks[t] == 0``.
Each pair is reported only by the *first* table whose key it shares, so no set is needed to
deduplicate across tables.

All uint64 arithmetic uses explicit ``np.uint64`` operands: mixing int64 and uint64 makes
numba fall back to float64.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import GOLDEN
from .simhash import popcount64

_ZERO = np.uint64(0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def low_mask(w):
    """Mask of the ``w`` low bits, 1 <= w <= 64."""
    return _ALL >> np.uint64(64 - w)


@njit(cache=True, inline="always")
def extract_key(fp, shifts, widths, nfields):
    """Concatenate the fields ``(shifts[m], widths[m])`` of ``fp``, first field most significant."""
    key = _ZERO
    for m in range(nfields):
        w = widths[m]
        v = (fp >> np.uint64(shifts[m])) & low_mask(w)
        if w == 64:
            key = v
        else:
            key = (key << np.uint64(w)) | v
    return key


@njit(cache=True, inline="always")
def xor_fold(x, bits):
    """XOR the ``bits``-wide chunks of ``x`` together (1 <= bits <= 64).

    popcount(fold(a) ^ fold(b)) <= popcount(a ^ b), so a fold is a cheap lower bound filter.
    """
    if bits >= 64:
        return x
    m = low_mask(bits)
    out = _ZERO
    b = np.uint64(bits)
    while x != _ZERO:
        out ^= x & m
        x >>= b
    return out


@njit(cache=True, inline="always")
def first_table(x, key_masks):
    """Index of the first table whose key bits are all zero in the XOR ``x`` (-1 if none)."""
    for t in range(key_masks.shape[0]):
        if (x & key_masks[t]) == _ZERO:
            return t
    return -1


# ---------------------------------------------------------------------------------------------
# Batch: one sorted array per table
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def pack_table(fps, shifts, widths, nfields, key_bits, key_bits_eff, extra_bits, key_mask,
               idx_bits, out):
    """``out[i] = key' << (64 - key_bits_eff) | fold(fps[i] & ~key_mask) << idx_bits | i``.

    ``key'`` is the table key cut to its ``key_bits_eff`` leading bits (when key and index
    do not both fit in 64 bits); the middle ``extra_bits`` hold an XOR fold of the non-key
    bits, used by :func:`scan_table` to reject most candidates without touching ``fps``.
    Sorting ``out`` groups equal keys into runs.
    """
    drop = np.uint64(key_bits - key_bits_eff)
    kshift = np.uint64(64 - key_bits_eff)
    ishift = np.uint64(idx_bits)
    rest_mask = ~key_mask
    for i in range(fps.shape[0]):
        fp = fps[i]
        key = extract_key(fp, shifts, widths, nfields) >> drop
        word = (key << kshift) | np.uint64(i)
        if extra_bits > 0:
            word |= xor_fold(fp & rest_mask, extra_bits) << ishift
        out[i] = word


@njit(cache=True)
def scan_table(srt, fps, k, key_bits_eff, idx_bits, t, key_masks, oi, oj, od, n_out, pos):
    """Scan the runs of equal keys of the sorted packed table ``srt`` (table number ``t``).

    Within a run every pair is a candidate: first the packed fold bits reject pairs that
    surely differ in more than ``k`` bits, then the exact distance is taken from ``fps`` and
    the pair is kept only if ``t`` is the first table whose key it shares.  Pairs go to
    ``oi < oj`` / ``od`` from position ``n_out``; the new count is returned.

    ``pos = [run start, a, b]`` is where to start (``[0, 0, 0]``: from the beginning).  When
    the buffers fill up the kernel stores the next candidate in ``pos`` and returns; the caller
    grows the buffers and calls again.  ``pos[0] == len(srt)`` means the table is done.
    (Growing inside the kernel would make numba reference-count the buffers on every run.)
    """
    n = srt.shape[0]
    cap = oi.shape[0]
    kshift = np.uint64(64 - key_bits_eff)
    ishift = np.uint64(idx_bits)
    imask = low_mask(idx_bits)
    kk = np.uint64(k)
    start = pos[0]
    a_from = max(pos[1], start)
    b_from = max(pos[2], a_from + 1)
    while start < n:
        key = srt[start] >> kshift
        end = start + 1
        while end < n and (srt[end] >> kshift) == key:
            end += 1
        for a in range(a_from, end - 1):
            wa = srt[a]
            for b in range(b_from, end):
                wb = srt[b]
                if popcount64((wa ^ wb) >> ishift) > kk:  # key bits equal: only the fold counts
                    continue
                ia = np.int64(wa & imask)
                ib = np.int64(wb & imask)
                x = fps[ia] ^ fps[ib]
                d = popcount64(x)
                if d > kk or first_table(x, key_masks) != t:
                    continue
                if n_out == cap:
                    pos[0] = start
                    pos[1] = a
                    pos[2] = b
                    return n_out
                if ia < ib:
                    oi[n_out] = ia
                    oj[n_out] = ib
                else:
                    oi[n_out] = ib
                    oj[n_out] = ia
                od[n_out] = np.uint8(d)
                n_out += 1
            b_from = a + 2
        start = end
        a_from = end
        b_from = end + 1
    pos[0] = n
    return n_out


@njit(cache=True)
def count_expanded(pi, pj, sizes):
    """Number of index pairs that the value pairs ``(pi, pj)`` and the groups ``sizes`` imply."""
    total = 0
    for g in range(sizes.shape[0]):
        s = sizes[g]
        total += s * (s - 1) // 2
    for p in range(pi.shape[0]):
        total += sizes[pi[p]] * sizes[pj[p]]
    return total


@njit(cache=True)
def expand_groups(pi, pj, pd, starts, members, total):
    """All index pairs ``i < j`` implied by groups of identical values and value pairs.

    Group ``g`` holds the indices ``members[starts[g]:starts[g+1]]`` (ascending).  Inside a
    group every pair is at distance 0; a value pair ``(pi, pj, pd)`` becomes all member pairs.
    """
    oi = np.empty(total, np.int64)
    oj = np.empty(total, np.int64)
    od = np.zeros(total, np.uint8)
    n = 0
    for g in range(starts.shape[0] - 1):
        s0 = starts[g]
        s1 = starts[g + 1]
        for a in range(s0, s1 - 1):
            for b in range(a + 1, s1):
                oi[n] = members[a]
                oj[n] = members[b]
                n += 1
    for p in range(pi.shape[0]):
        ga = pi[p]
        gb = pj[p]
        d = pd[p]
        for a in range(starts[ga], starts[ga + 1]):
            x = members[a]
            for b in range(starts[gb], starts[gb + 1]):
                y = members[b]
                if x < y:
                    oi[n] = x
                    oj[n] = y
                else:
                    oi[n] = y
                    oj[n] = x
                od[n] = d
                n += 1
    return oi, oj, od


# ---------------------------------------------------------------------------------------------
# Online: per table, a chained hash table over *distinct values* (doubly linked, O(1) insert
# and remove); the keys holding the same value hang off the value's node in a second list.
#
#   fps[s]            fingerprint of slot s
#   heads[t, b]       first node of bucket b of table t (-1: empty)
#   links[0, t, s]    next node after s in its bucket of table t; links[1, t, s]: previous
#   same[0, s]        next slot with the same value; same[1, s]: previous (-1 at the node)
#   same[2, s]        1 if s is its value's node (linked in the tables), else 0
#
# Copies of one value cost the tables nothing: queries walk distinct values only and then
# list the copies of each match, so their time is O(tables + distinct candidates + answer).
# ---------------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def bucket_of(fp, mask, hbits):
    """Bucket of ``fp`` in a table with key mask ``mask`` and ``2**hbits`` buckets."""
    return np.int64(((fp & mask) * GOLDEN) >> np.uint64(64 - hbits))


@njit(cache=True, inline="always")
def _link_node(slot, fp, key_masks, heads, links, hbits):
    for t in range(key_masks.shape[0]):
        b = bucket_of(fp, key_masks[t], hbits)
        h = heads[t, b]
        links[0, t, slot] = h
        links[1, t, slot] = -1
        if h >= 0:
            links[1, t, h] = slot
        heads[t, b] = slot


@njit(cache=True)
def online_link_nodes(nodes, fps, key_masks, heads, links, hbits):
    """Link the value nodes ``nodes`` into every table (used after a reallocation)."""
    for i in range(nodes.shape[0]):
        s = nodes[i]
        _link_node(s, fps[s], key_masks, heads, links, hbits)


@njit(cache=True, inline="always")
def _add(slot, fp, key_masks, heads, links, same, fps, hbits):
    fps[slot] = fp
    s = heads[0, bucket_of(fp, key_masks[0], hbits)]
    while s >= 0:                       # is the value stored already?  (table 0's bucket)
        if fps[s] == fp:
            q = same[0, s]              # join its list right after the node
            same[0, s] = slot
            same[1, slot] = s
            same[0, slot] = q
            if q >= 0:
                same[1, q] = slot
            same[2, slot] = 0
            return
        s = links[0, 0, s]
    same[0, slot] = -1
    same[1, slot] = -1
    same[2, slot] = 1
    _link_node(slot, fp, key_masks, heads, links, hbits)


@njit(cache=True)
def online_add(slot, fp, key_masks, heads, links, same, fps, hbits):
    """Store fingerprint ``fp`` (uint64, or an int64 with its bits) in the free ``slot``."""
    _add(slot, np.uint64(fp), key_masks, heads, links, same, fps, hbits)


@njit(cache=True)
def online_add_many(slots, vals, key_masks, heads, links, same, fps, hbits):
    for i in range(slots.shape[0]):
        _add(slots[i], vals[i], key_masks, heads, links, same, fps, hbits)


@njit(cache=True)
def online_remove(slot, key_masks, heads, links, same, fps, hbits):
    """Free ``slot``: unlink it from its value's list, and if it was the value's node either
    hand the node's place in every table to the next copy or unlink the value."""
    nt = key_masks.shape[0]
    if same[2, slot] == 0:
        p = same[1, slot]
        q = same[0, slot]
        same[0, p] = q
        if q >= 0:
            same[1, q] = p
    else:
        fp = fps[slot]
        m = same[0, slot]
        for t in range(nt):
            p = links[1, t, slot]
            q = links[0, t, slot]
            if m >= 0:                  # the next copy takes the node's place
                links[0, t, m] = q
                links[1, t, m] = p
                if p >= 0:
                    links[0, t, p] = m
                else:
                    heads[t, bucket_of(fp, key_masks[t], hbits)] = m
                if q >= 0:
                    links[1, t, q] = m
            else:
                if p >= 0:
                    links[0, t, p] = q
                else:
                    heads[t, bucket_of(fp, key_masks[t], hbits)] = q
                if q >= 0:
                    links[1, t, q] = p
        if m >= 0:
            same[1, m] = -1
            same[2, m] = 1
    for t in range(nt):
        links[0, t, slot] = -1
        links[1, t, slot] = -1
    same[0, slot] = -1
    same[1, slot] = -1
    same[2, slot] = 0


@njit(cache=True, inline="always")
def _probe(q, kk, key_masks, heads, links, same, fps, hbits, cur, out, n):
    """Append the matches of ``q`` to ``out`` from position ``n``; return the new count.

    A match is stored as ``dist << 32 | slot`` (so sorting orders by distance, then slot);
    matches beyond ``len(out)`` are counted but not stored.  The chains of all tables are
    walked in lockstep so that their memory loads overlap instead of queueing.
    A bucket may also hold values whose key only collides in the hash; they fail the
    first-table test (their XOR is non-zero on the table's key bits) and are skipped.
    """
    nt = key_masks.shape[0]
    cap = out.shape[0]
    for t in range(nt):
        cur[t] = heads[t, bucket_of(q, key_masks[t], hbits)]
    active = True
    while active:
        active = False
        for t in range(nt):
            s = cur[t]
            if s < 0:
                continue
            x = fps[s] ^ q
            d = popcount64(x)
            if d <= kk and first_table(x, key_masks) == t:
                hi = np.int64(d) << 32
                c = s
                while c >= 0:           # the value and all its copies
                    if n < cap:
                        out[n] = hi | np.int64(c)
                    n += 1
                    c = same[0, c]
            s2 = links[0, t, s]
            cur[t] = s2
            if s2 >= 0:
                active = True
    return n


@njit(cache=True)
def online_query(q, k, key_masks, heads, links, same, fps, hbits, out):
    """Matches of ``q`` within ``k`` as ``dist << 32 | slot`` in ``out``, sorted; returns the count.

    If the count exceeds ``len(out)`` nothing is sorted: call again with a larger ``out``.
    ``q`` may be a uint64 or an int64 with the same bits.
    """
    q = np.uint64(q)
    cur = np.empty(key_masks.shape[0], np.int64)
    n = _probe(q, np.uint64(k), key_masks, heads, links, same, fps, hbits, cur, out, 0)
    if 1 < n <= out.shape[0]:
        out[:n].sort()
    return n


@njit(cache=True)
def online_query_many(qs, k, key_masks, heads, links, same, fps, hbits, offsets, out):
    """:func:`online_query` for every ``qs[i]``: its matches in ``out[offsets[i]:offsets[i+1]]``.

    Returns the total count; if it exceeds ``len(out)``, call again with a larger ``out``.
    """
    cur = np.empty(key_masks.shape[0], np.int64)
    kk = np.uint64(k)
    cap = out.shape[0]
    n = 0
    offsets[0] = 0
    for i in range(qs.shape[0]):
        lo = n
        n = _probe(qs[i], kk, key_masks, heads, links, same, fps, hbits, cur, out, n)
        if n - lo > 1 and n <= cap:
            out[lo:n].sort()
        offsets[i + 1] = n
    return n
