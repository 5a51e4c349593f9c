"""Hostile input to compare, idf fit, the word files, explain and index add/remove ("Trust, round 3"):
every bad input is one line naming the file and line (or the parameter), never a traceback, and no
file that is not a corpus is read past its documented size limit (``/dev/zero`` stops there)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile import cli, error_line, one_line_error, write_jsonl

from neardup import run_dedup
from neardup.cli import main
from neardup.cli.compare import MAX_DOCUMENT_BYTES
from neardup.config import DedupConfig
from neardup.errors import ConfigError, InputFormatError
from neardup.features.weights import IdfTable
from neardup.text import dictionaries
from neardup.text.dictionaries import (
    MAX_IDF_BYTES,
    MAX_STOP_WORDS_BYTES,
    MAX_USER_DICT_BYTES,
    load_idf,
    load_stop_words,
    load_user_dict,
)

ZERO = "/dev/zero"
pytestmark = pytest.mark.skipif(not os.path.exists(ZERO), reason="needs /dev/zero")
TEXTS = ["the quick brown fox jumps over the lazy dog again and again",
         "the quick brown fox jumps over the lazy dog again and again!",
         "something else entirely different here to say about gardens"]


# -- 1. files that are not a corpus: bounded reads ------------------------------------------------------
def test_compare_refuses_an_endless_file_and_endless_stdin(tmp_path):
    b = tmp_path / "b.txt"
    b.write_text("some words", encoding="utf-8")
    code, _, err = cli("compare", ZERO, b)
    line = one_line_error(err)
    assert code != 0 and ZERO in line and "document A" in line and f"{MAX_DOCUMENT_BYTES >> 20} MiB" in line
    code, _, err = cli("compare", b, ZERO, "--json")
    assert code != 0 and "document B" in one_line_error(err)
    with open(ZERO, "rb") as endless:
        res = CliRunner().invoke(main, ["compare", "-", str(b)], input=endless)
    assert res.exit_code != 0 and (res.exception is None or isinstance(res.exception, SystemExit))
    assert "<stdin>" in one_line_error(res.stderr)


def test_compare_bad_arguments_are_one_line(tmp_path):
    code, _, err = cli("compare", tmp_path / "missing.txt", "-")
    assert code != 0 and "missing.txt" in one_line_error(err)
    code, _, err = cli("compare", "-", "-", input="a text")
    assert code != 0 and "'-'" in one_line_error(err)
    code, _, err = cli("compare", "--text", "a b", "a c", "--scheme", "datasketch-legacy", "--seed", str(2**32))
    assert code != 0 and "--seed" in one_line_error(err)
    code, _, err = cli("compare", "--text", "a b", "a c", "--num-perm", "1", "--explain")
    assert code != 0 and "--num-perm 1" in one_line_error(err)
    code, _, err = cli("compare", "--text", "a b", "a c", "--explain", "--scheme", "datasketch-legacy")
    assert code != 0 and "--scheme datasketch-legacy" in one_line_error(err)
    code, out, err = cli("compare", "--text", "a b c d e f", "a b c d e g", "--num-perm", "1", "--json")
    assert code == 0 and json.loads(out)["parameters"]["num_perm"] == 1


@pytest.mark.parametrize("load,limit,what", [(load_user_dict, MAX_USER_DICT_BYTES, "user dictionary"),
                                             (load_stop_words, MAX_STOP_WORDS_BYTES, "stop-word list"),
                                             (load_idf, MAX_IDF_BYTES, "IDF table")])
def test_word_files_stop_at_their_limit(tmp_path, load, limit, what):
    with pytest.raises(InputFormatError, match=f"^{ZERO}: the {what} is over its size limit of {limit >> 20} MiB"):
        load(ZERO)
    big = tmp_path / "big.txt"                 # a sparse file one byte over the limit
    with open(big, "wb") as fh:
        fh.truncate(limit + 1)
    with pytest.raises(InputFormatError, match=f"big.txt: the {what} is over its size limit"):
        load(big)


def test_config_refuses_an_endless_word_file():
    with pytest.raises(ConfigError, match="size limit"):
        DedupConfig(method="simhash", tokenizer="jieba", user_dict=ZERO).resolved()
    assert Path(ZERO).stat().st_size == 0          # why a stat check alone would not do


@pytest.mark.parametrize("flag", ["--user-dict", "--stop-words", "--idf"])
def test_dedup_word_file_flags_refuse_dev_zero(tmp_path, flag):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    code, _, err = cli("dedup", src, "-o", tmp_path / "o", "--method", "simhash", "--tokenizer", "jieba", flag, ZERO)
    line = error_line(err)
    assert code != 0 and ZERO in line and "size limit" in line and not (tmp_path / "o").exists()


def test_idf_fit_user_dict_dev_zero_is_one_line(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    code, _, err = cli("idf", "fit", src, "-o", tmp_path / "i.txt", "--user-dict", ZERO)
    line = one_line_error(err)
    assert code != 0 and ZERO in line and "64 MiB" in line and not (tmp_path / "i.txt").exists()


def test_idf_fit_refuses_a_table_idf_would_not_read_and_bounds_its_batches(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    monkeypatch.setattr(dictionaries, "MAX_IDF_BYTES", 20)
    code, _, err = cli("idf", "fit", src, "--tokenizer", "word", "-o", tmp_path / "i.txt")
    line = one_line_error(err)
    assert code != 0 and "i.txt" in line and "--min-df" in line and not (tmp_path / "i.txt").exists()
    monkeypatch.undo()
    code, _, err = cli("idf", "fit", src, "--tokenizer", "word", "-o", tmp_path / "i.txt", "--batch-size", 10**9)
    assert code == 2 and "--batch-size" in error_line(err)
    code, _, err = cli("idf", "fit", src, "--tokenizer", "word", "-o", tmp_path / "i.txt")
    assert code == 0, err


# -- 2. IDF values -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["-1e308", "nan", "inf", "-inf", "-1", "1e9", "100.5", "1e400"])
def test_idf_values_outside_0_to_100_are_named_by_line(tmp_path, value):
    p = tmp_path / "idf.txt"
    p.write_text(f"好 1.0\n坏 {value}\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"idf.txt:2: the idf of '坏' must be a finite number in \[0, 100\]"):
        load_idf(p)
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    code, _, err = cli("dedup", src, "-o", tmp_path / "o", "--method", "simhash", "--tokenizer", "word", "--idf", p)
    assert code != 0 and "idf.txt:2" in error_line(err) and not (tmp_path / "o").exists()


def test_idf_bounds_themselves_are_accepted(tmp_path):
    p = tmp_path / "idf.txt"
    p.write_text("好 0\n坏 100\n中 13.9\n", encoding="utf-8")
    assert load_idf(p).values.tolist() == [0.0, 100.0, 13.9]
    with pytest.raises(ValueError, match="the idf of 'b'"):
        IdfTable.from_words({"a": 1.0, "b": -1e308})
    with pytest.raises(ValueError, match="default idf"):
        IdfTable.from_words({"a": 1.0}, float("nan"))


# -- 3. --scheme bottomk where signatures are banded -----------------------------------------------------------
@pytest.mark.parametrize("command", [["dedup", "--id-field", "id"], ["dedup", "--id-field", "id", "--index", "IDX"],
                                     ["pairs"], ["index-create"]])
def test_bottomk_is_refused_where_lsh_bands_signatures(tmp_path, command):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS, ids=[1, 2, 3])
    if command == ["index-create"]:
        args = ["index", "create", tmp_path / "idx"]
    else:
        args = [command[0], src, "-o", tmp_path / "o", *[tmp_path / "idx" if a == "IDX" else a for a in command[1:]]]
    code, _, err = cli(*args, "--scheme", "bottomk")
    line = one_line_error(err)
    assert code != 0 and "(--scheme)" in line and "oph" in line and "'bottomk'" in line
    assert not (tmp_path / "o").exists() and not (tmp_path / "idx").exists()


def test_bottomk_still_signs(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    code, out, err = cli("sign", src, "--scheme", "bottomk", "--num-perm", "8")
    assert code == 0, err
    assert len(out.splitlines()) == 3 and len(json.loads(out.splitlines()[0])["minhash"]) == 8


# -- 4. explain on inputs that changed since the run -------------------------------------------------------------
@pytest.fixture()
def finished(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS, ids=[1, 2, 3])
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), DedupConfig(id_field="id", html=False, quiet=True, workers=1))
    ran = os.stat(out / "report.json").st_mtime_ns
    os.utime(src, ns=(ran - 10**9, ran - 10**9))
    return src, out, ran


def _explain(out):
    return cli("explain", out, "1", "2")


def test_explain_answers_for_an_unchanged_input(finished):
    src, out, _ = finished
    code, text, err = _explain(out)
    assert code == 0 and "in one cluster" in text, err


def test_explain_refuses_an_input_modified_after_the_run(finished):
    src, out, ran = finished
    src.write_bytes(src.read_bytes().replace(b"gardens", b"Gardens"))      # the same size and rows
    os.utime(src, ns=(ran + 2 * 10**9, ran + 2 * 10**9))
    code, _, err = _explain(out)
    line = one_line_error(err)
    assert code != 0 and "in.jsonl changed since the run" in line and "modified" in line


def test_explain_refuses_an_input_whose_text_changed_with_an_old_mtime(finished):
    src, out, ran = finished
    src.write_bytes(src.read_bytes().replace(b"gardens", b"gardens and more"))   # rows unchanged
    os.utime(src, ns=(ran - 10**9, ran - 10**9))
    code, _, err = _explain(out)
    line = one_line_error(err)
    assert code != 0 and "in.jsonl changed since the run" in line and "characters" in line


def test_explain_a_run_with_spans_and_its_options(tmp_path):
    """A run with --spans and its own options (--spans-order before, --unit, --min-docs): explain
    replays the whole-document decision without the span step's options (they are not refused)."""
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS, ids=[1, 2, 3])
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), DedupConfig(id_field="id", html=False, quiet=True, workers=1, spans="lines",
                                                spans_order="before", unit="paragraph", min_docs=2))
    ran = os.stat(out / "report.json").st_mtime_ns
    os.utime(src, ns=(ran - 10**9, ran - 10**9))
    code, text, err = _explain(out)
    assert code == 0 and "Traceback" not in err and text, err


@pytest.mark.parametrize("name,value", [("threshold", 7), ("num_perm", "many"), ("keep", "middle")])
def test_explain_refuses_a_damaged_parameter_in_the_report(finished, name, value):
    """explain rebuilds the run from report.json's parameters and checks them as dedup does: a damaged
    one is one line naming it, not a traceback or a replay under a rule the run never had."""
    src, out, _ = finished
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rep["parameters"][name] = value
    (out / "report.json").write_text(json.dumps(rep), encoding="utf-8")
    code, _, err = _explain(out)
    line = one_line_error(err)
    assert code != 0 and f"{name} (--" in line and "Traceback" not in err


def test_explain_refuses_a_word_file_modified_after_the_run(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", TEXTS, ids=[1, 2, 3])
    idf = tmp_path / "idf.txt"
    idf.write_text("quick 2.0\nfox 3.0\n", encoding="utf-8")
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), DedupConfig(method="simhash", idf=str(idf), id_field="id", html=False,
                                                quiet=True, workers=1))
    ran = os.stat(out / "report.json").st_mtime_ns
    for f in (src, idf):
        os.utime(f, ns=(ran - 10**9, ran - 10**9))
    assert _explain(out)[0] == 0
    idf.write_text("quick 9.0\nfox 3.0\n", encoding="utf-8")
    os.utime(idf, ns=(ran + 2 * 10**9, ran + 2 * 10**9))
    code, _, err = _explain(out)
    line = one_line_error(err)
    assert code != 0 and "idf.txt (--idf) changed since the run" in line


# -- 5. index add / remove ids -------------------------------------------------------------------------------------
BAD_IDS = [("1180591620717411303424", "64 bits"), ("1.5", "float 1.5"), ("true", "bool True"), ("{}", "dict {}"),
           ("[1]", "list [1]"), ("null", "is null")]


@pytest.fixture()
def idx(tmp_path):
    path = tmp_path / "idx"
    assert cli("index", "create", path)[0] == 0
    return path


@pytest.mark.parametrize("raw,shown", BAD_IDS)
def test_index_add_names_the_row_of_a_bad_id(tmp_path, idx, raw, shown):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "ok", "text": "a first document"}\n' + f'{{"id": {raw}, "text": "some words"}}\n',
                    encoding="utf-8")
    code, _, err = cli("index", "add", idx, rows, "--id-field", "id")
    line = one_line_error(err)
    assert code != 0 and "rows.jsonl:2" in line and shown in line
    code, out, err = cli("index", "add", idx, rows, "--id-field", "id", "--on-error", "skip")
    assert code == 0 and "added 1 documents (1 rows skipped)" in out, err


def test_index_add_twice_names_replace(tmp_path, idx):
    rows = write_jsonl(tmp_path / "rows.jsonl", ["one text here", "another text"], ids=[5, "5"])
    assert cli("index", "add", idx, rows, "--id-field", "id")[0] == 0
    code, _, err = cli("index", "add", idx, rows, "--id-field", "id")
    line = one_line_error(err)
    assert code != 0 and "--replace" in line and "replace=True" not in line


def test_index_remove_takes_any_text_as_an_id(tmp_path, idx):
    rows = write_jsonl(tmp_path / "rows.jsonl", ["doc twelve", "doc minus five", "doc text id"], ids=[12, -5, "²"])
    assert cli("index", "add", idx, rows, "--id-field", "id")[0] == 0
    for raw in ("1180591620717411303424", "١٢", "1.5", "+12", "12 "):
        code, out, err = cli("index", "remove", idx, "--", raw)
        assert code == 1 and "Traceback" not in err and f"not in the index: {raw}" in out, (raw, out, err)
    code, out, err = cli("index", "remove", idx, "--", "²", "-5", "12")
    assert code == 0 and out.strip() == "removed 3", err
    code, out, _ = cli("index", "stats", idx, "--json")
    assert json.loads(out)["documents"] == 0


@pytest.mark.parametrize("how", ["file", "pipe"])
def test_an_endless_line_stops_the_read_naming_the_line(tmp_path, monkeypatch, how):
    """A line longer than MAX_LINE_BYTES (an endless stream of one line, /dev/zero) is one error
    naming the input and the line — never memory or disk grown without bound."""
    from neardup.io.formats import base

    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1 << 20)
    for mod in ("neardup.io.formats.lines", "neardup.io.sources"):
        monkeypatch.setattr(f"{mod}.MAX_LINE_BYTES", 1 << 20)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"text": "a b c"}\n' + b"x" * (3 << 20))       # the last line, unended
    mid = tmp_path / "mid.jsonl"
    mid.write_bytes(b'{"text": "a b c"}\n' + b"x" * (9 << 20) + b'\n{"text": "d"}\n')     # longer than a block
    if how == "file":
        args, inp = [str(src)], None
    else:
        args, inp = ["-"], src.read_bytes()
    for cmd in (["dedup", *args, "-o", str(tmp_path / "o"), "-q"], ["sign", *args], ["idf", "fit", *args, "-o",
                                                                                  str(tmp_path / "t.idf")]):
        res = CliRunner().invoke(main, cmd, input=inp)
        assert res.exit_code != 0 and ":2: a line of more than 1 MiB" in res.output, (cmd, res.output)
        assert "Traceback" not in res.output
    if how == "file":
        res = CliRunner().invoke(main, ["dedup", str(mid), "-o", str(tmp_path / "o2"), "-q"])
        assert res.exit_code != 0 and "mid.jsonl:2: a line of more than 1 MiB" in res.output, res.output


def test_bottomk_through_the_library_is_one_config_error(tmp_path):
    """The library's dedup and pairs refuse a scheme LSH cannot band as the command line does."""
    from neardup import DedupConfig, run_pairs
    from neardup.errors import ConfigError

    src = write_jsonl(tmp_path / "in.jsonl", ["a b c d e f", "a b c d e g"])
    for run in (run_dedup, run_pairs):
        with pytest.raises(ConfigError, match=r"scheme \(--scheme\).*bottom-k"):
            run([str(src)], str(tmp_path / run.__name__), DedupConfig(scheme="bottomk", quiet=True))
