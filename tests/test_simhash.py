import numpy as np
import pytest

from neardup import IdfTable, SimHasher, hamming, hamming_array, is_near
from neardup.kernels.simhash import fold_one


def brute_fold(hashes, weights):
    out = 0
    for j in range(64):
        s = sum(w if (h >> j) & 1 else -w for h, w in zip(hashes, weights))
        if s > 0:
            out |= 1 << j
    return out


def test_fold_matches_definition():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 50):
        h = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
        w = rng.random(n) * 10
        assert int(fold_one(h, w, 0, n)) == brute_fold([int(x) for x in h], list(w))


def test_hamming_and_is_near():
    a, b = 0b100010110110, 0b110001110011
    assert hamming(a, b) == 5
    assert not is_near(a, b, 3) and is_near(a, b, 5) and is_near(a, a, 0)
    assert hamming(2**64 - 1, 0) == 64
    assert hamming_array(np.array([1, 2**64 - 1], np.uint64), np.array([0, 0], np.uint64)).tolist() == [1, 64]
    with pytest.raises(ValueError):
        is_near(1, 2, -1)


TEXT = ("Near duplicate detection finds documents that are almost the same. Web crawlers use it to skip "
        "pages they have already seen, and corpus builders use it to remove repeated text before training "
        "language models on the remaining unique documents of the collection. ") * 3


def _angle(sh, a, b):
    """Angle between the tf-weighted feature vectors of two texts."""
    f = sh.shingler.features([a, b]).unique()
    va = dict(zip(f.doc(0).tolist(), f.counts[f.offsets[0]:f.offsets[1]].tolist()))
    vb = dict(zip(f.doc(1).tolist(), f.counts[f.offsets[1]:f.offsets[2]].tolist()))
    dot = sum(c * vb.get(h, 0) for h, c in va.items())
    na = np.sqrt(sum(c * c for c in va.values()))
    nb = np.sqrt(sum(c * c for c in vb.values()))
    return float(np.arccos(np.clip(dot / (na * nb), -1, 1)))


def test_near_duplicates_are_close_and_unrelated_far():
    """Charikar: each bit differs with probability θ/π, θ the angle between the weighted feature
    vectors; with 64 bits the distance is ~ Binomial(64, θ/π) — checked within 4 standard deviations."""
    edited = TEXT.replace("almost", "nearly")
    other = "A completely different text about cooking pasta with tomatoes, garlic, basil and olive oil " * 3
    sh = SimHasher()
    fp = sh.sign_batch([TEXT, edited, other])
    for a, b, fa, fb in ((TEXT, edited, fp[0], fp[1]), (TEXT, other, fp[0], fp[2])):
        p = _angle(sh, a, b) / np.pi
        d = hamming(fa, fb)
        assert abs(d - 64 * p) <= 4 * np.sqrt(64 * p * (1 - p)) + 1, (d, 64 * p)
    assert hamming(fp[0], fp[2]) > hamming(fp[0], fp[1])
    assert sh.sign(TEXT) == int(fp[0])


@pytest.mark.parametrize("weighting", ["uniform", "tf", "tfidf"])
def test_weightings_and_top_n(weighting):
    sh = SimHasher(weighting=weighting, ngram=1, top_n=None if weighting != "tf" else 5)
    if weighting == "tfidf":
        sh.fit_idf([TEXT, "other words entirely", "language models"])
    fps = sh.sign_batch([TEXT, TEXT, ""])
    assert fps[0] == fps[1] and fps[2] == 0


def test_top_n_keeps_heaviest_features():
    sh_all = SimHasher(ngram=1)
    sh_top = SimHasher(ngram=1, top_n=1)
    # the heaviest word (count 2) alone vs all six words: other words outvote it on some bits
    text = "alpha alpha beta gamma delta epsilon zeta"
    feats = sh_top.shingler.features([text]).unique()
    heaviest = feats.hashes[np.argmax(feats.counts)]
    assert sh_top.sign(text) == int(heaviest)
    assert sh_all.sign(text) != sh_top.sign(text)


def test_jieba_idf_table_weights_chinese_keywords():
    table = IdfTable.jieba()
    assert len(table) > 100_000
    sh = SimHasher(tokenizer="jieba", ngram=1, weighting="tfidf", idf="jieba", top_n=5)
    s1 = "我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪，当上总经理，出任CEO，迎娶白富美，走上人生巅峰。"
    s2 = s1[:-1] + "，加薪。"
    assert hamming(sh.sign(s1), sh.sign(s2)) <= 3
    with pytest.raises(ValueError, match="ngram=1"):
        SimHasher(idf="jieba", ngram=3)


def test_tfidf_without_table_is_a_clear_error():
    with pytest.raises(ValueError, match="IDF table"):
        SimHasher(weighting="tfidf").sign("x")
    with pytest.raises(ValueError, match="weighting"):
        SimHasher(weighting="bm25")


def test_unit_fold_equals_tf_weighted_fold_over_distinct_features():
    from neardup.kernels.simhash import fold_unit_batch

    rng = np.random.default_rng(3)
    pool = rng.integers(0, 2**63, 40, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    docs = [rng.choice(pool, size) for size in (0, 1, 2, 7, 50, 333)]
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    hashes = np.concatenate(docs).astype(np.uint64)
    fast = fold_unit_batch(hashes, offsets)
    for d, fp in zip(docs, fast):
        vals, counts = np.unique(d, return_counts=True)
        assert int(fp) == brute_fold([int(v) for v in vals], [float(c) for c in counts])
