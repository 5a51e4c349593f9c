"""Hostile inputs: every row accounted for, every fault named (file and line), never a silent loss.

Each test names the finding of issue 13 it pins; on the code before that issue each failed."""
from __future__ import annotations

import bz2
import gzip
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hostile import (
    accounted,
    cli,
    cli_proc,
    clusters,
    docs,
    jsonl_bytes,
    one_line_error,
    report,
    without_root,
    write_jsonl,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import DedupConfig, run_dedup
from neardup.errors import InputFormatError
from neardup.io import iter_documents


def cfg(**kw):
    return DedupConfig(workers=1, quiet=True, html=False, **kw)


# -- compressed streams (finding 1; "truncated gzip: Aborted!", "a file that is not gzip/zstd") -----
def _zst_cut_at_block_boundary(data: bytes) -> bytes:
    """A zstd frame cut right after a complete block (the reader used to stop there silently)."""
    c = zstandard.ZstdCompressor(level=3).compressobj()
    parts, step = [], len(data) // 8
    for k in range(8):
        parts.append(c.compress(data[k * step:(k + 1) * step]) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
    return b"".join(parts[:5])


def test_truncated_zst_at_a_block_boundary_is_an_error_of_the_file(tmp_path):
    data = jsonl_bytes([f"row {i} " + "word " * 60 for i in range(5000)])
    p = tmp_path / "cut.jsonl.zst"
    p.write_bytes(_zst_cut_at_block_boundary(data))
    for on_error in ("raise", "skip"):
        with pytest.raises(InputFormatError, match="truncated zstd stream") as exc:
            run_dedup([str(p)], str(tmp_path / f"o-{on_error}"), cfg(on_error=on_error))
        assert str(exc.value).startswith(str(p))
        assert not (tmp_path / f"o-{on_error}" / "report.json").exists()


@pytest.mark.parametrize("codec", ["gzip", "zstd", "bz2"])
@pytest.mark.parametrize("where", [0.3, 0.9])
def test_truncated_stream_mid_line_is_never_a_skipped_row(tmp_path, codec, where):
    data = jsonl_bytes([f"row {i} " + "word " * 30 for i in range(3000)])
    packed = {"gzip": gzip.compress, "zstd": zstandard.ZstdCompressor().compress, "bz2": bz2.compress}[codec](data)
    ext = {"gzip": ".gz", "zstd": ".zst", "bz2": ".bz2"}[codec]
    p = tmp_path / f"cut.jsonl{ext}"
    p.write_bytes(packed[: int(len(packed) * where)])
    code, out, err = cli("dedup", p, "-o", tmp_path / "o", "--on-error", "skip", "--workers", "1")
    assert code == 1 and not (tmp_path / "o" / "report.json").exists()
    line = one_line_error(err)
    assert f"{p}: truncated {codec} stream" in line or f"{p}: corrupt {codec} stream" in line


@pytest.mark.parametrize("name,body,msg", [
    ("x.jsonl.gz", b'{"text": "plain, not gzip"}\n', "not a gzip stream"),
    ("x.jsonl.zst", b'{"text": "plain, not zstd"}\n', "not a zstd stream"),
    ("x.jsonl", gzip.compress(b'{"text": "gzip under a plain name"}\n', mtime=0), "gzip-compressed but its name"),
    ("x.txt", zstandard.ZstdCompressor().compress(b"zstd under a plain name\n"), "zstd-compressed but its name"),
])
def test_a_name_that_lies_about_compression_is_named(tmp_path, name, body, msg):
    p = tmp_path / name
    p.write_bytes(body)
    code, _, err = cli("dedup", p, "-o", tmp_path / "o")
    assert code == 1 and msg in one_line_error(err) and str(p) in err


def test_corrupt_gzip_data_is_named(tmp_path):
    packed = bytearray(gzip.compress(jsonl_bytes(docs(50))))
    packed[len(packed) // 2] ^= 0xFF
    p = tmp_path / "bad.jsonl.gz"
    p.write_bytes(bytes(packed))
    code, _, err = cli("dedup", p, "-o", tmp_path / "o")
    assert code == 1 and f"{p}: corrupt gzip stream" in one_line_error(err)


def test_multi_frame_zstd_and_multi_member_gzip_are_read_whole(tmp_path):
    texts = docs(30)
    a, b = jsonl_bytes(texts[:13]), jsonl_bytes(texts[13:])
    z = tmp_path / "two.jsonl.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(a) + zstandard.ZstdCompressor().compress(b))
    g = tmp_path / "two.jsonl.gz"
    g.write_bytes(gzip.compress(a) + gzip.compress(b))
    run_dedup([str(z), str(g)], str(tmp_path / "o"), cfg())
    accounted(tmp_path / "o", 60)
    with open(tmp_path / "o" / "kept" / "two.jsonl.zst", "rb") as fh:
        kept = zstandard.ZstdDecompressor().stream_reader(fh).read()
    assert kept.count(b"\n") == report(tmp_path / "o")["outputs"][0]["kept"]


def test_kept_gzip_is_byte_identical_across_runs(tmp_path):
    p = tmp_path / "in.jsonl.gz"
    p.write_bytes(gzip.compress(jsonl_bytes(docs(30))))
    run_dedup([str(p)], str(tmp_path / "a"), cfg())
    run_dedup([str(p)], str(tmp_path / "b"), cfg())
    assert (tmp_path / "a/kept/in.jsonl.gz").read_bytes() == (tmp_path / "b/kept/in.jsonl.gz").read_bytes()


# -- pipes and standard input (finding 2) ------------------------------------------------------------
def test_process_substitution_pipe_is_spooled_and_fully_kept(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", docs(12))
    b = write_jsonl(tmp_path / "b.jsonl", [t + " second file" for t in docs(12)])
    out = tmp_path / "o"
    script = (f'"{sys.executable}" -m neardup.cli dedup <(cat "{a}" "{b}") --input-format jsonl -o "{out}" '
              "--workers 1 -q")
    res = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode()
    rep = accounted(out, 24)
    kept_file = out / rep["outputs"][0]["output"]
    assert kept_file.read_bytes().count(b"\n") == rep["counts"]["kept"] > 0
    assert not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]


def test_stdin_dash_is_jsonl_and_compression_is_sniffed(tmp_path):
    data = jsonl_bytes(docs(12))
    for body, name in ((data, "stdin.jsonl"), (gzip.compress(data), "stdin.jsonl.gz")):
        out = tmp_path / name
        res = cli_proc("dedup", "-", "-o", out, "--workers", "1", "-q", input=body)
        assert res.returncode == 0, res.stderr.decode()
        rep = accounted(out, 12)
        assert rep["inputs"] == ["<stdin>"] and rep["outputs"][0]["output"] == f"kept/{name}"


def test_dash_o_dash_streams_the_kept_rows(tmp_path):
    data = jsonl_bytes(docs(12))
    res = cli_proc("dedup", "-", "-o", "-", "--workers", "1", "-q", input=data)
    assert res.returncode == 0, res.stderr.decode()
    kept = [json.loads(x) for x in res.stdout.decode().splitlines()]
    src = [json.loads(x) for x in data.decode().splitlines()]
    assert 0 < len(kept) < len(src) and all(k in src for k in kept)
    # the same rows as a folder run keeps
    p = write_jsonl(tmp_path / "in.jsonl", docs(12))
    run_dedup([str(p)], str(tmp_path / "o"), cfg())
    assert res.stdout == (tmp_path / "o" / "kept" / "in.jsonl").read_bytes()
    pq.write_table(pa.table({"text": docs(4)}), tmp_path / "t.parquet")
    code, _, err = cli("dedup", tmp_path / "t.parquet", "-o", "-")
    assert code == 1 and "standard output" in one_line_error(err)


def test_a_terminal_or_closed_stdin_is_refused(tmp_path):
    res = cli_proc("dedup", "-", "-o", tmp_path / "o", stdin=subprocess.DEVNULL)
    assert res.returncode == 0          # /dev/null is an empty input: 0 rows, accounted
    assert report(tmp_path / "o")["counts"]["input_rows"] == 0


# -- directory inputs (finding 6) ---------------------------------------------------------------------
def test_symlinks_in_a_folder_are_followed_and_loops_reported(tmp_path):
    store = tmp_path / "blobs"
    store.mkdir()
    snap = tmp_path / "snapshot"
    (snap / "sub").mkdir(parents=True)
    for i, t in enumerate(docs(6)):
        (store / f"blob{i}").write_text(t, encoding="utf-8")
        os.symlink(store / f"blob{i}", snap / ("sub" if i % 2 else ".") / f"doc{i}.txt")
    run_dedup([str(snap)], str(tmp_path / "o"), cfg())
    rep = accounted(tmp_path / "o", 6)
    assert rep["counts"]["input_rows"] == 6        # a Hugging Face snapshot is a folder of links
    os.symlink(snap, snap / "sub" / "loop")
    os.symlink(tmp_path / "nowhere", snap / "dangling")
    code, _, err = cli("dedup", snap, "-o", tmp_path / "o2")
    assert code == 1 and "broken symbolic link" in one_line_error(err)
    run_dedup([str(snap)], str(tmp_path / "o3"), cfg(on_error="skip"))
    rep = accounted(tmp_path / "o3", 8)
    reasons = [s["reason"] for s in rep["skipped"]]
    assert rep["counts"]["skipped_records"] == 2
    assert any("broken symbolic link" in r for r in reasons) and any("loop" in r for r in reasons)


def test_fifo_and_unreadable_files_in_a_folder_are_named(tmp_path, open_tmp):
    d = open_tmp / "d"
    d.mkdir()
    for i, t in enumerate(docs(4)):
        (d / f"f{i}.txt").write_text(t, encoding="utf-8")
    os.mkfifo(d / "pipe")
    code, _, err = cli("dedup", d, "-o", tmp_path / "o")     # must not block on the FIFO
    assert code == 1 and "not a regular file" in one_line_error(err) and "pipe" in err
    run_dedup([str(d)], str(tmp_path / "o2"), cfg(on_error="skip"))
    assert accounted(tmp_path / "o2", 5)["counts"]["skipped_records"] == 1
    os.remove(d / "pipe")
    (d / "secret").mkdir()
    (d / "secret" / "x.txt").write_text("hidden words here", encoding="utf-8")
    (d / "locked.txt").write_text("locked words here", encoding="utf-8")
    os.chmod(d / "secret", 0o000)
    os.chmod(d / "locked.txt", 0o000)
    try:
        status, value = without_root(lambda: [(r.line, r.error) for r in
                                              __import__("neardup.io.formats", fromlist=["x"]).read_rows(
                                                  __import__("neardup.io.sources", fromlist=["x"]).expand_inputs(
                                                      [str(d)])[0])])
    finally:
        os.chmod(d / "secret", 0o755)
        os.chmod(d / "locked.txt", 0o644)
    assert status == "ok", value
    errors = [e for _, e in value if e]
    assert len(value) == 6 and len(errors) == 2
    assert any("locked.txt: cannot read" in e for e in errors) and any("cannot list this folder" in e for e in errors)


def test_output_inside_an_input_folder_is_refused_and_rows_never_shift(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for i, t in enumerate(docs(6)):
        (d / f"f{i}.txt").write_text(t, encoding="utf-8")
    before = sorted(os.listdir(d))
    code, _, err = cli("dedup", d, "-o", d / "out")
    assert code == 1 and "inside the input folder" in one_line_error(err)
    assert sorted(os.listdir(d)) == before


# -- CSV (finding 7; "a CSV field over 128 KiB") ------------------------------------------------------
def test_csv_unterminated_quote_is_named_not_merged(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('id,text\n1,"an opened quote\n2,second row\n3,third row\n', encoding="utf-8")
    for extra in ([], ["--on-error", "skip"]):
        code, _, err = cli("dedup", p, "-o", tmp_path / "o", *extra)
        assert code == 1 and f"{p}:2: unterminated quoted field" in one_line_error(err)
    p.write_text('id,text\n1,"closed" then text\n2,fine\n', encoding="utf-8")
    code, _, err = cli("dedup", p, "-o", tmp_path / "o")
    assert code == 1 and f"{p}:2: malformed quoting" in one_line_error(err)


def test_csv_field_over_128_kib(tmp_path):
    big = " ".join(f"w{i}" for i in range(30000))      # ~200 KB in one field
    p = tmp_path / "big.csv"
    p.write_text(f'id,text\n1,"{big}"\n2,"{big} more"\n3,other text entirely here\n', encoding="utf-8")
    run_dedup([str(p)], str(tmp_path / "o"), cfg(id_field="id"))
    rep = accounted(tmp_path / "o", 3)
    assert rep["counts"]["removed"] == 1


# -- JSON details -----------------------------------------------------------------------------------
def test_deeply_nested_json_is_a_skippable_row(tmp_path):
    p = tmp_path / "deep.jsonl"
    p.write_bytes(jsonl_bytes(docs(3)) + b"[" * 100000 + b"]" * 100000 + b"\n" + jsonl_bytes(docs(2)))
    for workers in (1, 2):
        code, _, err = cli("dedup", p, "-o", tmp_path / "o", "--workers", workers)
        assert code == 1 and f"{p}:4: JSON nested too deeply" in one_line_error(err)
        run_dedup([str(p)], str(tmp_path / f"s{workers}"), DedupConfig(on_error="skip", workers=workers, quiet=True))
        assert accounted(tmp_path / f"s{workers}", 6)["counts"]["skipped_records"] == 1


def test_lone_surrogates_in_ids_and_texts_are_written_as_json_escapes(tmp_path):
    p = tmp_path / "s.jsonl"
    rows = [{"id": "bad\ud800id", "text": docs(3)[0] + " \udc80 tail"}, {"id": "ok", "text": docs(3)[0] + " \udc80 tail"},
            {"id": "z", "text": docs(3)[1]}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="ascii")
    run_dedup([str(p)], str(tmp_path / "o"), DedupConfig(workers=1, quiet=True, id_field="id"))
    recs = clusters(tmp_path / "o")
    assert recs[0]["id"] == "bad\ud800id" and recs[1]["cluster"] == "bad\ud800id"
    rep = report(tmp_path / "o")
    assert rep["samples"] and "\udc80" in rep["samples"][0]["kept_text"]
    assert (tmp_path / "o" / "report.html").exists()
    run_dedup([str(p)], str(tmp_path / "pq"), DedupConfig(workers=1, quiet=True, id_field="id",
                                                          clusters_format="parquet"))
    assert pq.read_table(tmp_path / "pq" / "clusters.parquet").column("id").to_pylist()[0] == "bad\\ud800id"
    code, out, _ = cli("sign", p, "--id-field", "id", "--num-perm", "4")
    assert code == 0 and json.loads(out.splitlines()[0])["id"] == "bad\ud800id"


def test_a_file_name_that_is_not_utf8(tmp_path):
    raw = os.fsencode(tmp_path) + b"/caf\xe9.jsonl"
    with open(raw, "wb") as fh:
        fh.write(jsonl_bytes(docs(6)))
    name = os.fsdecode(raw)
    run_dedup([name], str(tmp_path / "o"), cfg())
    rep = accounted(tmp_path / "o", 6)
    assert rep["outputs"][0]["output"] == "kept/caf_.jsonl" and (tmp_path / "o" / "kept" / "caf_.jsonl").exists()
    assert json.loads((tmp_path / "o" / "report.json").read_text())["inputs"] == [name]


# -- ids (null, NaN, Infinity, duplicates) -----------------------------------------------------------
@pytest.mark.parametrize("bad", ["null", "NaN", "Infinity", "-Infinity"])
def test_null_and_non_finite_ids_are_named(tmp_path, bad):
    p = tmp_path / "ids.jsonl"
    t = docs(3)
    p.write_text(f'{{"id": 0, "text": "{t[1]}"}}\n{{"id": {bad}, "text": "{t[2]}"}}\n', encoding="utf-8")
    code, _, err = cli("dedup", p, "--id-field", "id", "-o", tmp_path / "o")
    assert code == 1 and f"{p}:2: id field 'id' is" in one_line_error(err)
    run_dedup([str(p)], str(tmp_path / "s"), cfg(id_field="id", on_error="skip"))
    rep = accounted(tmp_path / "s", 2)
    assert rep["counts"]["skipped_records"] == 1
    assert (tmp_path / "s" / "clusters.jsonl").read_text().count("NaN") == 0


def test_duplicate_ids_name_both_rows_or_are_counted_skips(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", docs(4), ids=["x", "y", "z", "w"])
    b = write_jsonl(tmp_path / "b.jsonl", docs(3), ids=["v", "y", "u"])
    code, _, err = cli("dedup", a, b, "--id-field", "id", "-o", tmp_path / "o")
    line = one_line_error(err)
    assert code == 1 and f"{b}:2: id 'y' is already the id of {a}:2" in line
    run_dedup([str(a), str(b)], str(tmp_path / "s"), cfg(id_field="id", on_error="skip"))
    rep = accounted(tmp_path / "s", 7)
    assert rep["counts"]["skipped_records"] == 1 and f"{b}:2: id 'y' repeats the id of {a}:2" in \
        rep["skipped"][0]["reason"]
    ids = [r["id"] for r in clusters(tmp_path / "s") if r["status"] != "skipped"]
    assert len(ids) == len(set(ids)) == 6
    p = tmp_path / "types.jsonl"             # 1, 1.0, true and "1" are four different ids
    t = docs(4)
    p.write_text("".join(json.dumps({"id": i, "text": t[k]}) + "\n" for k, i in enumerate([1, 1.0, True, "1"])))
    run_dedup([str(p)], str(tmp_path / "t"), cfg(id_field="id"))
    accounted(tmp_path / "t", 4)


def test_csv_empty_id_is_named(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("id,text\n1,first text here\n,second text here\n", encoding="utf-8")
    code, _, err = cli("dedup", p, "--id-field", "id", "-o", tmp_path / "o")
    assert code == 1 and f"{p}:3: id column 'id' is empty" in one_line_error(err)


# -- files that cannot be read, paths that are not files ----------------------------------------------
def test_corrupt_parquet_names_the_file(tmp_path):
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": docs(20)}), p)
    data = bytearray(p.read_bytes())
    p.write_bytes(bytes(data[: len(data) // 2]))
    code, _, err = cli("dedup", p, "-o", tmp_path / "o")
    assert code == 1 and f"{p}: cannot read as Parquet" in one_line_error(err)


def test_symlink_loop_and_missing_paths_are_told_apart(tmp_path):
    os.symlink(tmp_path / "l2", tmp_path / "l1")
    os.symlink(tmp_path / "l1", tmp_path / "l2")
    code, _, err = cli("dedup", tmp_path / "l1", "-o", tmp_path / "o")
    assert code == 1 and "symbolic link loop" in one_line_error(err)
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    code, _, err = cli("dedup", tmp_path / "dangling", "-o", tmp_path / "o")
    assert code == 1 and "broken symbolic link" in one_line_error(err)
    code, _, err = cli("dedup", tmp_path / "nope.jsonl", "-o", tmp_path / "o")
    assert code == 1 and "no such file or directory" in one_line_error(err)
    code, _, err = cli("dedup", str(tmp_path / "*.none"), "-o", tmp_path / "o")
    assert code == 1 and "no file matches" in one_line_error(err)
    assert not (tmp_path / "o").exists()       # nothing created for a run that cannot start


def test_unreadable_input_is_named_before_anything_is_written(open_tmp):
    p = write_jsonl(open_tmp / "locked.jsonl")
    os.chmod(p, 0o000)
    os.chmod(open_tmp, 0o777)
    out = open_tmp / "o"
    try:
        status, value = without_root(lambda: cli("dedup", str(p), "-o", str(out)))
    finally:
        os.chmod(p, 0o644)
    assert status == "ok", value
    code, _, err = value
    assert code == 1 and f"{p}: cannot read (Permission denied)" in one_line_error(err)
    assert not out.exists()


def test_the_same_input_named_twice_is_refused(tmp_path):
    p = write_jsonl(tmp_path / "a.jsonl")
    code, _, err = cli("dedup", p, tmp_path / "." / "a.jsonl", "-o", tmp_path / "o")
    assert code == 1 and "named twice" in one_line_error(err)
    d = tmp_path / "d"
    d.mkdir()
    (d / "x.txt").write_text("words in a file", encoding="utf-8")
    code, _, err = cli("dedup", d, d / "x.txt", "-o", tmp_path / "o")
    assert code == 1 and "inside the input folder" in one_line_error(err)


def test_an_input_changed_between_the_passes_is_an_error(tmp_path, monkeypatch):
    p = write_jsonl(tmp_path / "in.jsonl")
    import neardup.engines.local.run as local_run

    real = local_run.find_run

    def grow_input(*a, **k):
        with open(p, "ab") as fh:
            fh.write(jsonl_bytes(["a row appended while the run was reading"]))
        return real(*a, **k)

    monkeypatch.setattr(local_run, "find_run", grow_input)
    with pytest.raises(InputFormatError, match="changed while the run was reading it"):
        run_dedup([str(p)], str(tmp_path / "o"), cfg())
    assert not (tmp_path / "o" / "report.json").exists()


def test_pass_two_checks_the_row_count_itself(tmp_path):
    import numpy as np

    from neardup.errors import InputChangedError
    from neardup.io.formats import write_kept
    from neardup.io.sources import expand_inputs

    p = write_jsonl(tmp_path / "in.jsonl", docs(5))
    spec = expand_inputs([str(p)])[0]
    with pytest.raises(InputChangedError, match="5 rows were read .* 4 in the first pass|4 rows were read"):
        write_kept(spec, np.ones(4, dtype=bool), str(tmp_path / "k.jsonl"))


# -- sign and eval share the readers ------------------------------------------------------------------
def test_sign_reports_a_truncated_gzip_in_one_line(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(gzip.compress(jsonl_bytes(docs(200)))[:300])
    code, _, err = cli("sign", p)
    assert code == 1 and f"{p}: truncated gzip stream" in one_line_error(err)
    docs_read = []
    with pytest.raises(InputFormatError, match="truncated gzip"):
        for d in iter_documents([str(p)], on_error="skip"):
            docs_read.append(d)


def test_eval_refuses_undocumented_labels_and_reads_gzip_checked(tmp_path):
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"a": "x", "b": "y", "label": 1}\n', encoding="utf-8")
    lab = tmp_path / "lab.csv"
    lab.write_text("a,b,label\nx,y,yes\n", encoding="utf-8")
    code, _, err = cli("eval", pred, "--labels", lab)
    assert code == 1 and f"{lab}:2: label must be 1 or 0" in one_line_error(err)
    lab.write_text("a,b,label\nx,y,true\nx,z,0\n", encoding="utf-8")
    code, out, err = cli("eval", pred, "--labels", lab, "--json")
    assert code == 0 and json.loads(out)["tp"] == 1
    gz = tmp_path / "pred.jsonl.gz"
    gz.write_bytes(gzip.compress(pred.read_bytes() * 200)[:40])
    code, _, err = cli("eval", gz, "--labels", lab)
    assert code == 1 and f"{gz}: truncated gzip stream" in one_line_error(err)


@pytest.mark.parametrize("tail", [b"GARBAGE-NOT-BZ2", "damaged-second-stream"])
def test_bz2_trailing_bytes_are_never_ignored(tmp_path, tail):
    first = bz2.compress(jsonl_bytes(docs(40)))
    if tail == "damaged-second-stream":
        second = bytearray(bz2.compress(jsonl_bytes(docs(5))))
        second[0] = ord("X")
        tail = bytes(second)
    p = tmp_path / "a.jsonl.bz2"
    p.write_bytes(first + tail)
    code, _, err = cli("dedup", p, "-o", tmp_path / "o", "--on-error", "skip")
    assert code == 1 and f"{p}: corrupt bz2 stream" in one_line_error(err)
    assert not (tmp_path / "o" / "report.json").exists()
    p.write_bytes(first + bz2.compress(jsonl_bytes(docs(5))))     # two whole streams are one input
    run_dedup([str(p)], str(tmp_path / "ok"), cfg())
    accounted(tmp_path / "ok", 45)


def test_closed_stdout_is_one_line(tmp_path):
    p = write_jsonl(tmp_path / "in.jsonl")
    for args in (["dedup", p, "-o", "-"], ["sign", p]):
        res = subprocess.run([sys.executable, "-m", "neardup", *map(str, args)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, timeout=120, preexec_fn=lambda: os.close(1))
        assert res.returncode == 1 and "standard output is closed" in one_line_error(res.stderr.decode())


def test_keep_key_values_must_be_numbers_named_by_row(tmp_path):
    p = tmp_path / "k.jsonl"
    same = docs(3)[0]
    p.write_text("".join(json.dumps({"text": same, "n": v}) + "\n" for v in [3, "abc", 5, "NaN", True, None, "7.5"]),
                 encoding="utf-8")
    code, _, err = cli("dedup", p, "--keep", "key", "--keep-field", "n", "-o", tmp_path / "o")
    assert code == 1 and f"{p}:2: keep field 'n' is 'abc', not a number" in one_line_error(err)
    run_dedup([str(p)], str(tmp_path / "s"), cfg(keep="key", keep_field="n", on_error="skip"))
    rep = accounted(tmp_path / "s", 7)
    assert [s["line"] for s in rep["skipped"]] == [2, 4, 5]
    assert "is NaN" in rep["skipped"][1]["reason"] and "is true" in rep["skipped"][2]["reason"]
    kept = [r for r in clusters(tmp_path / "s") if r["kept"]]
    assert [r["row"] for r in kept] == [6]                  # "7.5" is the largest number; null is −∞
    c = tmp_path / "k.csv"
    c.write_text(f"text,n\n{same},3\n{same},\n", encoding="utf-8")
    code, _, err = cli("dedup", c, "--keep", "key", "--keep-field", "n", "-o", tmp_path / "c")
    assert code == 1 and f"{c}:3: keep field 'n' is empty, not a number" in one_line_error(err)
    pq.write_table(pa.table({"text": [same, same], "n": ["1", "x"]}), tmp_path / "k.parquet")
    code, _, err = cli("dedup", tmp_path / "k.parquet", "--keep", "key", "--keep-field", "n", "-o", tmp_path / "q")
    assert code == 1 and "k.parquet: row 2: keep field 'n' is 'x', not a number" in one_line_error(err)


def test_ids_that_read_alike_in_clusters_parquet_are_refused(tmp_path):
    p = tmp_path / "a.jsonl"
    t = docs(4)
    p.write_text("".join(json.dumps({"id": i, "text": t[k]}) + "\n" for k, i in enumerate([1, "2", 2, 3])))
    code, _, err = cli("dedup", p, "--id-field", "id", "--format", "parquet", "-o", tmp_path / "o")
    line = one_line_error(err)
    assert code == 1 and f"{p}:3: id 2 and the id '2' of {p}:2" in line and "--format jsonl" in line
    run_dedup([str(p)], str(tmp_path / "j"), cfg(id_field="id"))      # JSONL keeps them apart
    accounted(tmp_path / "j", 4)


def test_eval_refuses_nan_ids(tmp_path):
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"id": NaN, "cluster": 1}\n{"id": 2, "cluster": 1}\n', encoding="utf-8")
    lab = tmp_path / "lab.jsonl"
    lab.write_text('{"a": 1, "b": 2, "label": 1}\n', encoding="utf-8")
    code, _, err = cli("eval", pred, "--labels", lab)
    assert code == 1 and f"{pred}:1: id is nan" in one_line_error(err)


def test_csv_blank_lines_are_counted_skips(tmp_path):
    p = tmp_path / "trailing.csv"
    p.write_text("text\nfirst document words\n\nsecond document words\n\n", encoding="utf-8")
    run_dedup([str(p)], str(tmp_path / "o"), cfg())
    rep = accounted(tmp_path / "o", 4)
    assert rep["counts"]["skipped_records"] == 2 and rep["counts"]["kept"] == 2
    assert (tmp_path / "o" / "kept" / "trailing.csv").read_text().splitlines() == [
        "text", "first document words", "second document words"]


def test_compressed_files_in_a_folder_are_decompressed_and_checked(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    t = docs(3)
    (d / "a.txt.gz").write_bytes(gzip.compress(t[0].encode()))
    (d / "b.txt").write_text(t[0], encoding="utf-8")
    (d / "c.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(t[1].encode()))
    run_dedup([str(d)], str(tmp_path / "o"), cfg())
    recs = [r for r in clusters(tmp_path / "o")]
    assert [r["kept"] for r in recs] == [True, False, True]      # a.txt.gz and b.txt are the same text
    assert (tmp_path / "o" / "kept" / "d" / "a.txt.gz").read_bytes() == (d / "a.txt.gz").read_bytes()
    (d / "e.txt.gz").write_bytes(gzip.compress(t[2].encode() * 50)[:30])
    code, _, err = cli("dedup", d, "-o", tmp_path / "o2")
    assert code == 1 and "e.txt.gz: truncated gzip stream" in one_line_error(err)


def test_a_folder_named_like_a_dataset_file_is_refused(tmp_path):
    d = tmp_path / "data.parquet"
    d.mkdir()
    pq.write_table(pa.table({"text": docs(4)}), d / "part-0000.parquet")
    code, _, err = cli("dedup", d, "-o", tmp_path / "o")
    assert code == 1 and "named like a parquet file" in one_line_error(err)
    run_dedup([str(d / "part-0000.parquet")], str(tmp_path / "o"), cfg())
    accounted(tmp_path / "o", 4)


def test_field_flags_without_records_are_refused(tmp_path):
    p = tmp_path / "lines.txt"
    p.write_text("one line of text\nanother line\n", encoding="utf-8")
    for flags in (["--id-field", "id"], ["--text-field", "body"]):
        code, _, err = cli("dedup", p, "-o", tmp_path / "o", *flags)
        assert code == 1 and f"{flags[0]} name" in one_line_error(err) and "lines" in err
        code, _, err = cli("sign", p, *flags)
        assert code == 1 and f"{flags[0]} name" in one_line_error(err)
    j = write_jsonl(tmp_path / "a.jsonl", docs(3), ids=["x", "y", "z"])
    run_dedup([str(p), str(j)], str(tmp_path / "mixed"), cfg(id_field="id"))   # applies to the JSONL input
    accounted(tmp_path / "mixed", 5)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(-3, 3), max_size=30) | st.lists(st.integers(-2**70, 2**70) | st.sampled_from([0, 1]),
                                                                   max_size=12)
       | st.lists(st.sampled_from(["a", "b", "1", "é"]), max_size=20)
       | st.lists(st.sampled_from([1, 1.0, True, "1", None, 2, "a", 0, False]), max_size=20))
def test_duplicate_ids_are_the_repeats_of_each_id_key_in_document_order(ids):
    """The integer and string paths of duplicate_ids give what the definition gives: each repeat
    (later document, first document with an equal id key), in document order."""
    from neardup.dedup.records import duplicate_ids, id_key

    first: dict = {}
    want = []
    for d, v in enumerate(ids):
        k = id_key(v)
        if k in first:
            want.append((d, first[k]))
        else:
            first[k] = d
    assert duplicate_ids(ids) == want
