"""The compiled SimHash weighting (kernels/simhash.weighted_fold_batch: uniform / tf / tf-idf
weights of the distinct features, top N, fold in one pass) against the NumPy steps it replaces
(SimHasher.weights + fold_batch): the same fingerprints, bit for bit, on generated batches with
repeated features, tied weights, features in and out of the IDF table, empty documents and every
top N."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.features.shingles import Features
from neardup.features.weights import IdfTable
from neardup.kernels.simhash import fold_batch, weighted_fold_batch
from neardup.sketches.simhash import WEIGHTINGS, SimHasher

_POOL = np.random.default_rng(7).integers(0, 2**64, 40, dtype=np.uint64)
_IDF = IdfTable(_POOL[:25], np.round(np.random.default_rng(8).uniform(0.5, 12.0, 25), 1), 6.5)


def _reference(feats: Features, weighting: str, top_n) -> np.ndarray:
    h = SimHasher(weighting=weighting, top_n=top_n, idf=_IDF if weighting == "tfidf" else None)
    uniq, w = h.weights(feats)
    return fold_batch(uniq.hashes, np.ascontiguousarray(w, dtype=np.float64), uniq.offsets)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 39), max_size=30), min_size=1, max_size=8),
       st.sampled_from(WEIGHTINGS), st.one_of(st.none(), st.integers(1, 12)))
def test_compiled_weighting_equals_the_numpy_steps(docs, weighting, top_n):
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    hashes = _POOL[np.asarray([i for d in docs for i in d], dtype=np.int64)]
    feats = Features(hashes, offsets)
    idf = _IDF if weighting == "tfidf" else IdfTable(np.zeros(0, np.uint64), np.zeros(0), 0.0)
    u = feats.unique()
    got = weighted_fold_batch(u.hashes, u.counts, u.offsets, WEIGHTINGS.index(weighting), *idf.slots, idf.keys,
                              idf.values, idf.default, top_n or 0)
    assert np.array_equal(got, _reference(feats, weighting, top_n))
    # and through SimHasher.sign_features (which takes this path, or for tf without top N the unsorted fold)
    h = SimHasher(weighting=weighting, top_n=top_n, idf=_IDF if weighting == "tfidf" else None)
    assert np.array_equal(h.sign_features(feats), got)


def test_idf_slots_give_every_key_its_value_and_others_the_default():
    """Each document: a probe feature and an anchor absent from the table (the default, 2500.5): the
    fold's bits where the two hashes differ follow the heavier one, so a value read for the wrong
    key, or the default for a key in the table, changes the fingerprint."""
    keys = np.random.default_rng(3).integers(0, 2**64, 5000, dtype=np.uint64)
    t = IdfTable(keys, np.random.default_rng(5).permutation(5000).astype(np.float64), 2500.5)
    probe = np.concatenate([keys, np.random.default_rng(4).integers(0, 2**64, 5000, dtype=np.uint64)])
    anchor = np.uint64(0x5555555555555555)
    assert anchor not in set(keys.tolist())
    pairs = np.sort(np.stack([probe, np.full(probe.shape[0], anchor)], axis=1), axis=1).reshape(-1)
    offs = np.arange(0, pairs.shape[0] + 1, 2, dtype=np.int64)
    got = weighted_fold_batch(pairs, np.ones(pairs.shape[0], np.int64), offs, 2, *t.slots, t.keys, t.values,
                              t.default, 0)
    assert np.array_equal(got, fold_batch(pairs, t.lookup(pairs), offs))
    other = IdfTable(probe[2500:7500].copy(), np.arange(5000, dtype=np.float64), 2500.5)
    t.keys, t.values = other.keys, other.values          # keys replaced: the slots are built again
    got = weighted_fold_batch(pairs, np.ones(pairs.shape[0], np.int64), offs, 2, *t.slots, t.keys, t.values,
                              t.default, 0)
    assert np.array_equal(got, fold_batch(pairs, t.lookup(pairs), offs))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.5, 2.5, 7.0, float("inf"), float("nan"), -1.0]), min_size=1, max_size=40),
       st.integers(1, 12))
def test_top_n_selection_is_the_stable_sort_with_ties_and_nan(weights, top_n):
    """The one-pass top N keeps what the first N of a stable sort by descending weight keep
    (ties to the smaller position, NaN last), whatever the weights."""
    from neardup.kernels.simhash import fold_one

    w = np.asarray(weights, dtype=np.float64)
    k = w.shape[0]
    hashes = np.sort(np.random.default_rng(k).choice(_POOL, k, replace=False))
    got = weighted_fold_batch(hashes, np.ones(k, np.int64), np.asarray([0, k], np.int64), 2,
                              *IdfTable(hashes, w, 0.0).slots, hashes, w, 0.0, top_n)
    if k > top_n:
        keep = np.sort(np.argsort(-w, kind="mergesort")[:top_n])
        want = fold_one(hashes[keep], w[keep], 0, keep.shape[0])
    else:
        want = fold_one(hashes, w, 0, k)
    assert got[0] == want
