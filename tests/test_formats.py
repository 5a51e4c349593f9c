"""Unit tests of each input format through the registry's one interface: rows read (text, id, line,
errors), kept rows written back in the format's own bytes, the row count checked in pass 2, and the
output name. The end-to-end and hostile cases are in test_io_inputs.py."""
from __future__ import annotations

import bz2
import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neardup.errors import InputChangedError, InputFormatError
from neardup.io.formats import FORMATS, REGISTRY, Fields, format_of, output_name, read_rows, write_kept
from neardup.io.sources import expand_inputs

TEXTS = ["first document", "second document", "", "fourth, with a comma and \"quotes\""]


def _spec(path, fmt=None):
    return expand_inputs([str(path)], fmt)[0]


def _jsonl(tmp_path, name="a.jsonl", compress=None):
    raw = "".join(json.dumps({"id": f"d{i}", "text": t, "n": i}) + "\n" for i, t in enumerate(TEXTS)).encode()
    data = {None: raw, "gz": gzip.compress(raw), "zst": zstandard.ZstdCompressor().compress(raw),
            "bz2": bz2.compress(raw)}[compress]
    p = tmp_path / (name + (f".{compress}" if compress else ""))
    p.write_bytes(data)
    return p


def test_the_registry_names_every_format():
    assert set(FORMATS) == {"jsonl", "csv", "parquet", "lines", "dir", "file"}
    assert all(REGISTRY[name].name == name for name in FORMATS)


@pytest.mark.parametrize("compress", [None, "gz", "zst", "bz2"])
def test_jsonl_rows_and_kept_bytes(tmp_path, compress):
    spec = _spec(_jsonl(tmp_path, compress=compress))
    assert spec.fmt == "jsonl" and spec.compression == {None: None, "gz": "gzip", "zst": "zstd", "bz2": "bz2"}[compress]
    rows = list(read_rows(spec, "text", "id", "n"))
    assert [(r.line, r.id, r.text, r.key) for r in rows] == [(i + 1, f"d{i}", t, float(i)) for i, t in enumerate(TEXTS)]
    dest = tmp_path / "kept"
    assert write_kept(spec, np.array([True, False, True, False]), str(dest)) == 2
    opener = {None: open, "gz": gzip.open, "bz2": bz2.open}.get(compress)
    if opener is not None:
        with opener(dest, "rb") as fh:
            kept = fh.read()
    else:
        kept = zstandard.ZstdDecompressor().stream_reader(open(dest, "rb")).read()
    assert [json.loads(x)["id"] for x in kept.decode().splitlines()] == ["d0", "d2"]
    with pytest.raises(InputChangedError):
        write_kept(spec, np.ones(3, dtype=bool), str(tmp_path / "k2"))
    assert output_name(spec, set()) == spec.label.rsplit("/", 1)[-1]


def test_lines_rows_crlf_bom_and_kept_bytes(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"\xef\xbb\xbfone line\r\ntwo line\n\nlast without newline")
    spec = _spec(p)
    rows = list(read_rows(spec))
    assert [(r.line, r.text) for r in rows] == [(1, "one line"), (2, "two line"), (3, ""), (4, "last without newline")]
    assert write_kept(spec, np.array([True, False, False, True]), str(tmp_path / "k.txt")) == 2
    assert (tmp_path / "k.txt").read_bytes() == b"\xef\xbb\xbfone line\r\nlast without newline\n"
    with pytest.raises(InputFormatError, match="records with fields"):
        list(read_rows(spec, key_field="n"))


def test_csv_rows_quoted_newlines_and_kept_values(tmp_path):
    p = tmp_path / "a.tsv"
    p.write_text("id\ttext\tn\nx\t\"two\nlines\"\t1\ny\tplain\t2\n", encoding="utf-8")
    spec = _spec(p)
    assert spec.fmt == "csv"
    rows = list(read_rows(spec, "text", "id", "n"))
    assert [(r.line, r.id, r.text, r.key) for r in rows] == [(2, "x", "two\nlines", 1.0), (3, "y", "plain", 2.0)]
    write_kept(spec, np.array([True, False]), str(tmp_path / "k.tsv"))
    back = list(read_rows(_spec(tmp_path / "k.tsv"), "text", "id"))
    assert [(r.id, r.text) for r in back] == [("x", "two\nlines")]
    with pytest.raises(InputFormatError, match="no column 'body'"):
        list(read_rows(spec, "body"))


def test_parquet_rows_nulls_and_kept_schema(tmp_path):
    p = tmp_path / "a.parquet"
    table = pa.table({"id": ["a", "b", "c"], "text": ["one", None, "three"], "n": [1.5, 2.5, None]})
    pq.write_table(table, p)
    spec = _spec(p)
    rows = list(read_rows(spec, "text", "id", "n"))
    assert [(r.line, r.id, r.text, r.key) for r in rows] == [(1, "a", "one", 1.5), (2, "b", "", 2.5),
                                                            (3, "c", "three", float("-inf"))]
    write_kept(spec, np.array([False, True, True]), str(tmp_path / "k.parquet"))
    kept = pq.read_table(tmp_path / "k.parquet")
    assert kept.schema == table.schema and kept.column("id").to_pylist() == ["b", "c"]


def test_directory_rows_are_files_listed_once(tmp_path):
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "b.txt").write_text("bee", encoding="utf-8")
    (d / "a.txt").write_text("ay", encoding="utf-8")
    (d / "sub" / "c.txt").write_text("sea", encoding="utf-8")
    spec = _spec(d)
    (d / "late.txt").write_text("written after the listing", encoding="utf-8")
    rows = list(read_rows(spec))
    assert [(r.id, r.text) for r in rows] == [(f"{d}/a.txt", "ay"), (f"{d}/b.txt", "bee"), (f"{d}/sub/c.txt", "sea")]
    write_kept(spec, np.array([False, True, True]), str(tmp_path / "kept"))
    assert sorted(str(p.relative_to(tmp_path / "kept")) for p in (tmp_path / "kept").rglob("*.txt")) == \
        ["b.txt", "sub/c.txt"]
    assert format_of(spec).kept_name(spec) == "docs"


def test_whole_file_format(tmp_path):
    p = tmp_path / "essay.md"
    p.write_text("line one\nline two\n", encoding="utf-8")
    assert _spec(p).fmt == "lines"
    spec = _spec(p, "file")
    assert [(r.id, r.text) for r in read_rows(spec)] == [(str(p), "line one\nline two\n")]
    assert write_kept(spec, np.array([True]), str(tmp_path / "copy.md")) == 1
    assert (tmp_path / "copy.md").read_bytes() == p.read_bytes()


def test_fields_default():
    assert Fields() == Fields("text", None, None)


# a file that starts with a UTF-16/32 byte-order mark is refused by design (tests/test_hostile_round4.py), compressed too
_FOREIGN_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")) | st.sampled_from(
    [b"", b"\r", b"\xef\xbb\xbf{}", b"x" * 300, "\u4e2d\u6587".encode()])


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, max_size=60), final_newline=st.booleans(), max_lines=st.integers(1, 9),
       block_bytes=st.integers(1, 200), packed=st.booleans())
def test_raw_blocks_give_the_lines_of_raw_lines(tmp_path_factory, lines, final_newline, max_lines, block_bytes,
                                                 packed):
    """Pass 1 reads JSON lines in blocks (:func:`raw_blocks`) and splits them where they are parsed
    (:func:`block_lines`): the same (number, bytes) as line by line, for any line lengths against the
    block size (a line longer than a block, empty lines, a last line without its newline, CR, a
    byte-order mark), compressed or not; no block holds more than ``max_lines`` lines."""
    from neardup.io.compression import sniff
    from neardup.io.formats import block_lines, file_blocks, raw_blocks, raw_lines, read_block

    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    assume(packed or sniff(data[:16]) is None)      # a plain file that starts like gzip or zstd is refused
    assume(not data.startswith(_FOREIGN_BOMS))
    path = tmp_path_factory.mktemp("blocks") / ("in.jsonl.gz" if packed else "in.jsonl")
    path.write_bytes(gzip.compress(data) if packed else data)
    spec = expand_inputs([str(path)], None)[0]
    want = list(raw_lines(spec))
    got = []
    for first, block, n in raw_blocks(spec, max_lines, block_bytes):
        split = list(block_lines(first, block))
        assert len(split) == n and 1 <= n <= max_lines and split[0][0] == first
        got += split
    assert got == want
    if not packed:          # an uncompressed file: blocks found here (by the kernel or NumPy), read by offset
        from neardup.io.formats import lines as lines_mod

        for kernel_from in (0, 1 << 62):
            got = []
            at, lines_mod.KERNEL_CUTS_FROM = lines_mod.KERNEL_CUTS_FROM, kernel_from
            try:
                for first, offset, length, n in file_blocks(spec, max_lines, block_bytes):
                    split = list(block_lines(first, read_block(spec, offset, length)))
                    assert len(split) == n and 1 <= n <= max_lines and split[0][0] == first
                    got += split
            finally:
                lines_mod.KERNEL_CUTS_FROM = at
            assert got == want


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=1, max_size=300) | st.lists(st.sampled_from([b"\n", b"ab", b"x\n"]), min_size=1,
                                                             max_size=80).map(b"".join),
       max_lines=st.integers(1, 12) | st.just(1 << 62))
def test_the_kernel_and_numpy_cut_blocks_alike(data, max_lines):
    from neardup.io.formats.lines import _cuts

    assert _cuts(data, len(data), max_lines, True) == _cuts(data, len(data), max_lines, False)


def test_raw_blocks_keep_the_lines_before_a_truncated_stream(tmp_path):
    """A stream that fails part-way: the whole lines read before the fault come out, then the error."""
    from neardup.io.formats import block_lines, raw_blocks

    data = b"".join(json.dumps({"text": f"line {i} " + "w" * (i % 50)}).encode() + b"\n" for i in range(20000))
    packed = gzip.compress(data)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(packed[:len(packed) // 2])
    spec = expand_inputs([str(path)], None)[0]
    got = []
    with pytest.raises(InputFormatError, match="truncated"):
        for first, block, _ in raw_blocks(spec, 4096):
            got += list(block_lines(first, block))
    assert got and got == list(enumerate(data.splitlines(keepends=True)[:len(got)], 1))


@settings(max_examples=120, deadline=None)
@given(lines=st.lists(_LINE, max_size=60), final_newline=st.booleans(), data=st.data(),
       packed=st.sampled_from([None, "gz", "zst"]))
def test_kept_lines_copied_by_runs_equal_the_line_by_line_copy(tmp_path_factory, lines, final_newline, data, packed):
    """Pass 2 copies kept lines a block at a time, one slice per run of kept lines: the same bytes
    as the line-by-line copy (which edits use), for any keep mask, last line with or without its
    newline, compressed or not; a row count that differs from pass 1's is still an error."""
    from neardup.io.compression import sniff
    from neardup.io.formats import REGISTRY
    from neardup.io.formats.lines import raw_lines

    body = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    assume(packed is not None or sniff(body[:16]) is None)   # a plain file that starts like gzip is refused
    assume(not body.startswith(_FOREIGN_BOMS))
    folder = tmp_path_factory.mktemp("copy")
    name = "in.txt" + {None: "", "gz": ".gz", "zst": ".zst"}[packed]
    raw = {None: lambda b: b, "gz": gzip.compress, "zst": zstandard.ZstdCompressor().compress}[packed](body)
    (folder / name).write_bytes(raw)
    spec = expand_inputs([str(folder / name)], None)[0]
    n = len(list(raw_lines(spec)))
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    fmt = REGISTRY["lines"]
    fast = fmt.write_edited(spec, keep, None, None, str(folder / "fast"), "text")
    slow = fmt.write_edited(spec, keep, np.zeros(n, dtype=bool), None, str(folder / "slow"), "text")
    assert fast == slow == int(keep.sum())
    assert (folder / "fast").read_bytes() == (folder / "slow").read_bytes()
    if n:
        with pytest.raises(InputChangedError):
            fmt.write_edited(spec, keep[:-1], None, None, str(folder / "short"), "text")
