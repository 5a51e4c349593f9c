"""neardup.index.memory.MinHashLSH: datasketch's interface over neardup's banding, verified answers,
top-k by LSH Forest, and the on-disk format."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from neardup import MinHash, MinHasher
from neardup.index.disk import DiskIndex
from neardup.index.memory import MinHashLSH
from neardup.sketches.compat import datasketch as ds
from neardup.sketches.minhash import jaccard_rows

ROOT = Path(__file__).resolve().parents[1]
DOCS = [json.loads(x) for x in gzip.open(ROOT / "examples" / "data" / "debian_copyright.jsonl.gz", "rt")]


@pytest.fixture(scope="module")
def signed():
    mh = MinHasher(num_perm=128, scheme="oph", seed=1)
    return mh, mh.sign_batch([d["text"] for d in DOCS])


def test_same_answers_as_the_disk_index(signed, tmp_path):
    mh, sigs = signed
    keys = [d["id"] for d in DOCS]
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    lsh.insert_batch(keys[:400], sigs.values[:400])
    with DiskIndex.create(tmp_path / "d", threshold=0.8) as disk:
        disk.add_signatures(keys[:400], sigs.values[:400])
        for i in range(400, 550):
            assert lsh.query(sigs[i], with_scores=True) == disk.query_signatures(sigs.values[i:i + 1])[0]
    assert len(lsh) == 400 and keys[3] in lsh and keys[500] not in lsh
    # one at a time, MinHash objects (mergeable sketches made by update) as well as matrix rows
    one = MinHashLSH(threshold=0.8, num_perm=128)
    for k in keys[:50]:
        one.insert(k, sigs[keys.index(k)])
    m = mh.sign(DOCS[3]["text"])
    assert isinstance(m, MinHash) and one.query(m)[0] == keys[3]


def test_remove_and_bad_uses(signed):
    _, sigs = signed
    keys = [d["id"] for d in DOCS]
    lsh = MinHashLSH()
    lsh.insert_batch(keys[:100], sigs.values[:100])
    hits = lsh.query(sigs[5])
    assert keys[5] in hits
    lsh.remove(keys[5])
    assert keys[5] not in lsh and keys[5] not in lsh.query(sigs[5]) and len(lsh) == 99
    with pytest.raises(KeyError):
        lsh.remove(keys[5])
    with pytest.raises(ValueError, match="already in the index"):
        lsh.insert(keys[6], sigs[6])
    with pytest.raises(ValueError, match="twice"):
        lsh.insert_batch(["x", "x"], sigs.values[:2])
    with pytest.raises(ValueError, match="slots"):
        lsh.insert("y", np.zeros(64, np.uint32))
    with pytest.raises(ValueError, match="scheme, seed, num_perm"):
        lsh.insert("y", MinHash(num_perm=128, seed=2).update(["a", "b"]))
    assert "y" not in lsh and len(lsh) == 99
    with pytest.raises(ValueError, match="bottom-k"):
        MinHashLSH(scheme="bottomk")


class _DatasketchMinHash:
    """What a datasketch (2.0) MinHash offers: ``hashvalues`` (uint64), ``seed`` and ``scheme``."""
    __module__ = "datasketch.minhash"

    def __init__(self, tokens, num_perm=128, seed=1, scheme="legacy"):
        self.seed, self.scheme = seed, scheme
        self.hashvalues = ds.hashvalues(tokens, num_perm=num_perm, seed=seed, scheme=scheme).astype(np.uint64)


def test_datasketch_sketches_with_the_matching_scheme():
    docs = [d["text"].split()[:300] for d in DOCS[:60]]
    lsh = MinHashLSH(threshold=0.5, scheme="datasketch-legacy")
    lsh.insert_batch([f"d{i}" for i in range(60)], [_DatasketchMinHash([t.encode() for t in d]) for d in docs])
    q = _DatasketchMinHash([t.encode() for t in docs[7]])
    assert ("d7", 1.0) in lsh.query(q, with_scores=True)
    with pytest.raises(ValueError, match="datasketch-legacy"):
        MinHashLSH().insert("x", q)
    with pytest.raises(ValueError, match="datasketch-affine32"):        # datasketch 2.0's default scheme
        lsh.insert("x", _DatasketchMinHash([b"a"], scheme="affine32"))
    other = MinHashLSH(threshold=0.5, scheme="datasketch-affine32")
    other.insert("a", _DatasketchMinHash([b"a", b"b"], scheme="affine32"))
    assert other.query(_DatasketchMinHash([b"a", b"b"], scheme="affine32")) == ["a"]
    with pytest.raises(ValueError, match="scheme, seed, num_perm"):
        lsh.insert("x", _DatasketchMinHash([b"a"], seed=3))


def test_top_k_finds_the_nearest(signed):
    _, sigs = signed
    keys = [d["id"] for d in DOCS]
    lsh = MinHashLSH(num_perm=128, trees=8)
    lsh.insert_batch(keys, sigs.values)
    vals = sigs.values
    n = len(keys)
    recall = []
    for q in range(0, n, 11):
        est = jaccard_rows(vals, np.full(n, q), np.arange(n), "oph")
        got = lsh.top_k(sigs[q], k=10)
        assert 1 <= len(got) <= 10 and got == sorted(got, key=lambda g: -g[1]) and got[0][1] == 1.0
        assert all(abs(s - est[keys.index(k)]) < 1e-12 for k, s in got)
        # the near neighbours (estimate ≥ 0.3) among the true top 10 are what a prefix forest must find
        bound = max(np.sort(est)[::-1][9], 0.3)
        want = min(10, int((est >= bound).sum()))
        recall.append(sum(1 for _, s in got if s >= bound) / want)
    assert np.mean(recall) >= 0.9
    lsh.remove(keys[0])
    assert keys[0] not in [k for k, _ in lsh.top_k(sigs[0], k=5)]
    many = lsh.top_k(sigs[0], k=10_000)     # every row sharing a first slot of some tree, and no other
    assert 10 < len(many) < n and len({k for k, _ in many}) == len(many) and keys[0] not in dict(many)


def test_save_gives_the_disk_format_and_load_reads_it(signed, tmp_path):
    mh, sigs = signed
    keys = [d["id"] for d in DOCS]
    lsh = MinHashLSH(threshold=0.8)
    lsh.insert_batch(keys, sigs.values)
    lsh.remove(keys[1])
    lsh.remove(keys[2])
    lsh.insert(keys[2], sigs[2])                  # removed, then inserted again: saved once
    lsh.save(tmp_path / "idx")
    with DiskIndex.open(tmp_path / "idx", readonly=True) as disk:
        assert len(disk) == len(keys) - 1
        assert disk.query(DOCS[9]["text"])[0] == (keys[9], 1.0)       # by text, the recorded pipeline
    back = MinHashLSH.load(tmp_path / "idx")
    assert len(back) == len(keys) - 1 and keys[1] not in back
    for i in (0, 9, 200, 549):
        assert back.query(sigs[i], with_scores=True) == lsh.query(sigs[i], with_scores=True)


def test_top_k_exact_ranks_by_true_jaccard(signed):
    """With the documents' shingles kept, top_k ranks the forest's candidates by exact Jaccard: with
    every document a candidate it is brute force exactly (ties by the older key), and with the
    default candidates its recall@10 against brute force is at least that of the estimate ranking."""
    from neardup import Shingler
    from neardup.similarity import exact_jaccard_pairs

    _, sigs = signed
    texts = [d["text"] for d in DOCS]
    keys = [d["id"] for d in DOCS]
    feats = Shingler().features(texts).unique()
    n = len(keys)
    lsh = MinHashLSH(num_perm=128, trees=8)
    lsh.insert_batch(keys[:300], sigs.values[:300], features=feats.subset(np.arange(300)))
    lsh.insert_batch(keys[300:], sigs.values[300:], features=feats.subset(np.arange(300, n)))
    rec_exact, rec_est = [], []
    for q in range(0, n, 13):
        truth = exact_jaccard_pairs(feats, np.full(n, q), np.arange(n))
        qf = feats.subset([q])
        full = lsh.top_k(sigs[q], k=10, candidates=n, features=qf)
        pos = {k: i for i, k in enumerate(keys)}
        assert [s for _, s in full] == pytest.approx([truth[pos[k]] for k, _ in full])      # exact scores
        assert [(-s, pos[k]) for k, s in full] == sorted((-s, pos[k]) for k, s in full)   # best, then oldest
        near = [keys[i] for i in np.lexsort((np.arange(n), -truth))[:10] if truth[i] >= 0.6]
        assert set(near) <= set(dict(full))
        kth = np.sort(truth)[::-1][9]
        if kth <= 0:
            continue
        rec_exact.append(sum(truth[keys.index(k)] >= kth for k, _ in lsh.top_k(sigs[q], k=10, features=qf)) / 10)
        rec_est.append(sum(truth[keys.index(k)] >= kth for k, _ in lsh.top_k(sigs[q], k=10)) / 10)
    assert rec_exact and np.mean(rec_exact) >= np.mean(rec_est)
    # bad uses
    plain = MinHashLSH(num_perm=128)
    plain.insert_batch(keys[:20], sigs.values[:20])
    with pytest.raises(ValueError, match="no shingles kept"):
        plain.top_k(sigs[0], k=3, features=feats.subset([0]))
    with pytest.raises(ValueError, match="features of 2 documents for 3 sketches"):
        MinHashLSH(num_perm=128).insert_batch(["a", "b", "c"], sigs.values[:3], features=feats.subset([0, 1]))
    with pytest.raises(ValueError, match="one query document"):
        lsh.top_k(sigs[0], k=3, features=feats.subset([0, 1]))
    lsh.remove(keys[5])
    assert keys[5] not in dict(lsh.top_k(sigs[5], k=5, features=feats.subset([5])))


@pytest.mark.parametrize("trees", [64, 128])
def test_forest_packed_keys_give_the_same_answers(signed, trees):
    """With one or two slots per tree the forest searches packed 64-bit prefix keys: the same rows and
    estimates as the search through the permutations into the signature matrix."""
    from neardup.kernels.forest import build_keys, build_perms, forest_top_k

    _, sigs = signed
    sig = np.ascontiguousarray(sigs.values)
    m = sig.shape[1] // trees
    perms = build_perms(sig, trees, m)
    keys = build_keys(sig, perms, m)
    assert keys.shape == (trees, sig.shape[0])
    assert all(np.all(np.diff(keys[t].astype(np.float64)) >= 0) for t in range(trees))   # sorted
    live = np.ones(sig.shape[0], dtype=np.bool_)
    none = np.zeros((trees, 0), dtype=np.uint64)
    empty = np.uint32(np.iinfo(np.uint32).max)
    for q in range(0, sig.shape[0], 7):
        for want, k in ((40, 10), (5, 5), (sig.shape[0], 50)):
            a = forest_top_k(sig, perms, keys, live, m, sig[q], want, k, empty)
            b = forest_top_k(sig, perms, none, live, m, sig[q], want, k, empty)
            assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
