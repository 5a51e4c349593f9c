"""A block of JSON lines parsed whole by Arrow (parse_jsonl_block) gives what the line-by-line
parser gives, or nothing (the block is then read line by line); the packed batch it gives signs as
the same documents as Python strings."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io.formats import InputSpec, block_lines, parse_jsonl_block, parse_jsonl_line
from neardup.kernels.jsonl import scan_lines
from neardup.text.normalize import Normalizer, encode_batch
from neardup.text.packed import PackedTexts

SPEC = InputSpec("/nowhere/in.jsonl", "jsonl")

# values that one parser or both refuse, or that they could read differently
_ATOMS = ["0", "-0", "01", "1.5", "1e3", "+1", ".5", "1.", "NaN", "Infinity", "-Infinity", "true", "null",
          '"x"', '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', '"\\u00e9"', '"a\\/b"', '"\\x41"', "[]", "{}",
          "[1,]", '{"a":1,}', "9223372036854775808", "1e400", "123456789012345678901234", '"\t"', '"é"',
          '"\\u0000"', "'s'", '"\x7f"', "[[[[1]]]]", '"\\u12"', '"\\ud83dx"', "1E+2", "-", "0x10"]
_TEXTS = ['"hello world"', '"Ünïcødé Text"', '"a\\nb"', '""', "null", "5", '"x\\u0000y"', '"日本語のテキスト"',
          '"ﬁ ligature ½ ™"', '"\\ud83d\\ude00 emoji"', '"\\ud800 lone"', "true", '["a"]', '"TAB\\tq"', '"ＦＵＬＬ"']
_IDS = ["1", '"a"', "-5", "1.0", "null", "true", '"1"', "0", "9223372036854775807", "[1]", '{"x":1}', "NaN", '"é"']
_KEYS = ['"text"', '"id"', '"m"', '"te\\u0078t"', '"n"', '"id"']


@st.composite
def _line(draw) -> bytes:
    keys = draw(st.permutations(_KEYS))[:draw(st.integers(1, len(_KEYS)))]
    parts = []
    for k in keys:
        pool = _TEXTS if "te" in k else _IDS if k == '"id"' else _ATOMS
        parts.append(k + draw(st.sampled_from(["", " "])) + ":" + draw(st.sampled_from(["", " "])) + draw(st.sampled_from(pool)))
    s = "{" + ",".join(parts) + "}"
    s = draw(st.sampled_from([s] * 12 + [s + "{}", "  " + s, s + "  ", "", s[:-1], "[" + s + "]", " "]))
    b = s.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 19)) == 0:         # a stray byte: invalid UTF-8, a NUL, a control character
        p = draw(st.integers(0, len(b)))
        b = b[:p] + bytes([draw(st.sampled_from([0xFF, 0xC0, 0xED, 0x80, 0xF4, 0x00, 0x0D, 0x0B]))]) + b[p:]
    if draw(st.integers(0, 14)) == 0:         # an object broken over two lines
        p = draw(st.integers(0, len(b)))
        b = b[:p] + b"\n" + b[p:]
    if draw(st.integers(0, 29)) == 0:
        b = b"\xef\xbb\xbf" + b
    return b + draw(st.sampled_from([b"\n"] * 9 + [b"\r\n"]))


def _by_lines(first: int, block: bytes, id_field):
    return [parse_jsonl_line(SPEC, i, raw, "text", id_field, None) for i, raw in block_lines(first, block)]


def _same_as_lines(first: int, block: bytes, id_field) -> bool:
    """Whether the block was taken whole; if it was, every line's row equals the line parser's."""
    fast = parse_jsonl_block(SPEC, first, block, "text", id_field)
    if fast is None:
        return False
    rows = _by_lines(first, block, id_field)
    assert len(rows) == len(fast.texts) == fast.chars.shape[0]
    for k, r in enumerate(rows):
        assert r.error is None and not r.replaced, (block, r)
        assert r.text == fast.texts[k] and len(r.text) == fast.chars[k]
        if id_field is None:
            assert fast.ids is None
        else:
            assert type(r.id) is type(fast.ids[k]) and r.id == fast.ids[k]
    return True


@settings(max_examples=600, deadline=None)
@given(lines=st.lists(_line(), min_size=1, max_size=6), final_newline=st.booleans(), first=st.sampled_from([1, 7]),
       id_field=st.sampled_from([None, "id"]))
def test_a_block_parsed_whole_is_what_each_line_gives(lines, final_newline, first, id_field):
    block = b"".join(lines)
    if not final_newline:
        block = block.rstrip(b"\n")
    if block:
        _same_as_lines(first, block, id_field)


def test_the_common_blocks_are_taken_whole_and_the_doubtful_are_not():
    ok = b'{"id": 1, "text": "Hello"}\n{"id": 2, "text": "caf\\u00e9 \xc3\xa9", "meta": {"a": [1, 2.5, null]}}\n'
    assert _same_as_lines(1, ok, "id") and _same_as_lines(1, ok, None)
    assert _same_as_lines(1, ok.rstrip(b"\n"), "id")                       # the last line without its newline
    assert _same_as_lines(1, b'\xef\xbb\xbf' + ok, "id")                    # a byte-order mark on line 1 only
    assert not _same_as_lines(5, b'\xef\xbb\xbf' + ok, "id")
    strs = b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n'
    assert _same_as_lines(1, strs, "id") and _same_as_lines(1, ok, "id")   # the id type follows the file
    for doubtful in (
        ok + b"\n",                                         # a blank line: a counted skip, line by line
        ok + b'{"id": 3, "text": "a"}{"id": 4, "text": "b"}\n',   # two objects on a line
        ok + b'{"id": 3}\n',                                # no text field (Arrow gives null)
        ok + b'{"id": 3, "text": null}\n',                  # null text ("" line by line)
        ok + b'{"id": 3, "text": "a", "text": "b"}\n',      # a duplicate key (json keeps the last)
        ok + b'{"id": 3, "text": "bad \xff byte"}\n',       # invalid UTF-8: replaced and counted
        ok + b'{"id": 3, "text": "a", "m": "\xff"}\n',      # ... even outside the text
        ok + b'{"id": 3.0, "text": "a"}\n',                 # a float id stays a float
        ok + b'{"id": "3", "text": "a"}\n',                 # mixed id types
        ok + b'{"id": 3, "text": "\\ud800"}\n',             # a lone surrogate escape
        ok + b'  {"id": 3, "text": "a"}\n',                 # led by white space
    ):
        assert not _same_as_lines(1, doubtful, "id"), doubtful


def test_nesting_deeper_than_python_follows_is_left_to_the_line_parser():
    deep = b'{"text": "a", "m": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    block = b'{"text": "b"}\n' + deep
    assert parse_jsonl_block(SPEC, 1, block, "text", None) is None
    rows = _by_lines(1, block, None)
    assert rows[0].error is None and "nested too deeply" in rows[1].error
    for depth, whole in ((400, True), (600, False), (992, False)):   # half the recursion limit: line by line
        line = b'{"text": "a", "m": ' + b"[" * depth + b"]" * depth + b"}\n"
        assert _same_as_lines(1, b'{"text": "b"}\n' + line, None) == whole
    brackets = b'{"text": "' + b"[{" * 3000 + b'"}\n'                  # inside a string they do not nest
    assert _same_as_lines(1, brackets, None)


def test_what_arrow_reads_across_lines_or_past_pythons_limits_is_left_to_the_line_parser():
    """Found by review: an object continued on the next line can hide a second object there (Arrow
    reads a newline as white space, and the row count still matches); Python refuses integers of
    more than 4,300 digits, which Arrow skips in an ignored field."""
    hidden = b'{"text": "a", "x":\n{}}{"text": "b"}\n'
    assert not _same_as_lines(1, hidden, None)
    assert all(r.error is not None for r in _by_lines(1, hidden, None))
    long_int = b'{"text": "a", "x": ' + b"1" * 5000 + b"}\n"
    assert not _same_as_lines(1, long_int, None)
    assert "digits" in _by_lines(1, long_int, None)[0].error
    assert _same_as_lines(1, b'{"text": "a", "x": ' + b"1" * 4000 + b"}\n", None)
    assert _same_as_lines(1, b'{"text": "a", "x": 1.5}  \r\n{"text": "b"}\t\n', None)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=64) | st.text(max_size=24).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_the_scan_checks_utf8_as_python_does(data):
    inner = data.replace(b"\n", b"").replace(b'"', b"").replace(b"\\", b"")
    block = b'{"t": "' + inner + b'"}\n'
    lines, status = scan_lines(np.frombuffer(block, dtype=np.uint8), 0, 100, 0)
    try:
        block.decode("utf-8")
        assert status == 0 and lines == 1
    except UnicodeDecodeError:
        assert status == 1


def _scan(block: bytes, max_depth: int = 100, max_digits: int = 0):
    return scan_lines(np.frombuffer(block, dtype=np.uint8), 0, max_depth, max_digits)


def test_the_scan_follows_strings_depth_and_lines():
    block = b'{"a": 1}\n{"b": [[[[]]]]}\n{"c": "{{{{ \\" ]]"}'
    assert _scan(block, 6) == (3, 0)
    assert _scan(block, 5)[1] == 2                         # five deep on line 2
    assert _scan(b'{}\n\n{}\n')[1] == 2                 # a blank line
    assert _scan(b' {}\n')[1] == 2                        # led by white space
    assert _scan(b'{"a":\n1}\n')[1] == 2                 # an object over two lines
    assert _scan(b'{}{}\n')[1] == 2 and _scan(b'{} x\n')[1] == 2
    assert _scan(b'{"a": "x\ny"}\n')[1] == 2             # a line break inside a string
    assert _scan(b'{"a": 12345}\n', max_digits=5)[1] == 2 and _scan(b'{"a": 1234}\n', max_digits=5)[1] == 0
    assert _scan(b'{"a": "12345"}\n', max_digits=5)[1] == 0   # digits inside a string
    assert _scan(b'{"a": 1} \r\n{"b": 2}') == (2, 0)     # the last line without its newline


_DOC = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["", "ASCII Only", "Ｆｕｌｌ ｗｉｄｔｈ", "ﬁ ½ ™ é", "Straße İstanbul", "日本語 テキスト", "a\u0301b", "  two  spaces\t"])


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(_DOC, max_size=20), nfkc=st.booleans(), casefold=st.booleans(), whitespace=st.booleans(),
       kernel=st.booleans(), none=st.booleans())
def test_a_packed_batch_encodes_as_its_strings(docs, nfkc, casefold, whitespace, kernel, none):
    norm = None if none else Normalizer(nfkc=nfkc, casefold=casefold, whitespace=whitespace)
    ws = False if kernel else None
    if kernel and norm is None:
        return
    enc = [d.encode("utf-8") for d in docs]
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in enc], out=offsets[1:])
    packed = PackedTexts(np.frombuffer(bytearray(b"".join(enc) or b"\0"), dtype=np.uint8), offsets)
    before = packed.buf.copy()
    want = encode_batch(docs, norm, whitespace=ws, kernel_maps=kernel)
    got = encode_batch(packed, norm, whitespace=ws, kernel_maps=kernel)
    n = int(want[1][-1])
    assert got[1].tolist() == want[1].tolist() and got[0][:n].tobytes() == want[0][:n].tobytes()
    assert np.array_equal(packed.buf, before)              # the caller's batch is left as it was
    assert list(packed) == docs and list(packed[1:3]) == docs[1:3] and list(packed[::2]) == docs[::2]


def test_a_run_gives_the_same_outputs_with_blocks_parsed_whole_or_by_line(tmp_path, monkeypatch):
    """The whole pipeline over blocks that take either path (a blank line, a bad line, ids, NFKC
    documents): every output file identical to the line-by-line run's."""
    import neardup.engines.local.workers as workers
    from neardup import DedupConfig, run_dedup

    lines = []
    for i in range(400):
        text = f"document {i % 60} shares these words with its copies ﬁ Ｆｕｌｌ {i % 7}" + (" é" if i % 5 else "")
        lines.append(json.dumps({"id": i, "text": text, "meta": {"n": i}}, ensure_ascii=i % 2 == 0))
    lines[50] = ""
    lines[120] = '{"id": 120, "text": 5}'
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = DedupConfig(workers=1, batch_size=32, id_field="id", on_error="skip", quiet=True, html=False)
    whole = []

    def counted(*a):
        got = parse_jsonl_block(*a)
        whole.append(got is not None)
        return got

    monkeypatch.setattr(workers, "parse_jsonl_block", counted)
    run_dedup([str(src)], str(tmp_path / "whole"), cfg)
    assert sum(whole) == len(whole) - 2           # all but the blocks of the blank and the bad line
    monkeypatch.setattr(workers, "parse_jsonl_block", lambda *a: None)
    run_dedup([str(src)], str(tmp_path / "lines"), cfg)
    names = sorted(p.relative_to(tmp_path / "whole") for p in (tmp_path / "whole").rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(tmp_path / "lines") for p in (tmp_path / "lines").rglob("*") if p.is_file())
    for name in names:
        if name.name not in ("report.json", "report.html", ".neardup-manifest.json"):
            assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "lines" / name).read_bytes(), name
    ra = json.loads((tmp_path / "whole" / "report.json").read_text())
    rb = json.loads((tmp_path / "lines" / "report.json").read_text())
    for key in ("counts", "skipped", "cluster_sizes", "similarity_histogram", "samples", "lsh", "borderline"):
        assert ra[key] == rb[key], key


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_chinese_blocks_are_taken_whole(ensure_ascii):
    block = "".join(json.dumps({"text": f"中文文本，第{i}段。ＡＢＣ"}, ensure_ascii=ensure_ascii) + "\n"
                    for i in range(20)).encode()
    assert _same_as_lines(1, block, None)


def test_the_band_re_read_takes_the_same_sets_from_a_whole_block(tmp_path, monkeypatch):
    """--verify borderline re-reads the band's documents a block at a time (``_sets_job``): the sets
    taken from a block parsed whole are the ones the line-by-line read gives."""
    import neardup.engines.local.workers as workers
    from neardup import DedupConfig

    lines = [json.dumps({"text": f"words of document {i} ﬁ Ｘ {'é' * (i % 3)} " + "common tail " * (i % 4)})
             for i in range(60)]
    data = ("\n".join(lines) + "\n").encode()
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    spec = InputSpec(str(src), "jsonl")
    monkeypatch.setattr(workers, "_CFG", DedupConfig().resolved())
    wanted = np.array([3, 4, 10, 11, 12, 40, 59, 60], dtype=np.int64)       # line numbers, block from line 1
    job = (spec, 1, (0, len(data)), (wanted, wanted * 10), None)
    got = workers._sets_job(job)
    monkeypatch.setattr(workers, "parse_jsonl_block", lambda *a: None)
    want = workers._sets_job(job)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    assert got[0].tolist() == (wanted * 10).tolist() and got[2].shape == (8,)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from([b"{}\n", b"x" * 9 + b"\n", b"\n", b"\xef\xbb\xbf{}\n", b"ab\r\n", b"\n" * 3,
                                       "中文".encode() * 5 + b"\n"]), min_size=1, max_size=12),
       final_newline=st.booleans(), first=st.sampled_from([1, 5]), data=st.data())
def test_the_wanted_lines_of_a_block_are_cut_where_the_line_reader_cuts(lines, final_newline, first, data):
    from neardup.engines.local.workers import wanted_lines

    block = b"".join(lines)
    if not final_newline:
        block = block[:-1] if block.endswith(b"\n") else block
    if not block:
        return
    got_lines = list(block_lines(first, block))
    numbers = [i for i, _ in got_lines]
    wanted = sorted(data.draw(st.sets(st.sampled_from(numbers), min_size=1)))
    sub, sub_first = wanted_lines(block, first, np.asarray(wanted, dtype=np.int64))
    assert sub == b"".join(raw for i, raw in got_lines if i in set(wanted))
    assert (sub_first == 1) == (wanted[0] == 1)          # only line 1 may carry a byte-order mark to skip
    if wanted == numbers:
        assert sub is block


def test_a_block_with_a_bad_line_is_parsed_whole_without_it(tmp_path, monkeypatch):
    """The band re-reads only the wanted lines: a bad line elsewhere in the block (which sent pass 1
    line by line) does not send the re-read line by line, and the sets are those of the line parser."""
    import neardup.engines.local.workers as workers
    from neardup import DedupConfig

    data = b'\xef\xbb\xbf{"text": "first line with a mark"}\n{"text": 5}\nnot json\n' + b"".join(
        json.dumps({"text": f"document {i} text"}).encode() + b"\n" for i in range(5))
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    spec = InputSpec(str(src), "jsonl")
    monkeypatch.setattr(workers, "_CFG", DedupConfig().resolved())
    calls = []
    real = workers.parse_jsonl_block
    monkeypatch.setattr(workers, "parse_jsonl_block", lambda *a: calls.append(real(*a)) or calls[-1])
    for wanted in ([1, 5, 8], [4, 8], [1]):
        calls.clear()
        w = np.array(wanted, dtype=np.int64)
        got = workers._sets_job((spec, 1, (0, len(data)), (w, w + 100), None))
        assert calls and calls[-1] is not None                       # taken whole
        texts = [parse_jsonl_line(spec, i, raw, "text", None, None).text for i, raw in block_lines(1, data) if i in wanted]
        from neardup.dedup.verify import minhasher
        u = minhasher(workers._CFG).shingler.features(texts).distinct_sets()
        assert got[0].tolist() == (w + 100).tolist()
        assert np.array_equal(got[1], u.hashes) and np.array_equal(got[2], np.diff(u.offsets))

_ID_VALUES = st.one_of(st.integers(-2**70, 2**70), st.text(max_size=6), st.sampled_from(["\ud800", "é\udfff", 1.5, True, None]),
                 st.lists(st.integers(0, 3), max_size=2))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(0, 40), n_extra=st.integers(0, 3), int_ids=st.booleans())
def test_clusters_jsonl_written_by_arrow_is_the_line_by_line_text(data, n, n_extra, int_ids):
    """clusters.jsonl assembled by Arrow (ids once, similarities once per value, lines joined in one
    call, a million rows at a time) is byte for byte what the line-by-line definition writes through
    a UTF-8 text file: skipped rows in their places, indexed representatives, lone surrogates in
    ids escaped, integer ids beyond 64 bits, chunks of 7 rows here."""
    import io
    from array import array
    from types import SimpleNamespace

    from neardup.dedup import records
    from neardup.dedup.tables import Corpus

    rows = n + data.draw(st.integers(0, 5))
    doc_row = sorted(data.draw(st.lists(st.integers(0, max(rows - 1, 0)), min_size=n, max_size=n, unique=True))
                     if rows >= n else [])
    n = len(doc_row)
    ids = (array("q", doc_row) if int_ids else
           data.draw(st.lists(_ID_VALUES, min_size=n, max_size=n)))
    corpus = Corpus(ids=ids, doc_row=array("q", doc_row), n_rows=rows,
                    skipped=[(g, "f", g + 1, f"bad row {g} \udcff") for g in range(rows) if g not in set(doc_row)])
    extra = data.draw(st.lists(_ID_VALUES, min_size=n_extra, max_size=n_extra)) if n else []
    rep = np.array([data.draw(st.integers(0, n + len(extra) - 1)) for _ in range(n)], dtype=np.int64)
    sim = np.array(data.draw(st.lists(st.sampled_from([1.0, 0.8125, 0.0, 1 / 3, 0.999999999, 1e-7]), min_size=n,
                                      max_size=n)), dtype=np.float32)
    decided = np.array(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 255]), min_size=n, max_size=n)),
                       dtype=np.uint8)                  # (a kept row's code is ignored: its record has none)
    clusters = SimpleNamespace(cluster=rep, similarity=sim, decided=decided)
    empty = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    want = io.BytesIO()
    with io.TextIOWrapper(want, encoding="utf-8", errors="backslashreplace", write_through=True) as fh:
        fh.writelines(records.clusters_jsonl_lines(corpus, clusters, empty, extra))
        fh.flush()
        expected = want.getvalue()
    got = io.BytesIO()
    at_once, records._ROWS_AT_ONCE = records._ROWS_AT_ONCE, 7
    try:
        records.write_clusters_jsonl(got, corpus, clusters, empty, extra)
    finally:
        records._ROWS_AT_ONCE = at_once
    assert got.getvalue() == expected
