"""The one-pass JSON lines parser (kernels.jsonl.extract_fields): what it takes is exactly what
Python's json gives, what it refuses goes on to Arrow or the line parser, and the ordinary blocks
never need either."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io.formats import InputSpec, parse_jsonl_block, parse_jsonl_line
from neardup.kernels.jsonl import extract_fields

SPEC = InputSpec("/nowhere/in.jsonl", "jsonl")
TEXT = np.frombuffer(b"text", dtype=np.uint8)
ID = np.frombuffer(b"id", dtype=np.uint8)


def _extract(block: bytes, want_id: bool = True, head: int = 0):
    """(text, id) per line when the kernel takes the block whole, else None."""
    ok, n, buf, off, kind, ints, idb, idoff = extract_fields(np.frombuffer(block, dtype=np.uint8), head, 500, 4300,
                                                             TEXT, ID, want_id)
    if not ok:
        return None
    raw = buf.tobytes()
    texts = [raw[a:b].decode("utf-8") for a, b in zip(off[:-1].tolist(), off[1:].tolist())]
    if not want_id:
        return [(t, None) for t in texts]
    if kind == 1:
        ids = ints.tolist()
    else:
        r = idb.tobytes()
        ids = [r[a:b].decode("utf-8") for a, b in zip(idoff[:-1].tolist(), idoff[1:].tolist())]
    assert len(ids) == n == len(texts)
    return list(zip(texts, ids))


def _python(block: bytes, want_id: bool = True):
    """(text, id) per line as json.loads reads them, or None when a line is not one the kernel
    should take (not JSON, or a text or id of another kind)."""
    out = []
    for line in block.split(b"\n"):
        if not line.strip():
            if line:
                return None
            continue
        try:
            rec = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
            return None
        out.append((rec["text"], rec.get("id") if want_id else None))
    return out


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_value = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False,
                      allow_infinity=False) | _text,
                      lambda v: st.lists(v, max_size=3) | st.dictionaries(st.sampled_from(["text", "id", "a", "é"]), v,
                                                                          max_size=3), max_leaves=6)


@st.composite
def _record(draw):
    rec = draw(st.dictionaries(st.sampled_from(["a", "b", "meta", "ü"]), _value, max_size=3))
    rec["text"] = draw(_text)
    rec["id"] = draw(st.integers(-10**17, 10**17) | _text)
    keys = list(rec)
    random.Random(draw(st.integers(0, 99))).shuffle(keys)
    return {k: rec[k] for k in keys}


@settings(max_examples=300, deadline=None)
@given(recs=st.lists(_record(), min_size=1, max_size=5), ensure_ascii=st.booleans(),
       seps=st.sampled_from([(", ", ": "), (",", ":"), (" ,  ", " :\t")]), final_newline=st.booleans())
def test_ordinary_lines_are_taken_whole_with_pythons_values(recs, ensure_ascii, seps, final_newline):
    """Lines json.dumps writes (any text, nested values, both spellings of non-ASCII, any white
    space) are taken in one pass, with json.loads's values, unless their ids are of both kinds."""
    block = "\n".join(json.dumps(r, ensure_ascii=ensure_ascii, separators=seps) for r in recs).encode()
    if final_newline:
        block += b"\n"
    got = _extract(block)
    kinds = {type(r["id"]) for r in recs}
    if len(kinds) > 1:
        assert got is None
        return
    assert got == [(r["text"], r["id"]) for r in recs]
    assert _extract(block, want_id=False) == [(r["text"], None) for r in recs]


_BYTES = [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b" ", b"\n", b"\t", b"\x00", b"\x1f", b"\xff", b"\xc3",
          b"\xa9", b"\xed\xa0\x80", b"u", b"0", b"1", b"-", b".", b"e", b"+", b"n", b"t", b"f", b"\\u", b"\\ud800",
          b"\\udc00", b"\\ud83d\\ude00", b"NaN", b"Infinity", b"null", b"true"]


def test_a_mangled_line_is_taken_only_when_python_reads_it_the_same():
    """10,000 blocks of valid lines with bytes deleted, inserted, replaced (fixed seed): whenever
    the kernel takes a block, every line is JSON that json.loads reads to the same text and id;
    whenever json.loads refuses a line, the kernel does not take its block."""
    rng = random.Random(20261206)
    base = [json.dumps({"id": i, "text": t, "m": {"text": [1, -2.5e3, None, True, "x\"y"]}}, ensure_ascii=i % 2 == 0)
            for i, t in enumerate(["plain words here", "caf\u00e9 \U0001F600 \u65e5\u672c", "tab\tquote\"back\\slash",
                                   "", "line\nbreak \u2028 \x7f"])]
    base += [json.dumps({"text": "s", "id": "k\u00e9y"}), '{"id":7,"text":"a"}']
    taken = refused = 0
    for _ in range(10_000):
        lines = [bytearray(rng.choice(base).encode()) for _ in range(rng.randint(1, 3))]
        k = rng.randrange(len(lines))
        line = lines[k]
        for _ in range(rng.randint(1, 2)):
            p = rng.randrange(len(line) + 1)
            op = rng.randrange(3)
            if op == 0 and p < len(line):
                del line[p]
            elif op == 1:
                line[p:p] = rng.choice(_BYTES)
            elif p < len(line):
                line[p:p + 1] = rng.choice(_BYTES)
        block = b"\n".join(bytes(x) for x in lines) + b"\n"
        got = _extract(block)
        want = _python(block)
        if got is not None:
            taken += 1
            assert want is not None and [(t, i) for t, i in got] == [(t, i) for t, i in want], block
            assert all(type(i) in (int, str) for _, i in want)
        else:
            refused += 1
    assert taken > 1000 and refused > 1000         # both sides of the rule were exercised


def test_what_it_refuses_is_what_python_reads_another_way_or_refuses():
    ok = b'{"id": 1, "text": "a"}\n'
    assert _extract(ok) == [("a", 1)]
    for line, python_reads_it in (
        (b'{"id": 1, "text": "a", "text": "b"}', True),       # json keeps the last: left to the line parser
        (b'{"id": 1, "text": null}', True),                  # null is "" line by line
        (b'{"id": 1, "text": "\\ud800"}', True),              # a lone surrogate in a str
        (b'{"id": 1, "text": "\\udc00\\ud800"}', True),
        (b'{"id": 1.0, "text": "a"}', True),                  # a float id stays a float
        (b'{"id": 1234567890123456789, "text": "a"}', True),  # 19 digits: past the kernel's int64
        (b'{"id": true, "text": "a"}', True),
        (b'{"id": 1, "text": "a", "x": NaN}', True),          # Python's extension, not JSON
        (b'{"id": 1, "text": "a", "x": -Infinity}', True),
        (b'{"text": "a"}', True),                             # no id when one is asked for
        (b'{"id": 1, "text": "a",}', False),
        (b'{"id": 1, "text": "a\tb"}', False),                # a raw control character
        (b'{"id": 01, "text": "a"}', False),
        (b'{"id": 1, "text": "a", "x": .5}', False),
        (b'{"id": 1, "text": "a", "x": [1,]}', False),
        (b'{"id": 1, "text": "a", "x": tru}', False),
        (b'{"id": 1, "text": "\\x41"}', False),
        (b'{"id": 1, "text": "\\u12"}', False),
        (b'{"id": 1, "text": "a"} x', False),
        (b'{"id": 1, "text": "a\xff"}', False),               # invalid UTF-8: replaced line by line
        (b'{"id": 1, "text": "\xed\xa0\x80"}', True),         # an encoded surrogate: not UTF-8 (json passes it)
        (b'{"id": 1, "text": "a", "x": 1' + b"0" * 4300 + b"}", False),   # past Python's int digits
    ):
        assert _extract(ok + line + b"\n") is None, line
        try:
            json.loads(line)
            read = True
        except ValueError:
            read = False
        assert read == python_reads_it, line
    assert _extract(b'{"id": 1, "text": "a", "x": 1' + b"0" * 4000 + b"}\n") == [("a", 1)]
    assert _extract(b'{"id": 1, "text": "a", "x": 1.' + b"0" * 5000 + b"}\n") == [("a", 1)]
    assert _extract(b'{"id": -0, "text": "a", "m": {"id": "no", "text": 5}}\n') == [("a", 0)]
    assert _extract(b'\xef\xbb\xbf{"id": 1, "text": "a"}', head=3) == [("a", 1)]
    assert _extract(b"\xef\xbb\xbf", head=3) is None        # a byte-order mark alone is a blank line
    assert parse_jsonl_block(SPEC, 1, b"\xef\xbb\xbf", "text", None) is None
    assert _extract(b'{"\\u0069d": 1, "te\\u0078t": "a", "t\\u00e9": 2}\n') == [("a", 1)]     # keys unescaped
    assert _extract(b'{"id": 1, "te\\u0078t": "a", "text": "b"}\n') is None      # ... so this is a duplicate
    deep = b'{"id": 1, "text": "a", "m": ' + b"[" * 499 + b"]" * 499 + b"}\n"
    assert _extract(deep) is None                       # as deep as the limit: refused
    assert _extract(deep.replace(b"[", b"", 2).replace(b"]", b"", 2)) == [("a", 1)]


def test_ordinary_blocks_never_reach_arrow(monkeypatch):
    """The common block is parsed by the kernel alone; a block it leaves still parses whole
    through Arrow (here: an id of 19 digits)."""
    import pyarrow.json as pj

    calls = []
    real = pj.read_json
    monkeypatch.setattr(pj, "read_json", lambda *a, **k: calls.append(1) or real(*a, **k))
    block = b'{"id": 1, "text": "Hello"}\n{"id": 2, "text": "caf\\u00e9 \xc3\xa9", "meta": {"a": [1, 2.5, null]}}\n'
    got = parse_jsonl_block(SPEC, 1, block, "text", "id")
    assert got is not None and list(got.texts) == ["Hello", "caf\u00e9 \u00e9"] and got.ids == [1, 2]
    assert calls == []
    escaped = b'{"id": 1234567890123456789, "text": "Hello"}\n'      # 19 digits: Arrow's int64, not the kernel's
    got = parse_jsonl_block(SPEC, 1, escaped, "text", "id")
    row = parse_jsonl_line(SPEC, 1, escaped, "text", "id", None)
    assert calls == [1] and got is not None and list(got.texts) == [row.text] and got.ids == [row.id]


@pytest.mark.parametrize("field", ["text", "body", "t\u00e9xt", 'quo"te'])
def test_any_text_field_name(field):
    block = (json.dumps({field: "x y", "id": "a"}, ensure_ascii=False) + "\n").encode()
    got = parse_jsonl_block(SPEC, 1, block, field, "id")
    row = parse_jsonl_line(SPEC, 1, block, field, "id", None)
    assert got is not None and list(got.texts) == [row.text] == ["x y"] and got.ids == [row.id]
