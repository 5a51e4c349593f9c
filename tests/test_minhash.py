import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import SCHEMES, MinHash, MinHasher, Shingler, Signatures, exact_jaccard_pairs

DOCS = [
    "MinHash is a probabilistic data structure for estimating the similarity between datasets quickly",
    "MinHash is a probabilistic data structure for estimating the similarity between documents quickly",
    "Completely unrelated words appear here with no overlap in any five word window at all today",
    "",
    "tiny",
]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_identical_symmetric_and_batch_equals_single(scheme):
    h = MinHasher(num_perm=64, scheme=scheme, ngram=3)
    sigs = h.sign_batch(DOCS)
    assert sigs.values.shape == (len(DOCS), 64)
    for i, d in enumerate(DOCS):
        assert np.array_equal(h.sign(d).hashvalues, sigs.values[i]), i
    assert sigs.jaccard_pairs([0], [0])[0] == 1.0
    assert sigs.jaccard_pairs([4], [4])[0] == 1.0
    assert sigs.jaccard_pairs([0], [1])[0] == sigs.jaccard_pairs([1], [0])[0]
    assert 0.2 < sigs.jaccard_pairs([0], [1])[0] < 0.9
    assert sigs.jaccard_pairs([0], [2])[0] < 0.1
    # empty documents are similar to nothing, themselves included
    assert sigs.jaccard_pairs([3, 3], [3, 0]).tolist() == [0.0, 0.0]
    m = sigs.jaccard_matrix()
    assert np.allclose(m, m.T)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_merge_equals_sketch_of_union(scheme):
    items_a = [f"a{i}" for i in range(300)] + [f"s{i}" for i in range(100)]
    items_b = [f"b{i}" for i in range(50)] + [f"s{i}" for i in range(100)]
    ma = MinHash(128, scheme, seed=3).update(items_a)
    mb = MinHash(128, scheme, seed=3).update(items_b)
    union = MinHash(128, scheme, seed=3).update(items_a + items_b)
    assert ma.copy().merge(mb) == union
    assert mb.copy().merge(ma) == union


@pytest.mark.parametrize("scheme", ["oph", "permutation", "bottomk"])
def test_incremental_update_equals_one_shot(scheme):
    items = np.arange(1000, dtype=np.int64) * 7919
    one = MinHash(128, scheme, seed=9).update(items)
    inc = MinHash(128, scheme, seed=9)
    for part in np.array_split(items, 7):
        inc.update(part)
    assert inc == one
    # ints as Python ints hash like numpy ints
    assert MinHash(128, scheme, seed=9).update([int(x) for x in items]) == one


@pytest.mark.parametrize("scheme", SCHEMES)
def test_serialisation_round_trip(scheme, tmp_path):
    m = MinHasher(num_perm=32, scheme=scheme, seed=5).sign(DOCS[0])
    back = MinHash.from_bytes(m.to_bytes())
    assert back == m and back.scheme == scheme and back.seed == 5 and back.num_perm == 32
    assert back.jaccard(m) == 1.0
    sigs = MinHasher(num_perm=32, scheme=scheme, seed=5).sign_batch(DOCS)
    sigs.save(tmp_path / "s.npz")
    again = Signatures.load(tmp_path / "s.npz")
    assert np.array_equal(again.values, sigs.values) and again.scheme == scheme and again.seed == 5
    assert again.config["ngram"] == 5


def test_from_bytes_rejects_garbage():
    with pytest.raises(ValueError, match="magic"):
        MinHash.from_bytes(b"nope")


def test_incompatible_sketches_refuse_comparison():
    a = MinHash(64, "oph", seed=1).update(["x"])
    with pytest.raises(ValueError, match="scheme, seed, num_perm"):
        a.jaccard(MinHash(64, "oph", seed=2).update(["x"]))
    with pytest.raises(ValueError, match="scheme, seed, num_perm"):
        a.jaccard(MinHash(64, "permutation", seed=1).update(["x"]))
    with pytest.raises(TypeError):
        a.jaccard("x")


def test_parameter_validation():
    with pytest.raises(ValueError, match="scheme"):
        MinHash(128, "nope")
    with pytest.raises(ValueError, match="num_perm"):
        MinHash(0)
    with pytest.raises(ValueError, match="seed"):
        MinHash(128, "oph", seed=-1)
    with pytest.raises(ValueError, match="seed"):
        MinHash(128, "datasketch-legacy", seed=2**32)
    with pytest.raises(TypeError):
        MinHash(16).update([1.5])


def test_datasketch_scheme_reproduces_published_values(shared):
    import json

    ref = json.loads((shared / "corpora/reference_values/values.json").read_text())["datasketch"]
    assert MinHash(4, "datasketch-legacy", seed=1).update([b"Hello"]).hashvalues.tolist() == \
        ref["test_byte_tokens"]["hashvalues_legacy"]
    assert MinHash(4, "datasketch-affine32", seed=1).update([b"Hello"]).hashvalues.tolist() == \
        ref["test_byte_tokens"]["hashvalues_affine32_default_2.0.0"]
    ex = ref["minhash_example"]
    for scheme, key in (("datasketch-legacy", "legacy"), ("datasketch-affine32", "affine32")):
        a = MinHash(128, scheme, seed=1).update(ex["data1"])
        b = MinHash(128, scheme, seed=1).update(ex["data2"])
        assert a.jaccard(b) == ex["estimated_num_perm128_seed1"][key]


def test_item_sets_for_recommenders():
    users_a = np.arange(0, 10_000, dtype=np.int64)
    users_b = np.arange(5_000, 15_000, dtype=np.int64)
    a = MinHash(256, "oph", seed=1).update(users_a)
    b = MinHash(256, "oph", seed=1).update(users_b)
    assert abs(a.jaccard(b) - 1 / 3) < 4 * np.sqrt((1 / 3) * (2 / 3) / 256)


def test_exact_jaccard_matches_python_sets():
    sh = Shingler(ngram=3)
    f = sh.features(DOCS)
    for i in range(len(DOCS)):
        for j in range(len(DOCS)):
            sa, sb = set(sh.shingles(DOCS[i])), set(sh.shingles(DOCS[j]))
            expect = len(sa & sb) / len(sa | sb) if sa and sb else 0.0
            assert exact_jaccard_pairs(f, [i], [j])[0] == pytest.approx(expect)


FUSED_TEXTS = ["", "x", "two words", "Déjà vu: Ünïcode, ﬁne; 中文的文本也一样 mixed " * 7,
               "the same five word shingle " * 40, " \n\t ", "a b c d e f g h i j k l m n o p"]


@pytest.mark.parametrize("ngram", [1, 3, 5])
def test_fused_text_kernels_equal_the_two_step_path(ngram):
    """The fused per-document kernels (oph MinHash, tf SimHash) give exactly the signatures of
    features → sketch, and the shingle counts."""
    from neardup import SimHasher

    mh = MinHasher(num_perm=64, ngram=ngram, seed=5)
    feats = mh.shingler.features(FUSED_TEXTS)
    sigs, sizes = mh.sign_batch_sizes(FUSED_TEXTS)
    assert np.array_equal(sigs.values, mh.sign_features(feats).values)
    assert np.array_equal(sizes, feats.sizes())
    sh = SimHasher(ngram=ngram)
    fps, sizes = sh.sign_batch_sizes(FUSED_TEXTS)
    assert np.array_equal(fps, sh.sign_features(sh.shingler.features(FUSED_TEXTS)))
    assert np.array_equal(sizes, sh.shingler.features(FUSED_TEXTS).sizes())


def test_exact_pair_stats_on_all_paths_equal_brute_force(monkeypatch):
    """|A ∩ B| by merge (similar sizes), by galloping (sizes 8× apart or more: a passage against a
    long document) and on all threads (large batches) equals numpy's set intersection; the larger
    containment is |A ∩ B| / min(|A|, |B|)."""
    import neardup.similarity.jaccard as sj
    from neardup.features.shingles import Features

    rng = np.random.default_rng(7)
    sets = []
    for i in range(300):
        n = int(rng.integers(0, 4000)) if i % 5 else int(rng.integers(0, 30))
        sets.append(np.unique(rng.integers(0, 6000, size=n).astype(np.uint64)))
    off = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=off[1:])
    f = Features(np.concatenate(sets), off, np.ones(off[-1], np.int64))
    ii, jj = rng.integers(0, 300, 5000), rng.integers(0, 300, 5000)
    ref = np.array([len(np.intersect1d(sets[a], sets[b])) for a, b in zip(ii, jj)])
    ratio = np.array([max(len(sets[a]), len(sets[b])) / max(1, min(len(sets[a]), len(sets[b]))) for a, b in zip(ii, jj)])
    assert (ratio >= 8).sum() > 500 and (ratio < 8).sum() > 500      # both intersection paths are taken
    serial = sj._stats(f, ii, jj)[0]
    monkeypatch.setattr(sj, "PARALLEL_PAIRS", 1)
    parallel = sj._stats(f, ii, jj)[0]
    assert np.array_equal(serial, ref) and np.array_equal(parallel, ref)
    sizes = np.array([len(s) for s in sets])
    want = np.where((sizes[ii] > 0) & (sizes[jj] > 0), ref / np.maximum(np.minimum(sizes[ii], sizes[jj]), 1), 0.0)
    assert np.array_equal(sj.max_containment_pairs(f, ii, jj), want)


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 40), max_size=30), st.sets(st.integers(0, 40), max_size=30), st.integers(0, 3),
       st.integers(0, 3))
def test_the_block_merge_counts_every_common_value_once(a, b, pad_a, pad_b):
    """The merge compares blocks of four at once (the last values of each side one at a time): small
    universes give every interleaving — blocks ending on the same value, a side ending mid-block,
    runs of common values across block edges; ``pad``: the runs start inside a larger array."""
    from neardup.kernels.jaccard import intersect_runs, intersect_size

    ha = np.array([10**6] * pad_a + sorted(a), dtype=np.uint64)
    hb = np.array([10**6] * pad_b + sorted(b), dtype=np.uint64)
    want = len(a & b)
    assert intersect_runs(ha, pad_a, len(ha), hb, pad_b, len(hb)) == want
    both = np.concatenate([ha, hb])
    assert intersect_size(both, pad_a, len(ha), len(ha) + pad_b, len(both)) == want


def test_top_k_jaccard_prunes_to_the_same_answer_as_scoring_everything():
    """The exact top-k kernel drops a set once its intersection cannot reach the k-th best: the answer
    is still that of scoring every row and sorting by (−J, row), ties and empty sets included; and a
    bounded intersection is either the exact count or −1 when below what was needed."""
    from neardup.kernels.jaccard import intersect_bounded, intersect_runs, top_k_jaccard

    rng = np.random.default_rng(3)
    sets = [np.unique(rng.integers(0, 400, size=int(rng.integers(0, 300))).astype(np.uint64)) for _ in range(200)]
    sets += [sets[5].copy(), sets[5].copy(), np.zeros(0, np.uint64)]       # ties at J = 1, and an empty set
    start = np.cumsum([0] + [len(x) for x in sets])[:-1].astype(np.int64)
    end = start + np.array([len(x) for x in sets], dtype=np.int64)
    hb = np.concatenate(sets)
    for qi in (5, 17, 202):
        q = sets[qi]
        j = np.array([len(np.intersect1d(q, x)) / max(1, len(np.union1d(q, x))) if len(q) and len(x) else 0.0
                      for x in sets])
        for k in (1, 3, 10, 250):
            order = rng.permutation(len(sets)).astype(np.int64)              # any order of trial
            rows, got = top_k_jaccard(q, hb, start, end, order, k)
            want = np.lexsort((np.arange(len(sets)), -j))[:k]
            assert rows.tolist() == want.tolist() and np.allclose(got, j[want])
    a, b = sets[0], sets[1]
    c = intersect_runs(a, 0, len(a), b, 0, len(b))
    for need in (0, c, c + 1):
        got = intersect_bounded(a, 0, len(a), b, 0, len(b), need)
        assert got == (c if c >= need else -1)
