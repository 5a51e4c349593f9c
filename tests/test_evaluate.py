"""Evaluation metrics (neardup.evaluate) and the ``eval`` command (neardup.cli.evaluate)."""
import json
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import Shingler, exact_jaccard_pairs
from neardup import evaluate as ev
from neardup.cli.evaluate import eval_cmd


# -- pairs --------------------------------------------------------------------------------------
def test_pair_scores_hand_computed():
    pred = {(1, 2), (2, 3), (4, 5), (5, 4), (6, 6)}  # (5, 4) repeats (4, 5); (6, 6) is no pair
    truth = [(3, 2), (5, 4), (7, 8), (8, 9)]
    s = ev.pair_scores(pred, truth)
    # TP = {2,3}, {4,5}; FP = {1,2}; FN = {7,8}, {8,9}
    assert (s.tp, s.fp, s.fn) == (2, 1, 2)
    assert s.precision == pytest.approx(2 / 3)
    assert s.recall == pytest.approx(2 / 4)
    assert s.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    # same answer from column arrays and from an (m, 2) array, with huge ids
    big = np.array([10**15, 3, 10**15 + 1], dtype=np.int64)
    s2 = ev.pair_scores((big[:2], big[1:]), np.array([[3, 10**15]]))
    assert (s2.tp, s2.fp, s2.fn) == (1, 1, 0)


def test_score_conventions_for_empty_sets():
    assert ev.pair_scores([], []).to_dict() == {"tp": 0, "fp": 0, "fn": 0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    s = ev.pair_scores([], [(0, 1)])
    assert (s.precision, s.recall, s.f1) == (1.0, 0.0, 0.0)
    s = ev.pair_scores([(0, 1)], [])
    assert (s.precision, s.recall, s.f1) == (0.0, 1.0, 0.0)
    with pytest.raises(TypeError):
        ev.pair_scores([("a", "b")], [])


def test_decision_scores():
    s = ev.decision_scores([1, 1, 0, 0, 1], [1, 0, 1, 0, 1])
    assert (s.tp, s.fp, s.fn) == (2, 1, 1)
    assert s.f1 == pytest.approx(2 / 3)


# -- clusters -----------------------------------------------------------------------------------
def _brute_pairs(labels):
    n = len(labels)
    return {(i, j) for i in range(n) for j in range(i + 1, n) if labels[i] == labels[j]}


def _brute_ari(a, b):
    """Rand index adjusted for chance from pair counts (Fraction arithmetic)."""
    n = len(a)
    pa, pb = _brute_pairs(a), _brute_pairs(b)
    total = n * (n - 1) // 2
    idx, sa, sb = len(pa & pb), len(pa), len(pb)
    expected = Fraction(sa * sb, total)
    den = Fraction(sa + sb, 2) - expected
    return 1.0 if den == 0 else float((idx - expected) / den)


def test_cluster_pair_counts_equal_brute_force_on_random_labelings():
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(1, 60))
        a = rng.integers(0, int(rng.integers(1, 12)), n)
        b = rng.integers(0, int(rng.integers(1, 12)), n)
        if trial % 3 == 0:
            b = np.array([f"c{x}" for x in b])  # labels of any sortable type
        pa, pb = _brute_pairs(list(a)), _brute_pairs(list(b))
        assert ev.cluster_pair_counts(a, b) == (len(pa), len(pb), len(pa & pb))
        s = ev.cluster_pair_scores(a, b)
        ref = ev.pair_scores(sorted(pa), sorted(pb))
        assert s == ref
        assert ev.adjusted_rand_index(a, b) == pytest.approx(_brute_ari(list(a), list(b)), abs=1e-12)
        # mixed forms agree with the pure ones
        assert ev.clusters_vs_pairs_scores(a, sorted(pb)) == ref
        assert ev.pairs_vs_clusters_scores(sorted(pa), b) == ref


def test_big_cluster_is_counted_not_materialised():
    n = 3_000_000  # one cluster: 4.5e12 pairs
    ones = np.zeros(n, dtype=np.int64)
    split = np.arange(n) % 2
    assert ev.cluster_pair_counts(ones, split) == (n * (n - 1) // 2, 2 * (n // 2) * (n // 2 - 1) // 2,
                                                   2 * (n // 2) * (n // 2 - 1) // 2)


def test_ari_known_values():
    a = [0, 0, 1, 1, 2, 2]
    assert ev.adjusted_rand_index(a, a) == 1.0
    assert ev.adjusted_rand_index(a, [5, 5, 3, 3, 9, 9]) == 1.0  # renaming clusters changes nothing
    # scikit-learn's documented example: 4/7. Hand computation: pred pairs A = 2 ({0,1},{2,3}),
    # true pairs B = 1 ({0,1}), index = 1, N = C(4,2) = 6 → 2(6·1 − 2)/(6·3 − 2·2) = 8/14.
    assert ev.adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(4 / 7)
    # one cluster against all singletons: the index is 0 and so is its expectation
    assert ev.adjusted_rand_index([0, 0, 0, 0], [0, 1, 2, 3]) == 0.0
    # trivial identical partitions (denominator 0): 1 by convention
    assert ev.adjusted_rand_index([1, 2, 3], [4, 5, 6]) == 1.0
    assert ev.adjusted_rand_index([7, 7, 7], [1, 1, 1]) == 1.0
    # Contingency table worked by hand (rows: pred, columns: true):
    #     [[1, 1, 0],    a = (2, 3, 3), b = (3, 3, 2), n = 8
    #      [0, 2, 1],    index = C(2,2) + C(2,2) = 2, A = 1+3+3 = 7, B = 3+3+1 = 7, N = 28
    #      [2, 0, 1]]    ARI = 2(28·2 − 49)/(28·14 − 2·49) = 14/294 = 1/21
    pred = [0, 0, 1, 1, 1, 2, 2, 2]
    true = [0, 1, 1, 1, 2, 0, 0, 2]
    assert ev.adjusted_rand_index(pred, true) == pytest.approx(1 / 21)
    with pytest.raises(ValueError):
        ev.adjusted_rand_index([0, 1], [0])


def test_labels_from_pairs():
    lab = ev.labels_from_pairs(6, [(4, 1), (1, 2), (5, 5)])
    assert lab.tolist() == [0, 1, 1, 3, 1, 5]


# -- exact-Jaccard ground truth -----------------------------------------------------------------
def _random_docs(n, seed):
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(30)] + ["the"] * 10  # a very frequent word
    base = [" ".join(rng.choice(vocab, int(rng.integers(0, 25)))) for _ in range(n // 3)]
    docs = []
    for _ in range(n):
        words = base[int(rng.integers(0, len(base)))].split()
        for _ in range(int(rng.integers(0, 4))):
            if words:
                words[int(rng.integers(0, len(words)))] = vocab[int(rng.integers(0, len(vocab)))]
        docs.append(" ".join(words))
    docs[:6] = ["the the the", "the", "the the", "", "", "w1 w2 w3 w4 w5 w6"]  # frequent-only and empty docs
    return docs


@pytest.mark.parametrize("ngram", [1, 3])
def test_exact_jaccard_truth_equals_brute_force(ngram):
    docs = _random_docs(300, seed=ngram)
    f = Shingler(ngram=ngram).features(docs)
    ii, jj = np.triu_indices(len(docs), 1)
    sim = exact_jaccard_pairs(f, ii, jj)
    for t in (0.05, 0.3, 0.5, 0.8, 1.0):
        # a small chunk forces many chunks and pairs seen again across chunks
        lo, hi, s = ev.exact_jaccard_truth(f, t, chunk_pairs=257)
        hit = sim >= t
        assert np.array_equal(lo, ii[hit]) and np.array_equal(hi, jj[hit]), (ngram, t)
        assert np.array_equal(s, sim[hit])


def test_exact_jaccard_truth_edges():
    f = Shingler(ngram=1).features(["a b", "a b", "", "", "c"])
    lo, hi, s = ev.exact_jaccard_truth(f, 1.0)
    assert (lo.tolist(), hi.tolist(), s.tolist()) == ([0], [1], [1.0])  # empty docs never pair
    with pytest.raises(ValueError):
        ev.exact_jaccard_truth(f, 0.0)


def test_threshold_sweep_and_best():
    scores = np.array([0.9, 0.8, 0.8, 0.4, 0.1])
    y = np.array([1, 1, 0, 1, 0], dtype=bool)
    th, p, r, f1 = ev.threshold_sweep(scores, y)
    assert th.tolist() == [0.9, 0.8, 0.4, 0.1]
    assert p.tolist() == pytest.approx([1.0, 2 / 3, 3 / 4, 3 / 5])
    assert r.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0, 1.0])
    best, s = ev.best_threshold(scores, y)
    assert best == 0.4 and (s.tp, s.fp, s.fn) == (3, 1, 0)
    # distances: smaller is more similar
    best, s = ev.best_threshold(np.array([0, 2, 9, 30]), np.array([1, 1, 0, 0], bool), higher_is_similar=False)
    assert best == 2 and s.f1 == 1.0


# -- the eval command ---------------------------------------------------------------------------
PRED = [{"id": "d0", "cluster": "d0", "kept": True, "similarity": 1.0},
        {"id": "d1", "cluster": "d0", "kept": False, "similarity": 0.9},
        {"id": "d2", "cluster": "d0", "kept": False, "similarity": 0.8},
        {"id": "d3", "cluster": "d3", "kept": True, "similarity": 1.0},
        {"id": "d4", "cluster": "d4", "kept": True, "similarity": 1.0}]


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _run(*args):
    res = CliRunner().invoke(eval_cmd, [str(a) for a in args], catch_exceptions=False)
    return res


def test_eval_clusters_against_clusters(tmp_path):
    pred = _write_jsonl(tmp_path / "pred.jsonl", PRED)
    truth = _write_jsonl(tmp_path / "truth.jsonl", [{"id": i, "cluster": c} for i, c in
                                                    [("d0", 1), ("d1", 1), ("d2", 2), ("d3", 3), ("d4", 3)]])
    res = _run(pred, "--labels", truth, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # predicted pairs {01, 02, 12}, true pairs {01, 34}
    assert (out["tp"], out["fp"], out["fn"]) == (1, 2, 1)
    assert out["ari"] == pytest.approx(8 / 38)  # index 1, A 3, B 2, N 10
    res = _run(pred, "--labels", truth)
    assert "precision 0.3333" in res.output and "ARI 0.2105" in res.output


def test_eval_pairs_formats_and_scopes(tmp_path):
    pred = _write_jsonl(tmp_path / "pred.jsonl", PRED)
    csv_labels = tmp_path / "labels.csv"
    csv_labels.write_text("a,b,label\nd0,d1,1\nd4,d3,1\nd1,d2,0\nd0,d4,\n", encoding="utf-8")
    out = json.loads(_run(pred, "--labels", csv_labels, "--json").output)
    # a label-0 pair makes the scope 'judged': d0~d1 TP, d3~d4 FN, d1~d2 FP; d0,d4 unjudged
    assert out["scope"] == "judged" and out["judged_pairs"] == 3 and out["unjudged_pairs"] == 1
    assert (out["tp"], out["fp"], out["fn"]) == (1, 1, 1)
    out = json.loads(_run(pred, "--labels", csv_labels, "--scope", "all", "--json").output)
    assert (out["tp"], out["fp"], out["fn"]) == (1, 2, 1) and out["ari"] is None
    # predicted pairs (JSONL, integer ids) against CSV pairs without header
    pred_pairs = _write_jsonl(tmp_path / "pp.jsonl", [{"a": 1, "b": 2}, {"a": 3, "b": 4, "label": 0},
                                                     {"a": 5, "b": 6, "label": 1}])
    plain = tmp_path / "plain.csv"
    plain.write_text("2,1\n6,7\n", encoding="utf-8")
    out = json.loads(_run(pred_pairs, "--labels", plain, "--json").output)
    assert out["scope"] == "all" and out["format"] == "pairs"
    assert (out["tp"], out["fp"], out["fn"]) == (1, 1, 1)


def test_eval_exact_jaccard(tmp_path):
    pred = _write_jsonl(tmp_path / "pred.jsonl", PRED)
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "d0", "text": "the quick brown fox jumps over the lazy dog"},
        {"id": "d1", "text": "the quick brown fox jumps over the lazy dog"},
        {"id": "d2", "text": "the quick brown fox jumps over a lazy cat"},  # J(d0, d2) = 7/10 on words
        {"id": "d3", "text": "something else entirely"},
        {"id": "d4", "text": "nothing alike"}])
    out = json.loads(_run(pred, "--exact-jaccard", 0.6, "--corpus", corpus, "--ngram", 1, "--json").output)
    assert (out["tp"], out["fp"], out["fn"]) == (3, 0, 0) and out["ari"] == 1.0
    out = json.loads(_run(pred, "--exact-jaccard", 0.8, "--corpus", corpus, "--ngram", 1, "--json").output)
    assert (out["tp"], out["fp"], out["fn"]) == (1, 2, 0)
    # predicted pairs, one naming a document the corpus lacks (ignored, with a warning)
    pairs = _write_jsonl(tmp_path / "pairs.jsonl", [{"a": "d2", "b": "d0"}, {"a": "d3", "b": "d4"},
                                                   {"a": "d0", "b": "zz"}])
    out = json.loads(_run(pairs, "--exact-jaccard", 0.6, "--corpus", corpus, "--ngram", 1, "--json").output)
    assert (out["tp"], out["fp"], out["fn"]) == (1, 1, 2) and out["ari"] is None
    assert out["warnings"] == ["1 predicted ids are not in the corpus; they are ignored"]
    # CSV clusters with a header as labels
    csv_clusters = tmp_path / "truth.csv"
    csv_clusters.write_text("id,cluster\nd0,x\nd1,x\nd2,x\nd3,y\nd4,z\n", encoding="utf-8")
    out = json.loads(_run(pred, "--labels", csv_clusters, "--json").output)
    assert out["f1"] == 1.0 and out["ari"] == 1.0


def test_eval_usage_errors(tmp_path):
    pred = _write_jsonl(tmp_path / "pred.jsonl", PRED)
    assert _run(pred).exit_code == 2
    assert _run(pred, "--exact-jaccard", 0.5).exit_code == 2
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"x": 1}])
    res = _run(pred, "--labels", bad)
    assert res.exit_code == 1 and "bad.jsonl:1" in res.output
    dup = _write_jsonl(tmp_path / "dup.jsonl", PRED + PRED[:1])
    res = _run(dup, "--labels", bad)
    assert res.exit_code == 1
