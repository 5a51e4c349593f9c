"""``neardup sign --format parquet|npy``: the JSON lines' signatures, in binary, signed on all cores."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from hostile import cli, one_line_error, write_jsonl

TEXTS = ["the first document has a few words in it and more words after them",
         "the first document has a few words in it and more words after those",
         "",
         "一个 中文 文档 也 可以 签名 吗 当然 可以",
         "short"] * 3


def _jsonl(src, *opts):
    code, out, err = cli("sign", src, *opts)
    assert code == 0, err
    return [json.loads(x) for x in out.splitlines()]


@pytest.mark.parametrize("opts", [("--method", "minhash"), ("--method", "minhash", "--scheme", "bottomk",
                                                            "--num-perm", "64", "--seed", "7"),
                                  ("--method", "minhash", "--scheme", "permutation", "--ngram", "2"),
                                  ("--method", "simhash", "--weighting", "uniform"), ("--method", "sentences")])
def test_parquet_and_npy_equal_the_json_lines(tmp_path, opts):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    want = _jsonl(src, *opts)
    key = [k for k in want[0] if k != "id"][0]
    code, _, err = cli("sign", src, *opts, "--format", "parquet", "-o", tmp_path / "s.parquet", "--workers", "2",
                       "--batch-size", "4")
    assert code == 0, err
    t = pq.read_table(tmp_path / "s.parquet")
    assert t.column_names == ["id", "row", "empty", key]
    assert t["id"].to_pylist() == [w["id"] for w in want]
    assert t["row"].to_pylist() == list(range(len(TEXTS)))
    assert t["empty"].to_pylist() == [x == "" for x in TEXTS]
    assert t[key].to_pylist() == [w[key] for w in want]
    meta = json.loads(t.schema.metadata[b"neardup"])
    assert meta["method"] == key if key != "sentences" else meta["method"] == "sentences"
    code, _, err = cli("sign", src, *opts, "--format", "npy", "-o", tmp_path / "s.npy")
    assert code == 0, err
    m = np.load(tmp_path / "s.npy")
    assert m.shape[0] == len(TEXTS)
    assert m.tolist() == [w[key] for w in want]
    ids = [json.loads(x) for x in (tmp_path / "s.ids.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ids == [{"id": w["id"], "row": i} for i, w in enumerate(want)]


def test_id_field_and_skipped_rows(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([json.dumps({"id": 7, "text": "alpha beta gamma delta"}), "{broken",
                              json.dumps({"id": "x", "text": "alpha beta gamma delta epsilon"})]) + "\n",
                   encoding="utf-8")
    code, _, err = cli("sign", src, "--format", "parquet", "-o", tmp_path / "s.parquet", "--id-field", "id")
    assert code == 1 and "in.jsonl:2" in one_line_error(err)
    assert not (tmp_path / "s.parquet").exists()
    code, _, err = cli("sign", src, "--format", "parquet", "-o", tmp_path / "s.parquet", "--id-field", "id",
                       "--on-error", "skip")
    assert code == 0 and "skipped 1 bad records" in err
    t = pq.read_table(tmp_path / "s.parquet")
    assert t["id"].to_pylist() == ["7", "x"] and t["row"].to_pylist() == [0, 2]
    code, _, err = cli("sign", src, "--format", "npy", "-o", tmp_path / "s.npy", "--id-field", "id", "--on-error",
                       "skip")
    assert code == 0
    ids = [json.loads(x) for x in (tmp_path / "s.ids.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ids == [{"id": 7, "row": 0}, {"id": "x", "row": 2}]     # ids keep their JSON types here


def test_hostile_outputs(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    before = src.read_bytes()
    code, _, err = cli("sign", src, "--format", "parquet", "-o", src)
    assert code == 1 and "is the input" in one_line_error(err)
    assert src.read_bytes() == before
    code, _, err = cli("sign", src, "--format", "parquet", "-o", tmp_path)
    assert code == 1 and "is a folder" in one_line_error(err)
    code, _, err = cli("sign", src, "--format", "npy", "-o", "-")
    assert code == 1 and "two files" in one_line_error(err)
    code, _, err = cli("sign", src, "--format", "npy", "-o", tmp_path / "s.bin")
    assert code == 1 and ".npy" in one_line_error(err)
    code, _, err = cli("sign", src, "--format", "parquet", "-o", tmp_path / "missing" / "s.parquet")
    assert code == 1 and "does not exist" in one_line_error(err)
    # an earlier output survives a failed run whole
    good = tmp_path / "s.parquet"
    assert cli("sign", src, "--format", "parquet", "-o", good)[0] == 0
    kept = good.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"nope": 1}\n', encoding="utf-8")
    code, _, err = cli("sign", bad, "--format", "parquet", "-o", good)
    assert code == 1 and good.read_bytes() == kept
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_parquet_to_standard_output(tmp_path):
    import io

    src = write_jsonl(tmp_path / "in.jsonl", TEXTS[:2])
    from click.testing import CliRunner

    from neardup.cli import main

    res = CliRunner().invoke(main, ["sign", str(src), "--format", "parquet"])
    assert res.exit_code == 0, res.output
    t = pq.read_table(io.BytesIO(res.stdout_bytes))
    assert t.num_rows == 2


def test_arrow_helpers_equal_pa_array():
    """The parquet writer's arrays, built from buffers (pa.array would import pandas), equal pa.array's."""
    import numpy as np
    import pyarrow as pa

    from neardup._arrays import arrow_bool, arrow_numeric, arrow_strings

    rng = np.random.default_rng(5)
    for dtype in (np.uint32, np.uint64, np.int64, np.float64):
        v = rng.integers(0, 1000, 37).astype(dtype)
        assert arrow_numeric(v).equals(pa.array(v)) and arrow_numeric(v[::2]).equals(pa.array(v[::2]))
    for n in (0, 1, 7, 8, 9, 100):
        b = rng.integers(0, 2, n).astype(bool)
        assert arrow_bool(b).equals(pa.array(b, pa.bool_()))
    texts = ["", "a", "ünï", "x" * 300, "中文"]
    assert arrow_strings(texts).equals(pa.array(texts, pa.string()))
    with pytest.raises(TypeError):
        arrow_numeric(np.zeros((2, 2)))
