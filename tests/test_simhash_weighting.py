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
    # and through SimHasher.sign_features, which takes this path
    h = SimHasher(weighting=weighting, top_n=top_n, idf=_IDF if weighting == "tfidf" else None)
    assert np.array_equal(h.sign_features(feats), got)


def test_idf_slots_find_every_key_and_only_those():
    keys = np.random.default_rng(3).integers(0, 2**64, 5000, dtype=np.uint64)
    t = IdfTable(keys, np.arange(5000, dtype=np.float64), -1.0)
    probe = np.concatenate([keys, np.random.default_rng(4).integers(0, 2**64, 5000, dtype=np.uint64)])
    offs = np.arange(probe.shape[0] + 1, dtype=np.int64)
    # one feature per document, tf-idf weight = its value: the fold's sign pattern tells found from default
    got = weighted_fold_batch(probe, np.ones(probe.shape[0], np.int64), offs, 2, *t.slots, t.keys, t.values,
                              t.default, 0)
    want = fold_batch(probe, t.lookup(probe), offs)
    assert np.array_equal(got, want)
