"""Pairs out: ``dedup --pairs`` (pairs.parquet beside clusters.jsonl), ``DuplicateResult.pairs()`` and
``neardup pairs`` (a similarity join without clusters)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hostile import cli, one_line_error, write_jsonl

from neardup import MinHasher, find_minhash_duplicates
from neardup.dedup.find import HOW, join_pairs
from neardup.features import Shingler
from neardup.kernels.clusters import components
from neardup.similarity import exact_jaccard_pairs

ROOT = Path(__file__).resolve().parents[1]


def _clusters(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]


def _groups(labels) -> set[frozenset]:
    by: dict = {}
    for i, g in enumerate(labels):
        by.setdefault(g, set()).add(i)
    return {frozenset(v) for v in by.values() if len(v) > 1}


@pytest.mark.parametrize("verify", ["minhash", "borderline", "exact"])
def test_dedup_pairs_imply_the_clusters_under_components_linkage(days, tmp_path, verify):
    out = tmp_path / "out"
    code, _, err = cli("dedup", days / "all.jsonl", "-o", out, "--pairs", "--linkage", "components",
                       "--verify", verify, "-q")
    assert code == 0, err
    recs = _clusters(out)
    t = pq.read_table(out / "pairs.parquet")
    assert t.column_names == ["id_a", "id_b", "row_a", "row_b", "similarity", "decided", "same_cluster"]
    n = len(recs)
    a = t["row_a"].to_numpy()
    b = t["row_b"].to_numpy()
    assert (a < b).all() and t.num_rows > 100
    assert list(zip(a, b)) == sorted(zip(a, b))
    # union–find over the pairs gives exactly the clusters of clusters.jsonl
    by_pairs = _groups(components(n, a.astype(np.int64), b.astype(np.int64)).tolist())
    rep_row = {r["id"]: r["row"] for r in recs}
    by_clusters = _groups([rep_row[r["cluster"]] for r in recs])
    assert by_pairs == by_clusters
    assert t["same_cluster"].to_numpy().all()
    ids = [r["id"] for r in recs]
    assert t["id_a"].to_pylist() == [str(ids[i]) for i in a]
    decided = set(t["decided"].to_pylist())
    sim = t["similarity"].to_numpy()
    assert (sim >= 0.8).all()
    ident = np.asarray(t["decided"].to_pylist()) == "identical"
    assert (sim[ident] == 1.0).all()
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert rep["pairs"] == {"output": "pairs.parquet", "pairs": t.num_rows}
    assert rep["counts"]["verified_pairs"] == t.num_rows
    if verify == "minhash":
        assert decided == {"identical", "estimate"}
    elif verify == "exact":
        assert decided == {"identical", "exact"}
    else:
        assert decided <= {"identical", "estimate", "exact"}
        assert int((np.asarray(t["decided"].to_pylist()) == "exact").sum()) <= rep["borderline"]["pairs"]


def test_dedup_pairs_bounded_linkage_marks_refused_merges(tmp_path):
    """A chain: each document replaces 5 more of 100 words, so neighbours have J = 95/105 and the
    ends J ≤ 85/115 < 0.8: bounded linkage with no drift cannot put the chain in one cluster."""
    words = [f"w{i}" for i in range(100)]
    texts = [" ".join([f"new{i}x{j}" for j in range(5 * i)] + words[5 * i:]) for i in range(6)]
    src = write_jsonl(tmp_path / "chain.jsonl", texts)
    out = tmp_path / "out"
    code, _, err = cli("dedup", src, "-o", out, "--pairs", "--max-drift", "0", "--ngram", "1",
                       "--num-perm", "512", "-q")
    assert code == 0, err
    recs = _clusters(out)
    cluster_of = [r["cluster"] for r in recs]
    t = pq.read_table(out / "pairs.parquet")
    same = [cluster_of[a] == cluster_of[b] for a, b in zip(t["row_a"].to_pylist(), t["row_b"].to_pylist())]
    assert t["same_cluster"].to_pylist() == same
    assert not all(same)          # the corpus has chains that a zero drift refuses to merge


def test_pairs_method_python_api_matches_dedup_result():
    texts = ["alpha beta gamma delta epsilon zeta eta theta iota kappa"] * 3 + [
        "alpha beta gamma delta epsilon zeta eta theta iota lambda", "something else entirely here now ok"]
    sigs = MinHasher(num_perm=128, ngram=1).sign_batch(texts)
    res = find_minhash_duplicates(sigs, 0.7, linkage="components")
    t = res.pairs()
    assert t.column_names == ["a", "b", "similarity", "decided", "same_cluster"]
    assert t["a"].to_pylist() == [0, 0, 0]
    assert t["b"].to_pylist() == [1, 2, 3]
    assert t["decided"].to_pylist() == ["identical", "identical", "estimate"]
    named = res.pairs(ids=["d0", "d1", "d2", "d3", "d4"])
    assert named["id_b"].to_pylist() == ["d1", "d2", "d3"]


def test_join_expands_identical_groups():
    """4 copies of A and 3 of A′ (A with one word changed): C(4,2) + C(3,2) identical pairs and the
    4 × 3 product of the A–A′ pair, each once, with A–A′'s similarity."""
    a = " ".join(f"w{i}" for i in range(60))
    a2 = a.replace("w30", "changed")
    texts = [a, "unrelated words here and there for this one", a2, a, a2, a, a2, a]
    sigs = MinHasher(num_perm=128, ngram=3).sign_batch(texts)
    res = find_minhash_duplicates(sigs, 0.8, linkage="components")
    pa, pb, sim, how = join_pairs(res, len(texts))
    copies_a, copies_a2 = [0, 3, 5, 7], [2, 4, 6]
    want = {(x, y) for g in (copies_a, copies_a2) for x in g for y in g if x < y}
    cross = {(min(x, y), max(x, y)) for x in copies_a for y in copies_a2}
    assert set(zip(pa.tolist(), pb.tolist())) == want | cross
    assert pa.shape[0] == 6 + 3 + 12
    ident = {(x, y) for x, y, h in zip(pa.tolist(), pb.tolist(), how.tolist()) if HOW[h] == "identical"}
    assert ident == want
    s = {(x, y): v for x, y, v in zip(pa.tolist(), pb.tolist(), sim.tolist())}
    assert len({s[p] for p in cross}) == 1 and 0.8 <= s[(0, 2)] < 1.0


def _exact_all_pairs(texts, ngram=5):
    feats = Shingler(ngram=ngram).features(texts)
    n = len(texts)
    ii, jj = np.triu_indices(n, 1)
    return ii, jj, exact_jaccard_pairs(feats, ii.astype(np.int64), jj.astype(np.int64))


def test_pairs_command_is_the_join_verified_exactly(days, tmp_path):
    """With --verify exact every listed pair has exact Jaccard ≥ t (precision 1: identical
    signatures are identical sets), and the pairs LSH misses are few: each pair at J ≥ t is a
    candidate with probability ≥ 0.99 (the bands' design recall), so with N such pairs the misses
    stay below 0.01 N + 4 sqrt(0.01 N) + 1 (a four-sigma binomial bound)."""
    out = tmp_path / "j"
    code, _, err = cli("pairs", days / "all.jsonl", "-o", out, "--verify", "exact", "-q")
    assert code == 0, err
    t = pq.read_table(out / "pairs.parquet")
    assert t.column_names == ["id_a", "id_b", "row_a", "row_b", "similarity", "decided"]
    got = set(zip(t["row_a"].to_pylist(), t["row_b"].to_pylist()))
    texts = [json.loads(x)["text"] for x in (days / "all.jsonl").read_text(encoding="utf-8").splitlines()]
    ii, jj, ex = _exact_all_pairs(texts)
    true = {(int(i), int(j)) for i, j, e in zip(ii, jj, ex) if e >= 0.8}
    assert got <= true
    n = len(true)
    assert len(true - got) <= 0.01 * n + 4 * math.sqrt(0.01 * n) + 1
    exact = {(int(i), int(j)): float(e) for i, j, e in zip(ii, jj, ex) if e >= 0.8}
    for x, y, s, d in zip(t["row_a"].to_pylist(), t["row_b"].to_pylist(), t["similarity"].to_pylist(),
                          t["decided"].to_pylist()):
        if d == "exact":
            assert s == pytest.approx(exact[(x, y)])
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    c = rep["counts"]
    assert c["pairs"] == t.num_rows and c["accounted"] and c["input_rows"] == len(texts)
    assert sum(c["pairs_by_decision"].values()) == t.num_rows
    # the join holds at least every pair dedup --pairs lists (dedup links copies to the first one only)
    d = tmp_path / "d"
    assert cli("dedup", days / "all.jsonl", "-o", d, "--pairs", "--verify", "exact", "-q")[0] == 0
    dp = pq.read_table(d / "pairs.parquet")
    assert set(zip(dp["row_a"].to_pylist(), dp["row_b"].to_pylist())) <= got


def test_pairs_command_simhash_and_exact_methods(days, tmp_path):
    for method, extra in (("simhash", ()), ("simhash", ("--bits", "3")), ("exact", ())):
        out = tmp_path / (method + "".join(extra))
        code, _, err = cli("pairs", days / "all.jsonl", "-o", out, "--method", method, "-q", *extra)
        assert code == 0, err
        t = pq.read_table(out / "pairs.parquet")
        assert t.num_rows > 0
        if method == "simhash" and extra:      # classic: within 3 bits of 64
            assert (t["similarity"].to_numpy() >= 1 - 3 / 64).all()
        elif method == "simhash":              # verified: every pair's word-set Jaccard ≥ the threshold 0.8
            assert (t["similarity"].to_numpy() >= 0.8).all()
        else:
            assert set(t["decided"].to_pylist()) == {"identical"}


def test_pairs_skipped_rows_and_empty_documents_are_accounted(tmp_path):
    base = " ".join(f"tok{i}" for i in range(40))
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([json.dumps({"text": base}), "{not json", json.dumps({"text": ""}),
                              json.dumps({"text": base}), json.dumps({"text": ""})]) + "\n", encoding="utf-8")
    code, _, err = cli("pairs", src, "-o", tmp_path / "o")
    assert code != 0 and "in.jsonl:2: malformed JSON" in one_line_error(err)
    code, _, err = cli("pairs", src, "-o", tmp_path / "o", "--on-error", "skip", "-q")
    assert code == 0, err
    t = pq.read_table(tmp_path / "o" / "pairs.parquet")
    assert list(zip(t["row_a"].to_pylist(), t["row_b"].to_pylist())) == [(0, 3)]   # empty documents never pair
    c = json.loads((tmp_path / "o" / "report.json").read_text(encoding="utf-8"))["counts"]
    assert (c["input_rows"], c["documents"], c["skipped_records"], c["empty_documents"]) == (5, 4, 1, 2)
    assert c["accounted"]


def test_pairs_max_pairs_refused_before_writing(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", ["same text for every row of this file ok"] * 30)
    out = tmp_path / "o"
    code, _, err = cli("pairs", src, "-o", out, "--max-pairs", "100")
    msg = one_line_error(err)
    assert code == 1 and "435 pairs" in msg and "30 members" in msg
    assert not out.exists()
    code, _, err = cli("pairs", src, "-o", out, "--max-pairs", "435", "-q")
    assert code == 0 and pq.read_table(out / "pairs.parquet").num_rows == 435


def test_pairs_hostile_options_and_folders(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    code, _, err = cli("pairs", src, "-o", foreign)
    assert code == 1 and "notes.txt" in one_line_error(err)
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "keep me"
    code, _, err = cli("pairs", src, "-o", src)
    assert code == 1
    code, _, err = cli("pairs", src, "-o", "-")
    assert code == 1 and "output folder" in one_line_error(err)
    code, _, err = cli("pairs", src, "-o", tmp_path / "x", "--method", "lines")
    assert code == 1 and "join of documents" in one_line_error(err)
    code, _, err = cli("pairs", src, "-o", tmp_path / "x", "--keep", "longest")
    assert code == 2 and "--keep" in err
    code, _, err = cli("pairs", src, "-o", tmp_path / "x", "--bits", "5")
    assert code == 2 and "bits" in err
    # a rerun into its own output folder replaces it
    assert cli("pairs", src, "-o", tmp_path / "ok", "-q")[0] == 0
    assert cli("pairs", src, "-o", tmp_path / "ok", "-q", "--threshold", "0.5")[0] == 0
    rep = json.loads((tmp_path / "ok" / "report.json").read_text(encoding="utf-8"))
    assert rep["parameters"]["threshold"] == 0.5


def test_run_pairs_takes_a_resolved_configuration_and_refuses_what_it_ignores(tmp_path):
    """run_pairs given a resolved configuration (verified SimHash fills max_drift 0.05, not the classic
    2/64) joins; an option the join does not use, set by the caller, is one ConfigError naming it."""
    from neardup import DedupConfig, run_pairs
    from neardup.errors import ConfigError

    src = write_jsonl(tmp_path / "in.jsonl")
    for i, cfg in enumerate((DedupConfig(method="simhash"), DedupConfig(), DedupConfig(method="simhash", bits=3))):
        rep = run_pairs([str(src)], str(tmp_path / f"o{i}"), DedupConfig(**{**cfg.__dict__, "quiet": True}).resolved())
        assert rep["counts"]["pairs"] >= 1, rep["counts"]
    for kw in ({"max_drift": 0.1}, {"method": "simhash", "max_drift": 0.1}, {"keep": "longest"}):
        with pytest.raises(ConfigError, match=f"not used by neardup pairs: {next(k for k in kw if k != 'method')}"):
            run_pairs([str(src)], str(tmp_path / "x"), DedupConfig(**kw))


def test_dedup_pairs_refusals(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    code, _, err = cli("dedup", src, "-o", "-", "--pairs")
    assert code == 1 and "pairs" in one_line_error(err)
    code, _, err = cli("dedup", src, "-o", tmp_path / "o", "--method", "lines", "--pairs")
    assert code == 2 and "--pairs" in err


def test_dedup_pairs_mixed_type_ids_are_told_apart_by_row(tmp_path):
    text = " ".join(f"word{i}" for i in range(30))
    src = write_jsonl(tmp_path / "in.jsonl", [text, text, "other words entirely apart from those"], ids=[1, "1", 2])
    out = tmp_path / "o"
    code, _, err = cli("dedup", src, "-o", out, "--id-field", "id", "--pairs", "-q")
    assert code == 0, err
    t = pq.read_table(out / "pairs.parquet")
    assert t.to_pylist() == [{"id_a": "1", "id_b": "1", "row_a": 0, "row_b": 1, "similarity": 1.0,
                              "decided": "identical", "same_cluster": True}]


def test_dedup_pairs_with_index_marks_indexed_documents(days, tmp_path):
    idx = tmp_path / "idx"
    assert cli("dedup", days / "day1.jsonl", "-o", tmp_path / "d1", "--id-field", "id", "--index", idx, "-q")[0] == 0
    out = tmp_path / "d2"
    code, _, err = cli("dedup", days / "day2.jsonl", "-o", out, "--id-field", "id", "--index", idx, "--pairs", "-q")
    assert code == 0, err
    t = pq.read_table(out / "pairs.parquet")
    recs = _clusters(out)
    indexed = [r for r in recs if r.get("indexed")]
    assert indexed, "day 2 repeats documents of day 1"
    nulls = t.filter(t["row_b"].is_null())    # b: a document of the index (it has no input row)
    assert {str(r["cluster"]) for r in indexed} <= set(nulls["id_b"].to_pylist())
    assert nulls["row_a"].null_count == 0
    # how each pair was decided survives the index's remapping: 'identical' only for equal signatures
    rows = t.to_pylist()
    assert {r["decided"] for r in rows} - {"identical"}, "day 2 has near (not only identical) copies"
    assert all(r["similarity"] == 1.0 for r in rows if r["decided"] == "identical")
