"""Golden outputs: every input format × every method (and both engines where Spark runs the method)
gives exactly the bytes recorded in ``tests/data/golden_outputs.json`` — the guard for restructuring
the pipeline without changing a result.

The corpus is generated here from fixed text (no randomness). A digest is the SHA-256 of each output
file (``kept/*``, ``clusters.*``; of a Parquet file, its schema and rows) and of the report's
counts and LSH bands. To re-record after an
intended change of results: ``NEARDUP_UPDATE_GOLDEN=1 pytest tests/test_golden.py``, and say why in
the commit."""
from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup import DedupConfig, run_dedup

GOLDEN = Path(__file__).parent / "data" / "golden_outputs.json"
UPDATE = os.environ.get("NEARDUP_UPDATE_GOLDEN") == "1"

WORDS = ("licence software permission copy modify merge publish distribute sublicense sell notice warranty "
         "author liability contract tort damages use other dealings shall included substantial portions").split()
CJK = "中文文本的去重也应该能够直接工作不需要任何额外的参数设置就可以完成这是一个测试"

RUNS = {   # name → configuration; the Spark engine runs those it supports
    "minhash": {},
    "minhash-containment": {"metric": "containment", "threshold": 0.7},
    "minhash-exact-verify": {"verify": "exact", "linkage": "components", "keep": "longest"},
    "minhash-datasketch": {"scheme": "datasketch-legacy", "lsh_mode": "datasketch", "num_perm": 64},
    "minhash-parquet-records": {"clusters_format": "parquet", "id_field": "id", "on_error": "skip"},
    "simhash": {"method": "simhash"},               # verified: candidates within k_c bits, exact Jaccard ≥ 0.8
    "simhash-bits-3": {"method": "simhash", "bits": 3},   # the classic rule (the default before verification)
    "sentences": {"method": "sentences"},
    "exact": {"method": "exact", "keep": "longest"},
    "lines": {"method": "lines"},                                   # repeated spans inside documents
    "lines-paragraph": {"method": "lines", "unit": "paragraph", "min_remaining": 30},
    "substrings": {"method": "substrings", "min_length": 50},
    "minhash-spans-lines": {"spans": "lines"},                      # both: documents, then spans in those kept
    "simhash-spans-substrings-before": {"method": "simhash", "spans": "substrings", "spans_order": "before",
                                        "min_length": 50},
}
INPUTS = ("a.jsonl", "b.jsonl.gz", "c.csv", "d.parquet", "e")
SPARK = tuple(RUNS)   # every run is also checked on Spark (test_spark_engine.py)


def _texts() -> list[str]:
    """60 documents: bases, near copies (a word changed, words appended), exact copies, CJK, empty."""
    out = []
    for i in range(20):
        base = " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] + str((i + j) % 11) for j in range(40))
        out.append(base)
        if i % 2 == 0:
            out.append(base.replace(WORDS[0], "changed", 1) + " and two more")
        if i % 5 == 0:
            out.append(base)
        if i % 4 == 0:
            out.append(CJK[i % 7:] + CJK[: i % 7] + ("。" if i % 8 else ""))
    out += ["", "Short one. Another sentence here! And a third?", "Short one. Another sentence here! And a third?"]
    return out


def _write_inputs(folder: Path) -> list[str]:
    """The inputs, written into ``folder``; their names are relative (run from ``folder``: a folder's
    document ids are paths as named, so they must not hold the temporary folder's name)."""
    texts = _texts()
    n = len(texts)
    parts = [texts[k::5] for k in range(5)]
    (folder / "a.jsonl").write_text("".join(json.dumps({"id": f"a{i}", "text": t, "n": i}, ensure_ascii=False) + "\n"
                                            for i, t in enumerate(parts[0])), encoding="utf-8")
    with gzip.GzipFile(folder / "b.jsonl.gz", "wb", mtime=0) as fh:
        fh.write("".join(json.dumps({"id": f"b{i}", "text": t}, ensure_ascii=False) + "\n"
                         for i, t in enumerate(parts[1])).encode("utf-8"))
    with open(folder / "c.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text"])
        for i, t in enumerate(parts[2]):
            w.writerow([f"c{i}", t.replace(" copy", "\ncopy")])
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(parts[3]))], "text": parts[3]}), folder / "d.parquet")
    (folder / "e").mkdir()
    for i, t in enumerate(parts[4]):
        (folder / "e" / f"f{i:02d}.txt").write_text(t, encoding="utf-8")
    assert sum(map(len, parts)) == n
    return list(INPUTS)


def _digest(out: Path) -> dict:
    files = {}
    for p in sorted(out.rglob("*")):
        rel = str(p.relative_to(out))
        if p.is_file() and not rel.startswith(".neardup") and not rel.startswith("report."):
            if p.suffix == ".parquet":   # the rows and schema (row groups and writer metadata may differ)
                t = pq.read_table(p)
                data = json.dumps([str(t.schema), t.to_pylist()], sort_keys=True, default=str).encode()
            else:
                data = p.read_bytes()
            files[rel] = hashlib.sha256(data).hexdigest()
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    summary = {"counts": rep["counts"], "lsh": [rep["lsh"]["b"], rep["lsh"]["r"]] if "lsh" in rep else None}
    files["report"] = hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()
    return files


def _config(run: str) -> DedupConfig:
    return DedupConfig(workers=1, quiet=True, html=False, **RUNS[run])


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("golden-in")
    _write_inputs(folder)
    return folder


@pytest.fixture(scope="module")
def golden() -> dict:
    if UPDATE:
        return {}
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("run", list(RUNS))
def test_local_engine_outputs_are_golden(input_dir, golden, tmp_path, monkeypatch, run):
    monkeypatch.chdir(input_dir)
    run_dedup(INPUTS, str(tmp_path / "o"), _config(run))
    got = _digest(tmp_path / "o")
    if UPDATE:
        data = json.loads(GOLDEN.read_text(encoding="utf-8")) if GOLDEN.exists() else {}
        data[run] = got
        GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert got == golden[run]


@pytest.mark.parametrize("run", list(RUNS))
def test_two_workers_and_small_batches_give_the_golden_outputs(input_dir, golden, tmp_path, monkeypatch, run):
    """The same bytes when pass 1 is split across two worker processes in batches of 7 documents (the
    rows reach the finish step from several workers, out of order): the plan does not depend on how it
    is executed."""
    if UPDATE:
        pytest.skip("recording")
    monkeypatch.chdir(input_dir)
    cfg = DedupConfig(workers=2, batch_size=7, quiet=True, html=False, **RUNS[run])
    run_dedup(INPUTS, str(tmp_path / "o"), cfg)
    assert _digest(tmp_path / "o") == golden[run]
