"""``neardup dedup NEW --index IDX`` (dedup/incremental.py): the defining equality (day 1 then day 2
keeps what one run over both keeps), reruns, crashes at every stage, and hostile use."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup import run_dedup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.errors import ConfigError, InputFormatError, NeardupError
from neardup.index.disk import DiskIndex, IndexConfigError, open_index


def _cfg(**kw) -> DedupConfig:
    kw.setdefault("id_field", "id")
    return DedupConfig(html=False, quiet=True, workers=1, **kw)


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]


def _kept(out: Path) -> set:
    return {r["id"] for r in _records(out) if r["kept"]}


def _index_keys(path: Path, method: str) -> set:
    with open_index(path, readonly=True) as idx:
        st = idx.store
        keys, _ = st.fetch_arrays(st.live_ids())
        assert len(keys) == len(idx)
        return set(keys)


@pytest.mark.parametrize("method,linkage", [("minhash", "bounded"), ("minhash", "components"),
                                            ("simhash", "bounded")])
def test_day1_then_day2_keeps_what_one_run_keeps(days, tmp_path, method, linkage):
    kw = {"method": method, "linkage": linkage}
    run_dedup([str(days / "all.jsonl")], str(tmp_path / "all"), _cfg(**kw))
    idx = tmp_path / "idx"
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "d1"), _cfg(index=str(idx), **kw))
    rep = run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d2"), _cfg(index=str(idx), **kw))
    both = _kept(tmp_path / "d1") | _kept(tmp_path / "d2")
    if method == "simhash":
        # verified SimHash: an indexed document's text is not at hand, so its pairs are decided by the
        # sketches' estimate (± 0.07 at 32 slots) where one run checks them exactly: the two may differ
        # there, and only there
        one_run = _kept(tmp_path / "all")
        d2 = {r["id"]: r for r in _records(tmp_path / "d2")}
        differ = both ^ one_run
        assert len(differ) <= 0.02 * len(one_run), differ
        assert all(d2[d]["decided"] == "estimate" and d2[d]["indexed"] for d in differ), differ
    else:
        assert both == _kept(tmp_path / "all")
    assert _index_keys(idx, method) == both
    info = rep["index"]
    assert info["removed_by_index"] > 10 and info["added"] == len(_kept(tmp_path / "d2"))
    assert info["documents_before"] == len(_kept(tmp_path / "d1")) and not info["rerun"]
    # a row removed because of an indexed document names it, and says so
    d1_kept = _kept(tmp_path / "d1")
    by_index = [r for r in _records(tmp_path / "d2") if r.get("indexed")]
    assert len(by_index) == info["removed_by_index"]
    assert all(r["cluster"] in d1_kept and not r["kept"] for r in by_index)
    assert rep["counts"]["input_rows"] == rep["counts"]["kept"] + rep["counts"]["removed"]


def test_rerun_gives_the_same_outputs_and_adds_nothing(days, tmp_path):
    idx = tmp_path / "idx"
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "d1"), _cfg(index=str(idx)))
    run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d2"), _cfg(index=str(idx)))
    first = (tmp_path / "d2" / "clusters.jsonl").read_bytes()
    keys = _index_keys(idx, "minhash")
    rep = run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d2"), _cfg(index=str(idx)))
    assert rep["index"]["rerun"] and rep["index"]["added"] == 0
    assert (tmp_path / "d2" / "clusters.jsonl").read_bytes() == first
    assert _index_keys(idx, "minhash") == keys
    # the same rows under a changed file are a new run: each is now a duplicate of itself in the index
    os.utime(days / "day2.jsonl", ns=(1, 1))
    try:
        rep = run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d3"), _cfg(index=str(idx)))
    finally:
        os.utime(days / "day2.jsonl")
    assert rep["counts"]["kept"] == 0 and not rep["index"]["rerun"]


def test_parquet_clusters_have_an_indexed_column(days, tmp_path):
    import pyarrow.parquet as pq

    idx = str(tmp_path / "idx")
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "d1"), _cfg(index=idx, clusters_format="parquet"))
    run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d2"), _cfg(index=idx, clusters_format="parquet"))
    t1 = pq.read_table(tmp_path / "d1" / "clusters.parquet")
    t2 = pq.read_table(tmp_path / "d2" / "clusters.parquet")
    assert "indexed" not in t1.column_names           # nothing matched on day 1: the usual schema
    assert t2.column("indexed").to_pylist().count(True) > 10


CRASH = textwrap.dedent("""
    import os, signal, sys
    from neardup.config import DedupConfig
    from neardup import run_dedup
    import neardup.index.segments as seg
    import neardup.io.outdir as outdir
    import neardup.dedup.incremental as inc

    point = sys.argv[1]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "query":                  # (the engine's own name for it: the run calls that one)
        import neardup.engines.local.run as run_mod
        orig_m = run_mod.matched
        run_mod.matched = lambda *a, **k: (orig_m(*a, **k), die())
    elif point == "segment":              # the segment's files written, the manifest not yet
        orig_w = seg.write_new
        def w(path, data, *a):
            if path.name.startswith("." + seg.MANIFEST) and b'"runs"' in data:
                die()
            return orig_w(path, data, *a)
        seg.write_new = w
    elif point == "commit":               # the index published, the outputs not in place
        outdir.StagedOutput.commit = lambda self: die()
    elif point == "mid-commit":           # the outputs half renamed
        orig_r = os.replace
        n = [0]
        def r(a, b):
            n[0] += 1
            if n[0] == 2 and "neardup-tmp" in str(a):
                die()
            return orig_r(a, b)
        os.replace = r
    cfg = DedupConfig(id_field="id", index=sys.argv[2], html=False, quiet=True, workers=1)
    run_dedup([sys.argv[3]], sys.argv[4], cfg)
    print("finished")
""")


@pytest.mark.parametrize("point", ["query", "segment", "commit", "mid-commit"])
def test_killed_run_then_rerun_gives_the_clean_result(days, tmp_path, point):
    """SIGKILL at four points of a day-2 run; rerunning the same command gives the outputs and the
    index of a run that was never interrupted."""
    ref_idx = tmp_path / "ref_idx"
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "ref1"), _cfg(index=str(ref_idx)))
    run_dedup([str(days / "day2.jsonl")], str(tmp_path / "ref2"), _cfg(index=str(ref_idx)))

    idx = tmp_path / "idx"
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "o1"), _cfg(index=str(idx)))
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    out = tmp_path / "o2"
    res = subprocess.run([sys.executable, str(script), point, str(idx), str(days / "day2.jsonl"), str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    assert not (out / "report.json").exists() or point == "mid-commit"
    run_dedup([str(days / "day2.jsonl")], str(out), _cfg(index=str(idx)))
    assert (out / "clusters.jsonl").read_bytes() == (tmp_path / "ref2" / "clusters.jsonl").read_bytes()
    assert (out / "kept" / "day2.jsonl").read_bytes() == (tmp_path / "ref2" / "kept" / "day2.jsonl").read_bytes()
    assert _index_keys(idx, "minhash") == _index_keys(ref_idx, "minhash")
    with DiskIndex.open(idx, readonly=True) as a, DiskIndex.open(ref_idx, readonly=True) as b:
        assert len(a) == len(b)


def test_bad_uses_are_refused_before_anything_is_written(days, tmp_path):
    day2 = str(days / "day2.jsonl")
    with pytest.raises(ConfigError, match="--id-field"):
        run_dedup([day2], str(tmp_path / "o"), DedupConfig(index=str(tmp_path / "i")))
    with pytest.raises(ConfigError, match="borderline or minhash"):
        run_dedup([day2], str(tmp_path / "o"), _cfg(index=str(tmp_path / "i"), verify="exact"))
    with pytest.raises(ConfigError, match="--index"):
        run_dedup([day2], str(tmp_path / "o"), _cfg(index=str(tmp_path / "i"), method="exact"))
    with pytest.raises(ConfigError, match="output folder"):
        run_dedup([day2], str(tmp_path / "o"), _cfg(index=str(tmp_path / "o" / "idx")))
    with pytest.raises(ConfigError, match="must not hold an input"):
        run_dedup([day2], str(tmp_path / "o"), _cfg(index=str(days)))
    assert not (tmp_path / "i").exists() and not (tmp_path / "o").exists()
    # an index of the other method, or other parameters: named, and the index is untouched
    run_dedup([day2], str(tmp_path / "o"), _cfg(index=str(tmp_path / "i")))
    before = (tmp_path / "i" / "MANIFEST").read_bytes()
    with pytest.raises(IndexConfigError, match="simhash|minhash"):
        run_dedup([day2], str(tmp_path / "o2"), _cfg(index=str(tmp_path / "i"), method="simhash"))
    with pytest.raises(IndexConfigError, match="ngram=5"):
        run_dedup([day2], str(tmp_path / "o2"), _cfg(index=str(tmp_path / "i"), ngram=3))
    assert (tmp_path / "i" / "MANIFEST").read_bytes() == before
    # ids that cannot be index keys
    bad = tmp_path / "floats.jsonl"
    bad.write_text('{"id": 1.5, "text": "a b c d e f"}\n{"id": 2, "text": "g h i j k l"}\n')
    with pytest.raises(InputFormatError, match=r"floats.jsonl:1.*1.5"):
        run_dedup([str(bad)], str(tmp_path / "o3"), _cfg(index=str(tmp_path / "i")))
    assert (tmp_path / "i" / "MANIFEST").read_bytes() == before
    # a failed first run leaves neither the output folder nor the index it created
    with pytest.raises(InputFormatError, match=r"floats.jsonl:1.*1.5"):
        run_dedup([str(bad)], str(tmp_path / "o5"), _cfg(index=str(tmp_path / "i5")))
    assert not (tmp_path / "o5").exists() and not (tmp_path / "i5").exists()
    # a folder that is not an index
    (tmp_path / "notidx").mkdir()
    (tmp_path / "notidx" / "x").write_text("x")
    res = CliRunner().invoke(main, ["dedup", day2, "-o", str(tmp_path / "o4"), "--id-field", "id", "--index",
                                    str(tmp_path / "notidx"), "-q"])
    assert res.exit_code == 1 and "not a neardup index" in res.output and "Traceback" not in res.output


def test_second_writer_is_refused_with_the_holder(days, tmp_path):
    from neardup.index.segments import SegmentStore
    from neardup.index.store import IndexStoreError

    idx = tmp_path / "idx"
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "o1"), _cfg(index=str(idx)))
    holder = DiskIndex.open(idx)           # another writer holds it
    try:
        with pytest.raises(IndexStoreError, match=f"pid {os.getpid()}"):
            SegmentStore.open(idx, timeout=0.1)
    finally:
        holder.close()


def test_a_known_id_with_another_text_is_refused_unless_replace(tmp_path):
    """`dedup --index` treats an indexed id that comes again with a text that is not a
    near-duplicate of the indexed one as `index add` does: refused, nothing added and no output
    written, unless --replace; a near-duplicate text under the same id is simply removed."""
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    words = [f"w{i}" for i in range(400)]
    a.write_text("".join(json.dumps({"id": f"d{i}", "text": " ".join(words[i * 40:(i + 1) * 40])}) + "\n"
                         for i in range(5)))
    b.write_text(json.dumps({"id": "d1", "text": " ".join(words[1 * 40:2 * 40])}) + "\n"      # same text
                 + json.dumps({"id": "d2", "text": " ".join(words[300:340])}) + "\n"             # another text
                 + json.dumps({"id": "new", "text": " ".join(words[360:400])}) + "\n")
    idx = tmp_path / "idx"
    run_dedup([str(a)], str(tmp_path / "o1"), _cfg(index=str(idx)))
    with pytest.raises(NeardupError, match=r"ids already in the index with another text \('d2'\).*--replace"):
        run_dedup([str(b)], str(tmp_path / "o2"), _cfg(index=str(idx)))
    assert not (tmp_path / "o2" / "report.json").exists() and _index_keys(idx, "minhash") == {f"d{i}" for i in range(5)}
    res = CliRunner().invoke(main, ["dedup", str(b), "--id-field", "id", "--index", str(idx), "-o",
                                    str(tmp_path / "o3"), "-q"])
    assert res.exit_code == 1 and "Traceback" not in res.output and "--replace" in res.output, res.output
    rep = run_dedup([str(b)], str(tmp_path / "o2"), _cfg(index=str(idx), replace=True))
    assert rep["index"]["added"] == 2
    with DiskIndex.open(idx, readonly=True) as i:
        assert i.query(" ".join(words[300:340]))[0] == ("d2", 1.0) and "new" in i and len(i) == 6
    with pytest.raises(ConfigError, match="replace"):
        _cfg(replace=True).resolved()


@pytest.mark.parametrize("method,extra", [("minhash", {}), ("minhash", {"metric": "containment"}),
                                          ("simhash", {}), ("simhash", {"bits": 3})])
def test_a_day_of_only_empty_documents(tmp_path, method, extra):
    """A day whose documents are all empty (blank, whitespace) probes the index with no row: every row
    is kept as empty, nothing matched, the index keeps its documents (empty ones are stored, never
    matched). It stopped with a traceback before (an empty batch of band keys could not be folded)."""
    day1, day2 = tmp_path / "day1.jsonl", tmp_path / "day2.jsonl"
    day1.write_text(json.dumps({"id": "a", "text": "some words here for one document of text"}) + "\n")
    day2.write_text(json.dumps({"id": "b", "text": ""}) + "\n" + json.dumps({"id": "c", "text": "  \n "}) + "\n")
    idx = tmp_path / "idx"
    run_dedup([str(day1)], str(tmp_path / "o1"), _cfg(index=str(idx), method=method, **extra))
    rep = run_dedup([str(day2)], str(tmp_path / "o2"), _cfg(index=str(idx), method=method, **extra))
    recs = _records(tmp_path / "o2")
    assert [(r["id"], r["kept"], r["empty"]) for r in recs] == [("b", True, True), ("c", True, True)]
    assert rep["index"]["matched_documents"] == 0 and rep["index"]["documents_before"] == 1
    assert _index_keys(idx, method) == {"a", "b", "c"}
