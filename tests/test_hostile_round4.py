"""Hostile input, round 4: output files that are word files or not regular files, a rerun of dedup
--index told apart by content, extreme option values (a keep value past float's range, --top-n,
--max-distance), the service's token file, damaged index manifests under verify, --resume and changed
word files, and the folders a failed run made. Each is one clear line (or the right result), never a
traceback, and nothing the user owns is replaced."""
from __future__ import annotations

import os
import stat

from hostile import BASE, cli, error_line, one_line_error, write_jsonl


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
    assert (tmp_path / "new.idf").read_text(encoding="utf-8").startswith("0 ")
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
