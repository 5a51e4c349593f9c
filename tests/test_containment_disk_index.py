"""Containment against the persistent index (``ContainmentDiskIndex``, ``dedup --metric containment
--index``): the probe in both directions gives exactly the batch engine's candidates, the disk index
answers as the in-memory ``ContainmentIndex`` through the log, flushes, merges, removals and reopening,
and day 1 then day 2 keeps what one run keeps."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import run_dedup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.index.containment import (
    GRID,
    ContainmentIndex,
    _layouts,
    _Table,
    class_table,
    containment_candidates,
)
from neardup.index.disk import ContainmentDiskIndex, DiskIndex, IndexConfigError, open_index
from neardup.kernels.containment import probe
from neardup.similarity.estimates import minhash_similarity
from neardup.sketches.minhash import MinHasher, jaccard_rows

VOCAB = [f"w{i:05d}" for i in range(20000)]


def _host(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(n)]


def _corpus(seed: int, hosts: int, passages: int, sources: bool = False):
    """Hosts of 200–1,500 random words (no two share a passage by chance) and passages of 40–300 words
    cut from them: C(passage ⊆ host) = 1, Jaccard as low as 0.03 (``sources``: also each passage's host)."""
    rng = random.Random(seed)
    hs = [_host(rng, rng.randint(200, 1500)) for _ in range(hosts)]
    ps, src = [], []
    for _ in range(passages):
        src.append(rng.randrange(hosts))
        w = hs[src[-1]]
        n = min(rng.randint(40, 300), len(w))
        s = rng.randrange(len(w) - n + 1)
        ps.append(w[s:s + n])
    out = [" ".join(h) for h in hs], [" ".join(p) for p in ps]
    return (*out, src) if sources else out


def _signed(texts):
    h = MinHasher(num_perm=128, scheme="oph", seed=1)
    f = h.shingler.features(texts).unique()
    return h.sign_features(f).values, f.sizes()


def test_probe_both_directions_gives_the_batch_engines_cross_pairs():
    hosts, passages = _corpus(1, 60, 120)
    sig, sizes = _signed(passages + hosts)
    na = len(passages)
    t = 0.8
    layouts = _layouts(t, 128, "recall", 0.99, GRID)
    tab = class_table(t, 128, layouts, "recall", 0.99, GRID)
    # the batch engine over the union, pairs between the two collections (either direction)
    ci, cj = containment_candidates(sig, sizes, t)
    cross = (ci < na) != (cj < na)
    want = {(min(a, b), max(a, b) - na) for a, b in zip(ci[cross].tolist(), cj[cross].tolist())}
    # the table holds the hosts; the passages probe it forward and in reverse
    table = _Table(0, len(hosts), sig[na:], sizes[na:], layouts, 128)
    lay_r = np.asarray(layouts, np.int64)
    lay_start = np.concatenate([[0], np.cumsum(128 // lay_r)]).astype(np.int64)
    from neardup.index.containment import _layout_keys

    qkeys = _layout_keys(np.ascontiguousarray(sig[:na]), layouts, 128)
    got = set()
    for reverse in (False, True):
        seen = np.zeros(len(hosts), np.bool_)
        qi, row = probe(qkeys, sizes[:na], np.full(na, -1, np.int64), table.keys, table.rows, sizes[na:],
                        np.ones(len(hosts), np.bool_), lay_r, lay_start, tab[1], tab[2], tab[0], float(GRID), t,
                        int(sizes[na:].max()), seen, reverse)
        assert not seen.any()
        got |= set(zip(qi.tolist(), row.tolist()))
    assert got == want
    assert len(want) >= len(passages)          # every passage meets its host, and more


def test_disk_index_answers_as_the_memory_index(tmp_path):
    hosts, passages = _corpus(2, 200, 150)
    keys = [f"h{i}" for i in range(len(hosts))]
    mem = ContainmentIndex(threshold=0.8, keep_shingles=False)
    mem.add(keys, hosts)
    want = [sorted(k for k, _ in r) for r in mem.query_batch(passages, verify="minhash", with_scores=True)]
    assert sum(1 for r in want if r) >= len(passages) // 2     # (accepted by the estimate: noisy for short passages)
    path = tmp_path / "idx"
    with ContainmentDiskIndex.create(path, threshold=0.8) as idx:
        idx.add_batch(keys[:120], hosts[:120], bulk=True)                   # a segment
        for lo in range(120, 200, 20):
            idx.add_batch(keys[lo:lo + 20], hosts[lo:lo + 20], bulk=False)  # the log
        got = [sorted(k for k, _ in r) for r in idx.query_batch(passages, direction="in")]
        assert got == want
        idx.flush()
        assert [sorted(k for k, _ in r) for r in idx.query_batch(passages, direction="in")] == want
        idx.add_batch(["x"], [hosts[0]], bulk=True)                         # a second segment, then merged
        idx.compact()
        idx.remove("x")
        assert [sorted(k for k, _ in r) for r in idx.query_batch(passages, direction="in")] == want
        victim = next(k for r in want for k in r)
        idx.remove(victim)
        after = idx.query_batch(passages, direction="in")
        assert all(victim not in [k for k, _ in r] for r in after)
        idx.add_batch([victim], [hosts[keys.index(victim)]])
    with open_index(path, readonly=True) as ro:
        assert isinstance(ro, ContainmentDiskIndex)
        assert [sorted(k for k, _ in r) for r in ro.query_batch(passages, direction="in")] == want


def test_either_direction_is_the_batch_rule(tmp_path):
    """An index of passages queried with the hosts: exactly the batch engine's verified cross pairs
    (candidates by the size-ratio banding, accepted by max(Ĉ(a ⊆ b), Ĉ(b ⊆ a)) ≥ t)."""
    hosts, passages = _corpus(3, 80, 160)
    with ContainmentDiskIndex.create(tmp_path / "idx", threshold=0.8) as idx:
        idx.add_batch([f"p{i}" for i in range(len(passages))], passages)
        got = {(d, int(k[1:])) for d, r in enumerate(idx.query_batch(hosts)) for k, _ in r}
    sig, sizes = _signed(passages + hosts)
    na = len(passages)
    ci, cj = containment_candidates(sig, sizes, 0.8)
    cross = (ci < na) != (cj < na)
    ci, cj = ci[cross], cj[cross]
    sim = minhash_similarity(jaccard_rows(sig, ci, cj, "oph"), sizes[ci], sizes[cj], "containment")
    ok = sim >= 0.8
    want = {(max(a, b) - na, min(a, b)) for a, b in zip(ci[ok].tolist(), cj[ok].tolist())}
    assert got == want and len(want) >= len(passages) // 2


def test_check_and_add_finds_a_passage_of_an_added_document(tmp_path):
    hosts, _ = _corpus(4, 4, 0)
    words = hosts[0].split()
    with ContainmentDiskIndex.create(tmp_path / "idx", threshold=0.8) as idx:
        res = idx.check_and_add(["a", "b"], [hosts[0], hosts[1]])
        assert [r["added"] for r in res] == [True, True]
        res = idx.check_and_add(["c", "d"], [" ".join(words[10:110]), hosts[2]])
        assert res[0]["duplicate"] and res[0]["matches"][0][0] == "a" and not res[0]["added"]
        assert res[1]["added"]
        res = idx.check_and_add(["e", "f"], [hosts[2] + " " + hosts[1], " ".join(words[50:90])])
        assert not res[0]["duplicate"] and res[0]["added"]   # holds indexed documents: new, never a copy of them
        assert res[1]["duplicate"] and res[1]["matches"][0][0] == "a"
        res = idx.check_and_add(["g"], [" ".join(words[:150]) + " " + hosts[3]])   # a's start, then new text
        assert res[0]["added"] and not res[0]["duplicate"]


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _kept(out: Path) -> set:
    return {r["id"] for r in map(json.loads, (out / "clusters.jsonl").read_text().splitlines()) if r["kept"]}


@pytest.mark.parametrize("linkage", ["components", "bounded"])
def test_day1_then_day2_keeps_what_one_run_keeps(tmp_path, linkage):
    """What one run over both days keeps, but for the day-1 passages whose host comes on day 2: an
    indexed document is never removed afterwards, so those stay (and nothing else differs)."""
    hosts, passages, src = _corpus(5, 120, 160, sources=True)
    day1 = [{"id": f"h{i}", "text": t} for i, t in enumerate(hosts[:80])] + \
           [{"id": f"p{i}", "text": t} for i, t in enumerate(passages[:60])]
    day2 = [{"id": f"h{i}", "text": t} for i, t in enumerate(hosts) if i >= 80] + \
           [{"id": f"p{i}", "text": t} for i, t in enumerate(passages) if i >= 60]
    d1, d2 = _write(tmp_path / "day1.jsonl", day1), _write(tmp_path / "day2.jsonl", day2)
    both = _write(tmp_path / "all.jsonl", day1 + day2)
    cfg = {"metric": "containment", "id_field": "id", "verify": "minhash", "linkage": linkage, "html": False,
           "quiet": True, "workers": 1}
    run_dedup([str(both)], str(tmp_path / "all"), DedupConfig(**cfg))
    idx = tmp_path / "idx"
    run_dedup([str(d1)], str(tmp_path / "o1"), DedupConfig(index=str(idx), **cfg))
    rep = run_dedup([str(d2)], str(tmp_path / "o2"), DedupConfig(index=str(idx), **cfg))
    kept = _kept(tmp_path / "o1") | _kept(tmp_path / "o2")
    early = {f"p{i}" for i in range(60) if src[i] >= 80}      # on day 1, before their hosts
    assert early and kept == _kept(tmp_path / "all") | early
    assert rep["index"]["removed_by_index"] > 20      # day 2's passages of day 1's hosts
    removed_passages = {f"p{i}" for i in range(len(passages))} - kept
    assert len(removed_passages) >= len(passages) // 2
    with open_index(idx, readonly=True) as ix:
        assert len(ix) == len(kept)


def test_hostile_use(tmp_path):
    hosts, _ = _corpus(6, 4, 0)
    rows = _write(tmp_path / "in.jsonl", [{"id": f"h{i}", "text": t} for i, t in enumerate(hosts)])
    idx = tmp_path / "idx"
    run_dedup([str(rows)], str(tmp_path / "o"), DedupConfig(metric="containment", id_field="id", quiet=True,
                                                                html=False, workers=1, index=str(idx)))
    with pytest.raises(IndexConfigError, match="ContainmentDiskIndex"):
        DiskIndex.open(idx)
    with pytest.raises(IndexConfigError, match="containment index"):       # a Jaccard run against it
        run_dedup([str(rows)], str(tmp_path / "o2"), DedupConfig(id_field="id", quiet=True, html=False, workers=1,
                                                                 index=str(idx)))
    with pytest.raises(IndexConfigError, match="threshold"):
        run_dedup([str(rows)], str(tmp_path / "o3"), DedupConfig(metric="containment", threshold=0.7, id_field="id",
                                                                 quiet=True, html=False, workers=1, index=str(idx)))
    with ContainmentDiskIndex.open(idx) as ix:
        with pytest.raises(TypeError, match="set size"):
            ix.add_signatures(["z"], np.zeros((1, 128), np.uint32))
        with pytest.raises(ValueError, match="direction"):
            ix.query("some text", direction="out")
        sig, sizes = _signed([hosts[0]])
        with pytest.raises(ValueError, match="size 0"):
            ix.add_signatures(["z"], sig, [0])
        assert ix.query_signatures(sig, sizes=sizes)[0][0][0] == "h0"
    with pytest.raises(IndexConfigError, match="bottom-k"):
        ContainmentDiskIndex.create(tmp_path / "bk", scheme="bottomk")
    pytest.importorskip("pyspark")
    from neardup.engines.spark.session import _check_supported

    # Spark probes a containment index too, and verified SimHash's where the run finishes on the driver
    # (tests/test_spark_engine.py, day 1 then day 2; on the executors that one is refused there)
    _check_supported(DedupConfig(metric="containment", id_field="id", index=str(idx)).resolved())
    _check_supported(DedupConfig(method="simhash", id_field="id", index=str(idx)).resolved())


def test_index_command_creates_queries_and_exports_a_containment_index(tmp_path):
    hosts, passages = _corpus(7, 30, 10)
    rows = _write(tmp_path / "h.jsonl", [{"id": f"h{i}", "text": t} for i, t in enumerate(hosts)])
    q = _write(tmp_path / "q.jsonl", [{"id": f"q{i}", "text": t} for i, t in enumerate(passages)])
    idx = str(tmp_path / "idx")
    run = CliRunner().invoke
    assert run(main, ["index", "create", idx, "--metric", "containment"]).exit_code == 0
    assert run(main, ["index", "add", idx, str(rows), "--id-field", "id"]).exit_code == 0
    res = run(main, ["index", "query", idx, str(q), "--id-field", "id"])
    assert res.exit_code == 0, res.output
    answers = [[m["id"] for m in json.loads(line)["matches"]] for line in res.output.splitlines()]
    with open_index(idx, readonly=True) as ix:
        assert answers == [[k for k, _ in r] for r in ix.query_batch(passages)]
    assert sum(1 for a in answers if a) >= len(passages) // 2
    res = run(main, ["index", "export", idx, "-o", str(tmp_path / "sig.parquet")])
    assert res.exit_code == 0, res.output
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "sig.parquet")
    assert t.num_rows == 30 and t.column("size").to_pylist() == [len(set(
        " ".join(w) for w in zip(*(h.split()[k:] for k in range(5))))) for h in hosts]


def test_reverse_size_bound_is_the_forward_rule_with_the_roles_swapped():
    """The reverse probe's largest document size for a query of size q is the largest x that the
    forward rule ⌈t·x − 1e-9⌉ ≤ q admits with X as the query, evaluated in the same floats (q/t
    within 1e-9 of an integer made them differ, e.g. t = 0.07, q = 1,370,145)."""
    from neardup.kernels.containment import probe as kprobe

    t, q, x = 0.07, 1_370_145, 19_573_500
    assert np.ceil(t * x - 1e-9) <= q                      # the batch admits the pair
    keys = np.zeros((1, 1), np.uint64)                     # one band, one layout of one row
    for size, want in ((x, 1), (x + 1, int(np.ceil(t * (x + 1) - 1e-9) <= q))):
        seen = np.zeros(1, np.bool_)
        qi, _ = kprobe(keys, np.array([q], np.int64), np.full(1, -1, np.int64), np.zeros((1, 1), np.uint64),
                       np.zeros((1, 1), np.uint32), np.array([size], np.int64), np.ones(1, np.bool_),
                       np.array([1], np.int64), np.array([0, 1], np.int64), np.array([1], np.int64),
                       np.array([1], np.int64), 0, 1.0, t, size, seen, True)
        assert qi.shape[0] == want, size


def test_precomputed_signatures_are_checked_as_the_jaccard_index_checks_them(tmp_path):
    texts = ["alpha beta gamma delta epsilon zeta eta theta", "iota kappa lambda mu nu xi omicron pi rho"]
    ix = ContainmentDiskIndex.create(tmp_path / "ix")
    mh = ix.hasher
    good = mh.sign_batch(texts)
    sizes = mh.shingler.features(texts).unique().sizes()
    other = MinHasher(num_perm=128, scheme="permutation", seed=7).sign_batch(texts)
    with pytest.raises(IndexConfigError, match="scheme, seed, num_perm"):
        ix.add_signatures(["a", "b"], other, sizes)
    with pytest.raises(ValueError, match="at most 4294967295"):
        ix.add_signatures(["a", "b"], good, [2**32, 3])
    with pytest.raises(TypeError, match="uint32"):
        ix.query_signatures(good.values.astype(np.float64), sizes=sizes)
    with pytest.raises(TypeError, match="uint32"):
        ix.query_signatures(np.full((1, 128), -1), sizes=[5])
    ix.add_signatures(["a", "b"], good, sizes)
    assert [k for k, _ in ix.query_signatures(good.values[:1], sizes=sizes[:1])[0]][0] == "a"


def test_index_create_names_the_containment_kind_and_refuses_explicit_bands(tmp_path):
    res = CliRunner().invoke(main, ["index", "create", str(tmp_path / "ok"), "--metric", "containment"])
    assert res.exit_code == 0 and "(containment)" in res.output
    res = CliRunner().invoke(main, ["index", "create", str(tmp_path / "bad"), "--metric", "containment",
                                    "--bands", "16", "--rows", "8"])
    assert res.exit_code != 0 and "--bands/--rows are not used by a containment index" in res.output
    assert not (tmp_path / "bad").exists()
