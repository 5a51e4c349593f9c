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


def test_near_duplicates_are_close_and_unrelated_far():
    edited = TEXT.replace("almost", "nearly")
    other = "A completely different text about cooking pasta with tomatoes, garlic, basil and olive oil " * 3
    sh = SimHasher()
    fp = sh.sign_batch([TEXT, edited, other])
    assert hamming(fp[0], fp[1]) <= 10
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
