"""Duplicates inside documents: repeated lines/paragraphs (--method lines) and exact repeated substrings
(--method substrings), their kernels against brute-force references, and the run's outputs for every
input format (accounting in bytes, edits that can be audited, other fields untouched)."""
import bz2
import csv
import gzip
import json
import os
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from click.testing import CliRunner

from neardup import DedupConfig, run_dedup
from neardup.cli import main
from neardup.errors import ConfigError
from neardup.features.units import UnitHasher, repeated_units, utf8
from neardup.index.suffix import repeated_substrings
from neardup.io import iter_documents


# ---------------------------------------------------------------- units
def test_line_units_ranges_and_normalised_equality():
    texts = ["Copyright (C) 2020 Foo\nbody text\n\n---\n", "copyright (c)  2020 FOO!\r\nother", "", "\n\n"]
    u = UnitHasher("line").units(texts)
    got = [(int(d), texts[d].encode()[s:e].decode()) for d, s, e in zip(u.docs, u.starts, u.ends)]
    # blank lines and a line without a word ("---") are no units
    assert got == [(0, "Copyright (C) 2020 Foo\n"), (0, "body text\n"), (1, "copyright (c)  2020 FOO!\r\n"),
                   (1, "other")]
    assert u.hashes[0] == u.hashes[2]             # case, spacing and punctuation do not matter
    assert len(set(u.hashes.tolist())) == 3
    assert u.digests[0] == xxhash.xxh64_intdigest(b"Copyright (C) 2020 Foo\n")


def test_paragraph_units_take_the_blank_lines_after_them():
    text = "\n\nfirst para\nline two\n\n  \nsecond\n---\n\nthird"
    u = UnitHasher("paragraph").units([text])
    b = text.encode()
    got = [b[s:e].decode() for s, e in zip(u.starts, u.ends)]
    assert got == ["first para\nline two\n\n  \n", "second\n---\n\n", "third"]
    # removing every unit leaves only the blank lines before the first paragraph
    assert b[:u.starts[0]] == b"\n\n" and u.ends[-1] == len(b)


def test_units_ranges_are_utf8_byte_ranges_never_inside_a_character():
    texts = ["héllo wörld\n日本語の文\n", "\ud800 lone surrogate\nok"]
    u = UnitHasher("line").units(texts)
    for d, s, e in zip(u.docs, u.starts, u.ends):
        utf8(texts[d])[s:e].decode("utf-8", "surrogatepass")   # whole characters


def test_repeated_units_first_occurrence_and_min_docs():
    texts = ["a\nb\na\n", "b\nc\n", "c\nd\n", "a\n"]
    u = UnitHasher("line").units(texts)
    removed, first = repeated_units(u, 1)
    lines = [texts[d].encode()[s:e] for d, s, e in zip(u.docs, u.starts, u.ends)]
    assert [(int(d), lines[k]) for k, d in enumerate(u.docs) if removed[k]] == [
        (0, b"a\n"), (1, b"b\n"), (2, b"c\n"), (3, b"a\n")]
    assert all(lines[first[k]] == lines[k] and first[k] < k for k in np.flatnonzero(removed))
    removed3, _ = repeated_units(u, 3)    # only "a" is in 3 documents... no: "a" is in docs 0 and 3
    assert not removed3.any()
    removed2, _ = repeated_units(u, 2)    # a (docs 0, 3), b (0, 1), c (1, 2): all repeats go, also inside doc 0
    assert removed2.tolist() == removed.tolist()
    with pytest.raises(ValueError):
        repeated_units(u, 0)


# ---------------------------------------------------------------- substrings vs brute force
def _reference(texts, L):
    """Every window of L bytes inside one document that occurs at an earlier position of the joined
    corpus is removed (union), trimmed to character boundaries — by direct search."""
    parts = [utf8(t) for t in texts]
    joined = b"".join(p + b"\xff" for p in parts)
    out, base = [], 0
    for d, p in enumerate(parts):
        marks = np.zeros(len(p) + L, dtype=bool)
        for q in range(len(p) - L + 1):
            w = p[q:q + L]
            if 0 <= joined.find(w, 0, base + q + L - 1) < base + q:   # an occurrence starting before
                marks[q:q + L] = True
        q = 0
        while q < len(p):
            if not marks[q]:
                q += 1
                continue
            a = q
            while q < len(p) and marks[q]:
                q += 1
            b = q
            while a < b and (p[a] & 0xC0) == 0x80:
                a += 1
            while b > a and b < len(p) and (p[b] & 0xC0) == 0x80:
                b -= 1
            if b > a:
                out.append((d, a, b))
        base += len(p) + 1
    return out


def _corpus(seed, n_docs=12):
    rnd = random.Random(seed)
    alphabet = "ab cd\nxé日\u00a0"        # few letters: many accidental repeats, multi-byte characters
    planted = ["the same boilerplate line\nacross a break é", "日本語の文が繰り返される", "zzzzzzzzzzzzzzzzzzzzzzzz"]
    docs = []
    for _ in range(n_docs):
        pieces = []
        for _ in range(rnd.randint(0, 6)):
            if rnd.random() < 0.4:
                pieces.append(rnd.choice(planted))
            else:
                pieces.append("".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30))))
        docs.append("".join(pieces))
    return docs


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("L", [1, 4, 11, 30])
def test_substrings_equal_the_brute_force_reference(seed, L):
    texts = _corpus(seed)
    s = repeated_substrings(texts, min_length=L)
    assert list(zip(s.docs.tolist(), s.starts.tolist(), s.ends.tolist())) == _reference(texts, L)
    for d, a, b, h in zip(s.docs.tolist(), s.starts.tolist(), s.ends.tolist(), s.digests.tolist()):
        piece = utf8(texts[d])[a:b]
        piece.decode("utf-8", "surrogatepass")            # never half a character
        assert h == xxhash.xxh64_intdigest(piece)


def test_substrings_planted_repeats_are_all_removed_after_the_first():
    rnd = random.Random(5)
    block = "".join(rnd.choice("abcdefghij klmnop\n€") for _ in range(300))
    texts = ["intro " + block + " outro", "x" * 60, "before " + block, block + " after", block]
    s = repeated_substrings(texts, min_length=50)
    got = {}
    for d, a, b in zip(s.docs.tolist(), s.starts.tolist(), s.ends.tolist()):
        got.setdefault(d, []).append(utf8(texts[d])[a:b])
    assert 0 not in got                       # the first occurrence stays whole
    for d in (2, 3, 4):   # the block, with the space next to it where that space also came before it
        assert len(got[d]) == 1 and utf8(block) in got[d][0] and len(got[d][0]) <= len(utf8(block)) + 1
    assert got[2][0] == b" " + utf8(block) and got[3][0] == utf8(block) + b" " and got[4][0] == utf8(block)
    assert got[1] == [b"x" * 59]      # 60 x's: the windows at 1..10 repeat the one at 0, which stays


def test_substrings_bad_length_and_empty_corpus():
    with pytest.raises(ValueError, match="min_length"):
        repeated_substrings(["a"], min_length=0)
    assert len(repeated_substrings([], min_length=5)) == 0
    assert len(repeated_substrings(["", ""], min_length=1)) == 0


# ---------------------------------------------------------------- runs, every format
BOILER = "This page uses cookies to improve your experience. Read our policy."
NEWS = "Reuters reported that the committee approved the measure on Tuesday, officials said."


def _docs():
    """Pages with boilerplate paragraphs (blank lines between paragraphs, so lines and paragraphs
    both find them)."""
    return [
        f"Welcome to site one\n\n{BOILER}\n\nOur own story about gardens.\n",
        f"{BOILER}\n\nA different story: the river rose.\n\n{NEWS}\n",
        f"Third page.\n\n{NEWS}\n\n{BOILER}\n",
        f"{BOILER}\n",                                       # becomes empty
        "Fourth page with nothing repeated, naïve café 日本語.\n",
        "",
        f"{BOILER.upper()}\n\nshouting the same words\n",      # the same unit, normalised
    ]


def _write_inputs(folder, docs, fmt):
    ids = [f"d{i}" for i in range(len(docs))]
    if fmt == "jsonl":
        p = folder / "in.jsonl"
        p.write_text("".join(json.dumps({"id": i, "text": t, "lang": "en", "score": k / 3})
                             + "\n" for k, (i, t) in enumerate(zip(ids, docs))), encoding="utf-8")
    elif fmt == "jsonl.gz":
        p = folder / "in.jsonl.gz"
        with gzip.open(p, "wt", encoding="utf-8") as fh:
            for i, t in zip(ids, docs):
                fh.write(json.dumps({"id": i, "text": t, "n": [1, 2]}) + "\n")
    elif fmt == "csv":
        p = folder / "in.csv"
        with open(p, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "text", "other"])
            for i, t in zip(ids, docs):
                w.writerow([i, t, f"x,{i}"])
    elif fmt == "parquet":
        p = folder / "in.parquet"
        pq.write_table(pa.table({"id": ids, "text": docs, "n": list(range(len(docs)))}), p)
    elif fmt == "dir":
        p = folder / "in"
        p.mkdir()
        for k, t in enumerate(docs):
            (p / f"{k:02d}.txt").write_text(t, encoding="utf-8")
        with bz2.open(p / "99.txt.bz2", "wt", encoding="utf-8") as fh:
            fh.write(f"zipped\n{BOILER}\n")
    elif fmt == "lines":
        p = folder / "in.txt"
        p.write_text("".join(t.replace("\n", " ") + "\n" for t in docs if t) + BOILER + "\n", encoding="utf-8")
    return p


def _text_bytes(path, fmt):
    """UTF-8 bytes of every row's text as neardup reads it."""
    return [len(utf8(d.text)) for d in iter_documents([str(path)], fmt="dir" if fmt == "dir" else None)]


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "csv", "parquet", "dir", "lines"])
@pytest.mark.parametrize("method", ["lines", "paragraph", "substrings"])
def test_accounting_in_bytes_for_every_format(tmp_path, fmt, method):
    src = _write_inputs(tmp_path, _docs(), fmt)
    opts = {"method": "substrings", "min_length": 20} if method == "substrings" else \
        {"method": "lines", "unit": "line" if method == "lines" else "paragraph"}
    out = tmp_path / "out"
    r = run_dedup([str(src)], str(out), DedupConfig(workers=1, html=False, **opts))
    c = r["counts"]
    assert c["accounted"] and c["input_rows"] == c["documents"] + c["skipped_records"]
    assert c["input_bytes"] == c["kept_bytes"] + c["removed_bytes"] + c["dropped_bytes"]
    assert c["removed_bytes"] > 0 and c["edited_documents"] >= (1 if fmt == "lines" else 2)   # lines: a row is a line
    kept = out / r["outputs"][0]["output"]
    assert sum(_text_bytes(kept, fmt)) == c["kept_bytes"]         # what was written is what was counted
    assert sum(_text_bytes(src, fmt)) == c["input_bytes"]
    edits = [json.loads(x) for x in (out / "edits.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(edits) == c["input_rows"]
    assert sum(e["bytes"] - e["kept_bytes"] for e in edits if "bytes" in e) == c["removed_bytes"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_other_fields_are_untouched(tmp_path, fmt):
    src = _write_inputs(tmp_path, _docs(), fmt)
    out = tmp_path / "out"
    r = run_dedup([str(src)], str(out), DedupConfig(method="lines", workers=1, html=False))
    kept = out / r["outputs"][0]["output"]
    if fmt == "jsonl":
        a = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()]
        b = [json.loads(x) for x in kept.read_text(encoding="utf-8").splitlines()]
        assert [{k: v for k, v in x.items() if k != "text"} for x in a] == \
               [{k: v for k, v in x.items() if k != "text"} for x in b]
        assert [list(x) for x in a] == [list(x) for x in b]          # field order too
    elif fmt == "csv":
        a = list(csv.reader(open(src, newline="", encoding="utf-8")))
        b = list(csv.reader(open(kept, newline="", encoding="utf-8")))
        assert [(x[0], x[2]) for x in a] == [(x[0], x[2]) for x in b]
    else:
        ta, tb = pq.read_table(src), pq.read_table(kept)
        assert ta.schema == tb.schema
        assert ta.drop(["text"]).equals(tb.drop(["text"]))


def test_edits_audit_and_undo(tmp_path):
    """From the input and edits.jsonl alone: removing the ranges gives the kept text; the hashes are
    those of the removed bytes; each removed line's first occurrence holds the same words."""
    docs = _docs()
    src = _write_inputs(tmp_path, docs, "jsonl")
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), DedupConfig(method="lines", workers=2, batch_size=2, html=False))
    kept = [json.loads(x)["text"] for x in (out / "kept" / "in.jsonl").read_text(encoding="utf-8").splitlines()]
    edits = [json.loads(x) for x in (out / "edits.jsonl").read_text(encoding="utf-8").splitlines()]
    hasher = UnitHasher("line")
    for e, text, new in zip(edits, docs, kept):
        b = utf8(text)
        pieces, pos = [], 0
        for a, z, h, first_row in e["removed"]:
            assert h == f"{xxhash.xxh64_intdigest(b[a:z]):016x}"
            pieces.append(b[pos:a])
            pos = z
            assert first_row <= e["row"]
            src_units = hasher.units([docs[first_row]])
            assert hasher.units([b[a:z].decode()]).hashes[0] in set(src_units.hashes.tolist())
        pieces.append(b[pos:])
        assert b"".join(pieces).decode() == new
        assert e["status"] == ("kept" if not e["removed"] else "emptied" if not new.strip() else "edited")
    assert edits[3]["status"] == "emptied"
    assert kept[6] == "\nshouting the same words\n"              # the upper-case boilerplate went too


def test_min_remaining_drops_and_min_docs(tmp_path):
    src = _write_inputs(tmp_path, _docs(), "jsonl")
    r = run_dedup([str(src)], str(tmp_path / "o1"), DedupConfig(method="lines", min_remaining=5, html=False))
    c = r["counts"]
    assert c["dropped"] == 1 and c["kept"] == c["documents"] - 1 and c["dropped_bytes"] == 0
    edits = [json.loads(x) for x in (tmp_path / "o1" / "edits.jsonl").read_text().splitlines()]
    assert [e["row"] for e in edits if e["status"] == "dropped"] == [3]
    r2 = run_dedup([str(src)], str(tmp_path / "o2"), DedupConfig(method="lines", min_docs=4, html=False))
    # only the boilerplate is in ≥ 4 documents (rows 0, 1, 2, 3, 6); the news paragraph (2) stays
    assert r2["counts"]["removed_spans"] == 4
    assert r2["spans"]["top"][0]["text"].startswith(BOILER[:20].upper()) or \
        r2["spans"]["top"][0]["text"].startswith(BOILER[:20])


def test_workers_and_batches_do_not_change_the_outputs(tmp_path):
    docs = _docs() * 7 + _corpus(3, 30)
    src = _write_inputs(tmp_path, docs, "jsonl")
    for method in ("lines", "substrings"):
        outs = []
        for k, (w, bs) in enumerate([(1, 5000), (2, 3), (2, 1)]):
            o = tmp_path / f"{method}{k}"
            run_dedup([str(src)], str(o), DedupConfig(method=method, workers=w, batch_size=bs, html=False,
                                                      **({"min_length": 15} if method == "substrings" else {})))
            outs.append(((o / "kept" / "in.jsonl").read_bytes(), (o / "edits.jsonl").read_bytes()))
        assert outs[0] == outs[1] == outs[2]


def test_a_run_cut_into_stretches_writes_what_one_suffix_array_writes(tmp_path, monkeypatch):
    """A run over more than PARALLEL_MIN_BYTES of text sorts one stretch per thread and cross-checks
    them; with the threshold lowered to 1 byte a small corpus takes that path (2 and 3 stretches)
    and must write the same rows, edits and counts as one suffix array."""
    import neardup.index.suffix as suffix

    docs = _docs() * 5 + _corpus(4, 40)
    src = _write_inputs(tmp_path, docs, "jsonl")

    def run(name):
        o = tmp_path / name
        r = run_dedup([str(src)], str(o), DedupConfig(method="substrings", min_length=12, workers=1, html=False))
        return ((o / "kept" / "in.jsonl").read_bytes(), (o / "edits.jsonl").read_bytes(),
                r["counts"]["removed_bytes"], r["spans"]["repeated_windows"]), r["spans"]["suffix_arrays"]

    one, arrays = run("one")
    assert arrays == 1 and one[2] > 0
    monkeypatch.setattr(suffix, "PARALLEL_MIN_BYTES", 1)
    for threads in (2, 3):
        monkeypatch.setattr("numba.get_num_threads", lambda t=threads: t)
        got, arrays = run(f"split{threads}")
        assert arrays == threads and got == one


def test_hostile_rows_are_counted(tmp_path):
    big_line = ("word " * 400_000) + "\n"                      # one 2 MB line, twice
    rows = [json.dumps({"text": big_line}), json.dumps({"text": big_line}), "", "{not json",
            json.dumps({"text": "nul\u0000byte\nnul\u0000byte\n"}), json.dumps({"text": "\ud83d lone\n\ud83d lone\n"})]
    raw = ("\n".join(rows) + "\n").encode() + b'{"text": "bad \xff\xfe utf8\\nbad \xff\xfe utf8\\n"}\n'
    src = tmp_path / "in.jsonl"
    src.write_bytes(raw)
    with pytest.raises(Exception, match="in.jsonl:4"):
        run_dedup([str(src)], str(tmp_path / "o0"), DedupConfig(method="lines", html=False))
    assert not (tmp_path / "o0").exists()
    r = run_dedup([str(src)], str(tmp_path / "o1"), DedupConfig(method="lines", on_error="skip", html=False))
    c = r["counts"]
    assert c["input_rows"] == 7 and c["skipped_records"] == 2 and c["accounted"]
    assert c["invalid_utf8_replaced"] == 1
    kept = [json.loads(x)["text"] for x in (tmp_path / "o1" / "kept" / "in.jsonl").read_text().splitlines()]
    assert kept[0] == big_line and kept[1] == ""
    assert kept[2] == "nul\u0000byte\n"
    assert kept[3] == "\ud83d lone\n"                            # a lone surrogate survives, as a JSON escape
    assert kept[4] == "bad \ufffd\ufffd utf8\n"
    r2 = run_dedup([str(src)], str(tmp_path / "o2"), DedupConfig(method="substrings", min_length=8,
                                                                  on_error="skip", html=False))
    assert r2["counts"]["accounted"]


def test_refusals(tmp_path):
    src = _write_inputs(tmp_path, _docs(), "jsonl")
    for bad, what in [({"method": "minhash", "unit": "paragraph"}, "unit"),
                      ({"method": "lines", "keep": "longest"}, "keep"),
                      ({"method": "lines", "min_length": 10}, "min_length"),
                      ({"method": "substrings", "min_docs": 2}, "min_docs"),
                      ({"method": "lines", "id_field": "id", "index": str(tmp_path / "idx")}, "index"),
                      ({"method": "substrings", "min_length": 0}, "min_length")]:
        with pytest.raises(ConfigError, match=what):
            DedupConfig(**bad).resolved()
    res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--method", "lines",
                                    "--threshold", "0.5"])
    assert res.exit_code == 2 and "threshold" in res.output
    res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--method", "lines", "-q"])
    assert res.exit_code == 0, res.output
    assert os.path.exists(tmp_path / "o" / "edits.jsonl") and not os.path.exists(tmp_path / "o" / "clusters.jsonl")


def test_spark_runs_span_methods_only_as_whole_runs():
    """A whole Spark run takes the span step (on its driver: tests/test_spark_engine.py); the DataFrame
    steps (find_clusters, sign_dataframe) have none and say where it runs."""
    pytest.importorskip("pyspark")
    from neardup.engines.spark.session import _check_supported
    for kw in ({"method": "lines"}, {"method": "substrings"}, {"spans": "lines"}):
        cfg = DedupConfig(**kw).resolved()
        _check_supported(cfg, spans=True)
        with pytest.raises(ConfigError, match="DataFrame steps have none"):
            _check_supported(cfg)


def test_cli_summary_and_html(tmp_path):
    src = _write_inputs(tmp_path, _docs(), "jsonl")
    res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--method", "lines",
                                    "--unit", "paragraph"])
    assert res.exit_code == 0, res.output
    assert "bytes removed" in res.output and "edited" in res.output
    html = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "Most repeated spans" in html and "cookies" in html


# ---------------------------------------------------------------- --spans: both steps in one run
def _pages():
    """Pages made mostly of one shared navigation block: whole-document MinHash calls them near
    duplicates on the raw text; with the block removed first they differ. Plus one true copy."""
    nav = "".join(f"Home | Products | Support | Contact | Careers page {k}\n" for k in range(12))
    own = ["A review of the new bicycle lanes along the harbour front and what they cost the city.",
           "Recipe: slow roasted tomatoes with garlic, thyme and a little sugar, ready in three hours.",
           "The chess club meets on Thursdays; beginners get a short lesson before the games start."]
    pages = [nav + o + "\n" for o in own]
    pages.append(pages[0])             # an exact copy of page 0
    return pages


@pytest.mark.parametrize("order", ["after", "before"])
def test_spans_with_a_document_method_accounts_for_every_byte(tmp_path, order):
    src = _write_inputs(tmp_path, _pages() + _docs(), "jsonl")
    out = tmp_path / order
    r = run_dedup([str(src)], str(out), DedupConfig(spans="lines", spans_order=order, workers=2, batch_size=3,
                                                    threshold=0.5, html=False))
    c = r["counts"]
    assert c["accounted"] and c["documents"] == c["kept"] + c["removed"] + c["dropped"]
    assert c["input_bytes"] == c["kept_bytes"] + c["removed_bytes"] + c["duplicate_bytes"] + c["dropped_bytes"]
    assert sum(_text_bytes(out / "kept" / "in.jsonl", "jsonl")) == c["kept_bytes"]
    clusters = [json.loads(x) for x in (out / "clusters.jsonl").read_text().splitlines()]
    edits = [json.loads(x) for x in (out / "edits.jsonl").read_text().splitlines()]
    assert [e["status"] == "duplicate" for e in edits] == [not x["kept"] for x in clusters]
    kept_ids = {x["id"] for x in clusters if x["kept"]}
    if order == "after":
        # on the raw text the pages are near duplicates of page 0: only page 0 stays, and the
        # navigation block is then removed from nothing else (it stays in page 0 once)
        assert {0, 1, 2, 3} & kept_ids == {0}
    else:
        # navigation removed first: the three pages differ; the copy of page 0 is emptied, so
        # it has no signature left and stays as an empty document
        assert {0, 1, 2, 3} <= kept_ids
        assert edits[3]["status"] == "emptied"


def test_spans_refusals(tmp_path):
    for bad, what in [({"spans_order": "before"}, "spans_order"),
                      ({"min_docs": 2}, "min_docs"),
                      ({"spans": "lines", "min_length": 50}, "min_length"),
                      ({"spans": "lines", "id_field": "id", "index": str(tmp_path / "i")}, "index"),
                      ({"method": "lines", "spans": "substrings"}, "spans")]:
        with pytest.raises(ConfigError, match=what):
            DedupConfig(**bad).resolved()
    DedupConfig(spans="substrings", min_length=50, min_remaining=3).resolved()
    DedupConfig(method="simhash", spans="lines", unit="paragraph", min_docs=2).resolved()


@pytest.mark.parametrize("seed", range(6))
def test_substrings_with_whole_copies_equal_the_reference(seed):
    """Documents equal to an earlier one skip the suffix array; the result must not change."""
    texts = _corpus(seed, 10)
    rnd = random.Random(seed)
    texts += [rnd.choice(texts) for _ in range(5)] + ["short", "short"]
    rnd.shuffle(texts)
    for L in (3, 12):
        s = repeated_substrings(texts, min_length=L)
        assert list(zip(s.docs.tolist(), s.starts.tolist(), s.ends.tolist())) == _reference(texts, L)
        assert s.copies > 0
        for d, a, b, h in zip(s.docs.tolist(), s.starts.tolist(), s.ends.tolist(), s.digests.tolist()):
            assert h == xxhash.xxh64_intdigest(utf8(texts[d])[a:b])


@pytest.mark.parametrize("seed", range(4))
def test_marking_does_not_depend_on_the_number_of_stretches(seed):
    """The parallel passes cut the text and the suffix array into stretches; any number of them
    gives the same marks and first occurrences (runs are never split, a carried length of 0 is
    always valid)."""
    from neardup.index.suffix import join, suffix_array
    from neardup.kernels.spans import mark_and_keep

    text, _ = join([utf8(t) for t in _corpus(seed, 20)])

    def run(L, nt):
        marks = np.empty(text.shape[0], dtype=np.int8)
        keep, marked = mark_and_keep(text, suffix_array(text), L, nt, marks)
        return marks.tolist(), keep.tolist(), int(marked)

    for L in (2, 9):
        want = run(L, 1)
        # the first occurrences: one per distinct valid window, the smallest position of each
        windows = {}
        for p in range(text.shape[0] - L + 1):
            w = bytes(text[p:p + L])
            if 0xFF not in w:
                windows.setdefault(w, p)
        assert sorted(want[1]) == sorted(windows.values())
        assert [bytes(text[p:p + L]) for p in want[1]] == sorted(windows)     # in order of their bytes
        assert want[2] == sum(m < 0 for m in want[0])
        for nt in (2, 3, 7, 64):
            assert run(L, nt) == want


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("parts", [2, 3, 5])
def test_substrings_from_several_suffix_arrays_equal_one(seed, parts):
    """Stretches sorted apart and cross-checked by merging their first occurrences give exactly the
    ranges of one suffix array (and the brute-force reference), whatever the cut."""
    from neardup.index.suffix import join, repeated_in_buffer

    texts = _corpus(seed, 16)
    text, starts = join([utf8(t) for t in texts])
    for L in (1, 4, 11):
        want = _reference(texts, L)
        one = repeated_in_buffer(text, starts, L, parts=1)
        got = repeated_in_buffer(text, starts, L, parts=parts)
        assert list(zip(got.docs.tolist(), got.starts.tolist(), got.ends.tolist())) == want
        assert got.windows == one.windows and got.digests.tolist() == one.digests.tolist()
    with pytest.raises(ValueError, match="parts"):
        repeated_in_buffer(text, starts, 4, parts=0)


# ---------------------------------------------------------------- larger than memory
@pytest.mark.parametrize("seed", range(8))
def test_substrings_a_stretch_at_a_time_equal_the_reference(seed):
    """Text sorted a stretch at a time (the budget far below the text: stretches of a few documents,
    some longer than a stretch on their own), cross-checked pair by pair through files, gives the
    ranges, digests and counts of the in-memory sort and of the brute-force reference; copies of
    earlier documents (and empty ones) skip the sorts either way."""
    from neardup.index.suffix import IN_MEMORY_FACTOR, repeated_in_parts

    rnd = random.Random(seed)
    texts = _corpus(seed, 24)
    texts += [rnd.choice(texts) for _ in range(6)] + ["", ""]
    rnd.shuffle(texts)
    parts = [utf8(t) for t in texts]
    total = sum(len(p) + 1 for p in parts)
    for L in (1, 5, 13):
        want = _reference(texts, L)
        whole = repeated_in_parts(parts, L, memory=IN_MEMORY_FACTOR * total)
        assert whole.parts == 1
        for memory in (1, 170, 600, 2400):
            got = repeated_in_parts(parts, L, memory=memory)
            assert got.parts > 1
            assert list(zip(got.docs.tolist(), got.starts.tolist(), got.ends.tolist())) == want
            assert got.digests.tolist() == whole.digests.tolist()
            assert (got.windows, got.copies) == (whole.windows, whole.copies)


def test_equal_documents_are_found_through_colliding_hashes(monkeypatch):
    """Copies are grouped by (XXH64, length) and compared byte for byte: with every hash made equal,
    documents of one length that differ are not taken for copies, and the result is unchanged."""
    import neardup.index.suffix as suffix

    texts = ["abcdefgh", "abcdefgX", "abcdefgh", "zzzzzzzz", "abcdefgX", "abcdefgh", "12345", "zzzzzzzz"]
    parts = [utf8(t) for t in texts]
    real = suffix.repeated_in_parts(parts, 3)
    monkeypatch.setattr(suffix, "range_digests",
                        lambda text, starts, docs, rs, re: np.zeros(np.asarray(docs).shape[0], dtype=np.uint64))
    buf, offsets = suffix._pack(parts)
    collided = suffix._copies(buf, offsets, np.arange(len(parts)), np.diff(offsets))
    assert collided.tolist() == [-1, -1, 0, -1, 1, 0, -1, 3]
    fake = suffix.repeated_in_parts(parts, 3)
    assert real.copies == fake.copies == 4
    for s in (real, fake):
        assert list(zip(s.docs.tolist(), s.starts.tolist(), s.ends.tolist())) == _reference(texts, 3)


def test_a_run_a_stretch_at_a_time_writes_what_the_in_memory_run_writes(tmp_path, monkeypatch):
    """A run whose text does not fit its memory budget spools the text to its work folder and sorts
    it a stretch at a time: the same rows, edits and counts, and nothing left behind."""
    import neardup.index.suffix as suffix

    docs = _docs() * 5 + _corpus(6, 60)
    src = _write_inputs(tmp_path, docs, "jsonl")

    def run(name, workers):
        o = tmp_path / name
        r = run_dedup([str(src)], str(o), DedupConfig(method="substrings", min_length=12, workers=workers,
                                                      html=False))
        return ((o / "kept" / "in.jsonl").read_bytes(), (o / "edits.jsonl").read_bytes(),
                r["counts"]["removed_bytes"], r["spans"]["repeated_windows"],
                r["spans"]["copies_removed_whole"]), r["spans"]["suffix_arrays"], sorted(os.listdir(o))

    want, arrays, files = run("memory", 1)
    assert arrays == 1 and want[2] > 0 and want[4] > 0
    monkeypatch.setattr(suffix, "spans_memory_bytes", lambda: 2000)
    for workers in (1, 2):
        got, arrays, got_files = run(f"stretches{workers}", workers)
        assert arrays > 3 and got == want and got_files == files


def test_the_text_spool_holds_every_byte_in_order(tmp_path):
    from neardup.dedup.spans import TextSpool

    chunks = [np.frombuffer(b"abc", dtype=np.uint8), np.zeros(0, dtype=np.uint8),
              np.frombuffer("日本\xff".encode("utf-8", "surrogatepass"), dtype=np.uint8)]
    for folder in (str(tmp_path), None):
        spool = TextSpool(folder)
        for c in chunks:
            spool.add(c)
        buf = spool.buffer()
        assert bytes(buf[:spool.size]) == b"".join(c.tobytes() for c in chunks) and buf.flags.writeable
        assert os.listdir(tmp_path) == []                   # the file is gone once mapped
    empty = TextSpool(str(tmp_path))
    assert empty.buffer().shape[0] == 1 and os.listdir(tmp_path) == []
    stopped = TextSpool(str(tmp_path))
    stopped.add(chunks[0])
    stopped.close()
    assert os.listdir(tmp_path) == []


def test_max_memory_from_the_command_line_sorts_by_stretches_with_the_same_outputs(tmp_path):
    rnd = random.Random(9)
    words = ["cookie", "banner", "licence", "river", "garden", "naïve", "日本語", "menu", "home", "search"]
    boiler = " ".join(rnd.choice(words) for _ in range(60))
    docs = [boiler + " " + " ".join(rnd.choice(words) for _ in range(rnd.randint(5, 80))) for _ in range(1500)]
    src = _write_inputs(tmp_path, docs, "jsonl")
    outs = []
    for name, extra in (("default", []), ("capped", ["--max-memory", "1"])):
        res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / name), "--method", "substrings",
                                        "--min-length", "40", "--no-html", "-q", *extra])
        assert res.exit_code == 0, res.output
        r = json.loads((tmp_path / name / "report.json").read_text())
        outs.append(((tmp_path / name / "kept" / "in.jsonl").read_bytes(),
                     (tmp_path / name / "edits.jsonl").read_bytes(), r["counts"]["removed_bytes"]))
        # capped: 1 MB of memory for 0.9 MB of text, in stretches of 1 MB / (5t + 5) at most (t threads)
        assert (r["spans"]["suffix_arrays"] == 1) if name == "default" else (r["spans"]["suffix_arrays"] >= 9)
    assert outs[0] == outs[1] and outs[0][2] > 0
