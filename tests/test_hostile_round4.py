"""Hostile input, round 4: output files that are word files or not regular files, a rerun of dedup
--index told apart by content, extreme option values (a keep value past float's range, --top-n,
--max-distance), the service's token file, damaged index manifests under verify, --resume and changed
word files, and the folders a failed run made. Each is one clear line (or the right result), never a
traceback, and nothing the user owns is replaced."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat

import pytest
from hostile import BASE, cli, docs, error_line, one_line_error, write_jsonl
from test_resume import _checkpointed

from neardup import DedupConfig, run_dedup
from neardup.errors import ConfigError


# -- 1. idf fit -o follows the one rule for output files ---------------------------------------------------
def test_idf_fit_never_replaces_a_fifo_a_link_a_hard_link_or_a_file_in_an_input_folder(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(BASE, encoding="utf-8")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "target.txt"
    target.write_text("precious", encoding="utf-8")
    link = tmp_path / "link.idf"
    link.symlink_to(target)
    hard = tmp_path / "hard.jsonl"
    os.link(src, hard)
    before = src.read_bytes()
    for out, said in ((fifo, "a FIFO"), (link, "a symbolic link"), (hard, "is the input"),
                      (folder / "idf.txt", "inside the input folder"), (tmp_path, "a folder")):
        code, _, err = cli("idf", "fit", src, folder, "--tokenizer", "word", "-o", out)
        assert code == 2 and said in error_line(err), (out, err)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink() and target.read_text() == "precious"
    assert src.read_bytes() == before and hard.read_bytes() == before and not (folder / "idf.txt").exists()
    code, _, err = cli("idf", "fit", src, "--tokenizer", "word", "-o", tmp_path / "new.idf")
    assert code == 0, err
    assert (tmp_path / "new.idf").read_text(encoding="utf-8").split("\n")[1].startswith("0 ")   # (after the tokenizer)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []   # no temporary left


# -- 2. a word file the command reads is never its output ---------------------------------------------------
def test_an_output_file_is_never_a_word_file_the_command_reads(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    table = tmp_path / "t.idf"
    assert cli("idf", "fit", src, "--tokenizer", "word", "-o", table)[0] == 0
    stop = tmp_path / "stop.txt"
    stop.write_text("the\nof\n", encoding="utf-8")
    words = tmp_path / "user.dict"
    words.write_text("licence 5\n", encoding="utf-8")
    saved = {p: p.read_bytes() for p in (table, stop, words)}
    runs = [(["sign", src, "--method", "simhash", "--weighting", "tfidf", "--idf", table, "-o", table], "--idf"),
            (["sign", src, "--method", "simhash", "--weighting", "tfidf", "--idf", table, "--format", "parquet",
              "-o", table], "--idf"),
            (["sign", src, "--method", "simhash", "--stop-words", stop, "-o", stop], "--stop-words"),
            (["sign", src, "--method", "simhash", "--stop-words", stop, "--format", "npy",
              "-o", tmp_path / "stop.npy"], None),
            (["idf", "fit", src, "--tokenizer", "jieba", "--user-dict", words, "-o", words], "--user-dict")]
    for args, option in runs:
        code, _, err = cli(*args)
        if option is None:
            assert code == 0, err
            continue
        line = error_line(err)
        assert code != 0 and f"the file of {option}" in line, (args, err)
    assert {p: p.read_bytes() for p in saved} == saved


# -- 3. dedup --index: a rerun is the same content, not just the same name, size and time ------------------
def test_a_new_input_with_the_old_name_size_and_time_is_added_to_the_index(tmp_path):
    src = tmp_path / "batch.jsonl"
    first = {"id": "d1", "text": "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"}
    second = {"id": "d2", "text": "ALPHA beta gamma delta epsilon zeta eta theta iota kappa lambda nu"}
    src.write_text(json.dumps(first) + "\n", encoding="utf-8")
    os.utime(src, ns=(10**18, 10**18))
    idx = tmp_path / "idx"
    assert cli("dedup", src, "--id-field", "id", "--index", idx, "-o", tmp_path / "o1", "-q")[0] == 0
    code, _, err = cli("dedup", src, "--id-field", "id", "--index", idx, "-o", tmp_path / "o1", "-q")
    assert code == 0 and json.loads((tmp_path / "o1" / "report.json").read_text())["index"]["rerun"], err
    src.write_text(json.dumps(second) + "\n", encoding="utf-8")          # as long, and given the same time
    os.utime(src, ns=(10**18, 10**18))
    code, _, err = cli("dedup", src, "--id-field", "id", "--index", idx, "-o", tmp_path / "o2", "-q")
    assert code == 0, err
    rep = json.loads((tmp_path / "o2" / "report.json").read_text())["index"]
    assert not rep["rerun"] and rep["added"] == 1
    code, out, _ = cli("index", "stats", idx, "--json")
    assert json.loads(out)["documents"] == 2


# -- 4. --keep key: an integer past float's range is the largest value, not a traceback --------------------
def test_a_keep_value_past_floats_range_ranks_highest(tmp_path):
    src = tmp_path / "in.jsonl"
    huge = "1" + "0" * 400                       # an integer JSON reads whole, past float's range
    rows = [{"id": 0, "score": "1"}, {"id": 1, "score": huge}, {"id": 2, "score": "-" + huge}, {"id": 3, "score": "3"}]
    rows = [f'{{"id": {r["id"]}, "text": "{BASE}", "score": {r["score"]}}}' for r in rows]
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = cli("dedup", src, "--keep", "key", "--keep-field", "score", "--id-field", "id", "-o", out, "-q",
                       "--workers", "1")
    assert code == 0, err
    kept = [json.loads(x)["id"] for x in (out / "clusters.jsonl").read_text().splitlines() if json.loads(x)["kept"]]
    assert kept == [1]


# -- 5. serve --token-file: one line for a file that is not a token ---------------------------------------
def test_serve_token_file_that_is_not_utf8_or_endless_is_one_line(tmp_path, monkeypatch):
    import neardup.cli.index as index_cli

    def served(*a, **k):
        raise AssertionError("the service started with this token file")

    monkeypatch.setattr(index_cli, "_open", served)
    idx = tmp_path / "idx"
    assert cli("index", "create", idx)[0] == 0
    bad = tmp_path / "bad.tok"
    bad.write_bytes(b"\xff\xfe token")
    big = tmp_path / "big.tok"
    big.write_bytes(b"t" * (1 << 20))
    empty = tmp_path / "empty.tok"
    empty.write_bytes(b" \n")
    for path, said in ((bad, "not UTF-8"), (big, "size limit"), (empty, "is empty")):
        code, _, err = cli("serve", "--index", idx, "--port", "0", "--token-file", path)
        assert code == 1 and said in one_line_error(err) and str(path) in err, err
    if os.path.exists("/dev/zero"):
        code, _, err = cli("serve", "--index", idx, "--port", "0", "--token-file", "/dev/zero")
        assert code == 1 and "size limit" in one_line_error(err)


# -- 6. index verify on a manifest that parses but is not one neardup wrote -----------------------------------
MANIFEST_DAMAGE = {
    "n is text": lambda m: m["segments"][0].__setitem__("n", "12"),
    "first_id is text": lambda m: m["segments"][0].__setitem__("first_id", "1"),
    "no dir": lambda m: m["segments"][0].pop("dir"),
    "dir outside": lambda m: m["segments"][0].__setitem__("dir", "../elsewhere"),
    "files a list": lambda m: m["segments"][0].__setitem__("files", [1, 2]),
    "a file record text": lambda m: m["segments"][0]["files"].__setitem__("sigs.npy", "x"),
    "segment a number": lambda m: m["segments"].__setitem__(0, 5),
    "salt text": lambda m: m.__setitem__("wal_salt", "x"),
    "format text": lambda m: m.__setitem__("format", "x"),
    "deleted record a number": lambda m: m.__setitem__("deleted_file", 5),
    "deleted a number": lambda m: m.__setitem__("deleted", 5),
}


@pytest.fixture(scope="module")
def two_segments(tmp_path_factory):
    root = tmp_path_factory.mktemp("idx")
    src = write_jsonl(root / "in.jsonl", ids=list(range(12)))
    idx = root / "idx"
    assert cli("index", "create", idx)[0] == 0
    assert cli("index", "add", idx, src, "--id-field", "id")[0] == 0
    assert cli("index", "add", idx, src, "--id-field", "id", "--replace")[0] == 0   # a second segment, removals
    return idx


@pytest.mark.parametrize("damage", sorted(MANIFEST_DAMAGE))
def test_verify_and_repair_refuse_a_misshapen_manifest_in_one_line(two_segments, tmp_path, damage):
    idx = tmp_path / "idx"
    shutil.copytree(two_segments, idx)
    m = json.loads((idx / "MANIFEST").read_text())
    MANIFEST_DAMAGE[damage](m)
    (idx / "MANIFEST").write_text(json.dumps(m))
    for args in (["index", "verify", idx], ["index", "verify", idx, "--repair", tmp_path / "new"]):
        code, _, err = cli(*args)
        assert code == 1 and "MANIFEST" in one_line_error(err), (args, err)
    code, _, err = cli("index", "stats", idx)          # (refused on open: the manifest's checksum)
    assert code == 1 and one_line_error(err)
    assert not (tmp_path / "new").exists()


def test_repair_refuses_unreadable_parameters_in_one_line(two_segments, tmp_path):
    for config in ("{not json", "[1]", None):
        idx = tmp_path / "idx"
        shutil.rmtree(idx, ignore_errors=True)
        shutil.copytree(two_segments, idx)
        m = json.loads((idx / "MANIFEST").read_text())
        if config is None:
            del m["meta"]["config"]
        else:
            m["meta"]["config"] = config
        (idx / "MANIFEST").write_text(json.dumps(m))
        code, _, err = cli("index", "verify", idx, "--repair", tmp_path / "new")
        assert code == 1 and "parameters are unreadable" in one_line_error(err), err
        assert not (tmp_path / "new").exists()


def test_an_intact_index_still_verifies_and_repairs(two_segments, tmp_path):
    code, out, err = cli("index", "verify", two_segments, "--repair", tmp_path / "new")
    assert code == 0 and "repaired into" in out and "12 documents" in out, err


# -- 7. index query --max-distance beyond what the index finds --------------------------------------------------
def test_index_query_max_distance_beyond_the_index_is_one_line(tmp_path):
    idx = tmp_path / "idx"
    assert cli("index", "create", idx, "--method", "simhash", "--bits", "3")[0] == 0
    src = write_jsonl(tmp_path / "in.jsonl", ids=list(range(12)))
    assert cli("index", "add", idx, src, "--id-field", "id")[0] == 0
    code, _, err = cli("index", "query", idx, "--text", BASE, "--max-distance", "30")
    assert code == 2 and "--max-distance 30" in one_line_error(err) and "[0, 3]" in err
    code, out, err = cli("index", "query", idx, "--text", BASE + " copy 0", "--max-distance", "3")
    assert code == 0 and json.loads(out)["matches"][0]["id"] == 0, err


# -- 8. --top-n of any size signs as a top-n of every feature ---------------------------------------------------
def test_a_huge_top_n_signs_like_keeping_every_feature(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    outs = []
    for n in ("999999999999", "1000"):
        code, out, err = cli("sign", src, "--method", "simhash", "--top-n", n)
        assert code == 0, err
        outs.append(out)
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == 12


# -- 9. --resume: a word file changed since the checkpoint is another run -----------------------------------------
def test_resume_refuses_a_checkpoint_made_with_other_word_file_contents(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", docs(30))
    stop = tmp_path / "stop.txt"
    stop.write_text("licence\nsoftware\n", encoding="utf-8")
    cfg = DedupConfig(workers=1, quiet=True, html=False, method="simhash", bits=3, stop_words=str(stop), resume=True)
    out = _checkpointed(tmp_path, src, cfg)
    stop.write_text("the\nof\nand\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        run_dedup([str(src)], str(out), cfg)
    msg = str(refused.value)
    assert "the file of --stop-words changed since" in msg and "cannot be read" not in msg, msg
    with pytest.raises(ConfigError) as refused:        # any other difference: named once, not as unreadable
        run_dedup([str(src)], str(out), dataclasses.replace(cfg, bits=4))
    assert "made with bits=3, this run has bits=4" in str(refused.value)
    assert "cannot be read" not in str(refused.value)


# -- 10. a failed run leaves none of the folders it made for -o -------------------------------------------------
def test_a_failed_run_removes_the_parent_folders_it_made(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"text": "a b c"}\n{"text": 5}\n', encoding="utf-8")
    code, _, err = cli("dedup", src, "-o", tmp_path / "a" / "b" / "c" / "out", "-q")
    assert code != 0 and "bad.jsonl:2" in one_line_error(err)
    assert not (tmp_path / "a").exists()
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mine.txt").write_text("mine")
    code, _, _ = cli("dedup", src, "-o", tmp_path / "kept" / "b" / "out", "-q")
    assert code != 0 and sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["mine.txt"]
    good = write_jsonl(tmp_path / "good.jsonl")
    assert cli("dedup", good, "-o", tmp_path / "x" / "y" / "out", "-q")[0] == 0
    assert (tmp_path / "x" / "y" / "out" / "report.json").is_file()


# -- 11. pairs of no documents: an empty join, not a kernel reading past an empty array ----------------------------
@pytest.mark.parametrize("rows", ["", '{"text": 5}\n'])
def test_pairs_of_no_documents_is_an_empty_join(tmp_path, rows):
    src = tmp_path / "in.jsonl"
    src.write_text(rows, encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = cli("pairs", src, "-o", out, "-q", "--on-error", "skip")
    assert code == 0, err
    counts = json.loads((out / "report.json").read_text())["counts"]
    assert counts["pairs"] == 0 and counts["documents"] == 0


# -- 12. a UTF-16 or UTF-32 text input is named as such, not read as garbage --------------------------------------
@pytest.mark.parametrize("name, encoding", [("in.jsonl", "utf-16"), ("in.csv", "utf-16-be"), ("in.txt", "utf-16"),
                                            ("in.txt", "utf-32")])
def test_a_utf16_or_utf32_text_input_is_refused_naming_its_encoding(tmp_path, name, encoding):
    src = tmp_path / name
    body = {"in.jsonl": '{"text": "a b c d e f"}\n', "in.csv": "id,text\n1,a b c d e f\n", "in.txt": "a b c d e f\n"}[name]
    bom = {"utf-16": "", "utf-16-be": "\ufeff", "utf-32": ""}[encoding]     # (Python's utf-16/32 write one)
    src.write_bytes((bom + body).encode(encoding))
    want = encoding[:6].upper()
    for args in (["dedup", src, "-o", tmp_path / "out", "-q"], ["sign", src], ["idf", "fit", src, "-o", tmp_path / "t"]):
        code, _, err = cli(*args)
        line = one_line_error(err)
        assert code != 0 and f"is {want} text" in line and name in line, (args, err)
    assert not (tmp_path / "out").exists() and not (tmp_path / "t").exists()


# -- 13. eval reads dedup's clusters in either of its formats ------------------------------------------------------
def test_eval_reads_the_parquet_clusters_dedup_writes(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", ids=list(range(12)))
    for fmt in ("jsonl", "parquet"):
        code, _, err = cli("dedup", src, "--id-field", "id", "--format", fmt, "-o", tmp_path / fmt, "-q")
        assert code == 0, err
    code, out, err = cli("eval", tmp_path / "parquet" / "clusters.parquet", "--labels",
                         tmp_path / "jsonl" / "clusters.jsonl", "--json")
    assert code == 0, err
    assert json.loads(out)["f1"] == 1.0 and json.loads(out)["documents"] == 12
    (tmp_path / "fake.parquet").write_bytes(b"PAR1 and then nothing")
    code, _, err = cli("eval", tmp_path / "fake.parquet", "--labels", tmp_path / "jsonl" / "clusters.jsonl")
    assert code == 1 and "cannot read as Parquet" in one_line_error(err)
