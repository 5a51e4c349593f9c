"""``neardup index …``: every subcommand on real documents, and each one's bad uses (one line, exit 1
or 2, nothing changed)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rows")
    lines = gzip.open(DEMO, "rt", encoding="utf-8").read().splitlines(keepends=True)
    (folder / "a.jsonl").write_text("".join(lines[:200]), encoding="utf-8")
    (folder / "b.jsonl").write_text("".join(lines[200:260]), encoding="utf-8")
    return folder, [json.loads(x) for x in lines[:260]]


def _run(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in res.output, res.output
    return res


def test_create_add_query_remove_stats_compact_export(rows, tmp_path):
    folder, docs = rows
    idx = tmp_path / "idx"
    assert _run("index", "create", idx).exit_code == 0
    res = _run("index", "add", idx, folder / "a.jsonl", "--id-field", "id")
    assert res.exit_code == 0 and "added 200" in res.output
    res = _run("index", "query", idx, folder / "b.jsonl", "--id-field", "id")
    out = [json.loads(x) for x in res.output.splitlines()]
    assert [o["id"] for o in out] == [d["id"] for d in docs[200:260]]
    assert sum(1 for o in out if o["matches"]) > 5
    assert all(m["similarity"] >= 0.8 for o in out for m in o["matches"])
    res = _run("index", "query", idx, "--text", docs[3]["text"], "--format", "table")
    assert res.output.startswith("--text 1\t") and f"{docs[3]['id']} (1.0)" in res.output
    st = json.loads(_run("index", "stats", idx, "--json").output)
    assert st["documents"] == 200 and st["parameters"]["kind"] == "minhash" and st["bytes"] > 0
    res = _run("index", "remove", idx, docs[3]["id"], "no-such-id")
    assert res.exit_code == 1 and "removed 1" in res.output and "no-such-id" in res.output
    assert json.loads(_run("index", "stats", idx, "--json").output)["documents"] == 199
    assert _run("index", "compact", idx).exit_code == 0
    res = _run("index", "query", idx, "--text", docs[3]["text"])
    assert docs[3]["id"] not in [m["id"] for m in json.loads(res.output)["matches"]]
    assert _run("index", "export", idx, "-o", tmp_path / "sig.parquet").exit_code == 0
    t = pq.read_table(tmp_path / "sig.parquet")
    assert t.num_rows == 199 and t.column_names == ["id", "id_type", "signature"]
    assert len(t.column("signature")[0]) == 128 and docs[3]["id"] not in t.column("id").to_pylist()


def test_simhash_index(rows, tmp_path):
    folder, docs = rows
    idx = tmp_path / "s"
    assert _run("index", "create", idx, "--method", "simhash", "--bits", "3").exit_code == 0
    assert _run("index", "add", idx, folder / "a.jsonl", "--id-field", "id").exit_code == 0
    res = _run("index", "query", idx, "--text", docs[5]["text"])
    matches = json.loads(res.output)["matches"]
    assert {"id": docs[5]["id"], "distance": 0} in matches
    assert [m["distance"] for m in matches] == sorted(m["distance"] for m in matches)   # nearest first
    assert matches[0]["id"] == docs[4]["id"]          # ties: the older document (an identical licence)
    res = _run("index", "query", idx, "--text", "x", "--threshold", "0.5")
    assert res.exit_code == 2 and "--bits" in res.output
    res = _run("index", "query", idx, "--text", docs[5]["text"], "--max-distance", "0")     # the older name
    assert res.exit_code == 0 and all(m["distance"] == 0 for m in json.loads(res.output)["matches"])


def test_bad_uses(rows, tmp_path):
    folder, _ = rows
    idx = tmp_path / "idx"
    assert _run("index", "query", tmp_path / "absent", "--text", "x").exit_code == 2       # no such path
    (tmp_path / "notidx").mkdir()
    res = _run("index", "stats", tmp_path / "notidx")
    assert res.exit_code == 1 and "not a neardup index" in res.output
    _run("index", "create", idx)
    res = _run("index", "create", idx)
    assert res.exit_code == 1 and "already exists" in res.output
    res = _run("index", "create", tmp_path / "x", "--method", "simhash", "--bits", "3", "--threshold", "0.5")
    assert res.exit_code == 1 and "threshold" in res.output and not (tmp_path / "x").exists()
    assert _run("index", "add", idx, folder / "a.jsonl").exit_code == 2                      # --id-field needed
    res = _run("index", "add", idx, folder / "a.jsonl", "--id-field", "nope")
    assert res.exit_code == 1 and "nope" in res.output
    assert json.loads(_run("index", "stats", idx, "--json").output)["documents"] == 0
    _run("index", "add", idx, folder / "a.jsonl", "--id-field", "id")
    res = _run("index", "add", idx, folder / "a.jsonl", "--id-field", "id")               # ids indexed already
    assert res.exit_code == 1 and "already in the index" in res.output
    assert json.loads(_run("index", "stats", idx, "--json").output)["documents"] == 200
    assert _run("index", "add", idx, folder / "a.jsonl", "--id-field", "id", "--replace").exit_code == 0
    assert json.loads(_run("index", "stats", idx, "--json").output)["documents"] == 200
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "z1", "text": "fine text here"}\n{"id": "z2", "text": \n')
    res = _run("index", "add", idx, bad, "--id-field", "id")
    assert res.exit_code == 1 and "bad.jsonl:2" in res.output
    res = _run("index", "add", idx, bad, "--id-field", "id", "--on-error", "skip")
    assert res.exit_code == 0 and "1 rows skipped" in res.output
    (tmp_path / "taken.parquet").write_text("mine")
    res = _run("index", "export", idx, "-o", tmp_path / "taken.parquet")
    assert res.exit_code == 1 and (tmp_path / "taken.parquet").read_text() == "mine"
    assert _run("index", "query", idx).exit_code == 2                                      # nothing to look up
