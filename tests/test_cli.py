import json
import os
import subprocess
import sys
import tempfile

from click.testing import CliRunner

import neardup
from neardup.cli import main


def run_cli(*args, input=None):
    res = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    return res


def lines(out):
    return [json.loads(x) for x in out.strip().splitlines()]


def test_sign_files_minhash_matches_api(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_text("one two three four five six seven eight", encoding="utf-8")
    b.write_text("one two three four five six seven nine", encoding="utf-8")
    res = run_cli("sign", str(a), str(b), "--files", "--num-perm", "16", "--scheme", "permutation", "--seed", "3")
    assert res.exit_code == 0, res.output
    recs = lines(res.output)
    assert [r["id"] for r in recs] == [str(a), str(b)]
    expect = neardup.MinHasher(num_perm=16, scheme="permutation", seed=3).sign_batch(
        [a.read_text(), b.read_text()]).values
    assert [r["minhash"] for r in recs] == expect.tolist()


def test_txt_is_one_document_per_line_in_sign_as_in_dedup(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("first line words here\nsecond line other words\n", encoding="utf-8")
    recs = lines(run_cli("sign", str(a), "--num-perm", "16").output)
    assert [r["id"] for r in recs] == [f"{a}:1", f"{a}:2"]
    expect = neardup.MinHasher(num_perm=16).sign_batch(["first line words here", "second line other words"])
    assert [r["minhash"] for r in recs] == expect.values.tolist()
    res = run_cli("dedup", str(a), "-o", str(tmp_path / "o"), "-q")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "o" / "report.json").read_text())["counts"]["input_rows"] == 2


def test_sign_jsonl_simhash_and_sentences(tmp_path):
    p = tmp_path / "docs.jsonl"
    docs = [{"doc": "d1", "body": "hello world, this is a test."}, {"doc": "d2", "body": "another text!"}]
    p.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    res = run_cli("sign", str(p), "--method", "simhash", "--text-field", "body", "--id-field", "doc")
    assert res.exit_code == 0, res.output
    recs = lines(res.output)
    assert [r["id"] for r in recs] == ["d1", "d2"]
    assert recs[0]["simhash"] == neardup.SimHasher().sign(docs[0]["body"])
    res = run_cli("sign", str(p), "--method", "sentences", "--text-field", "body")
    assert lines(res.output)[1] == {"id": f"{p}:2", "sentences": neardup.SentenceSigner().sign("another text!")}


def test_bad_json_line_names_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"text": "ok"}\n{"text": broken}\n{"text": "fine"}\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["sign", str(p)])
    assert res.exit_code != 0
    assert f"{p}:2: malformed JSON" in res.output
    res = CliRunner().invoke(main, ["sign", str(p), "--on-error", "skip"])
    assert res.exit_code == 0
    assert len(lines(res.stdout)) == 2
    assert "skipped 1 bad records" in res.stderr and f"{p}:2" in res.stderr


def test_missing_text_field_lists_fields(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text('{"content": "x", "url": "u"}\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["sign", str(p)])
    assert res.exit_code != 0
    assert "no field 'text'" in res.output and "'content', 'url'" in res.output


def test_bad_options_are_usage_errors(tmp_path):
    res = CliRunner().invoke(main, ["sign", "x", "--scheme", "nope"])
    assert res.exit_code == 2
    res = CliRunner().invoke(main, ["sign", "x", "--compat", "yanyiwu"])
    assert res.exit_code == 2 and "--compat" in res.output


def test_console_script_reads_stdin():
    res = subprocess.run([sys.executable, "-m", "neardup.cli", "sign", "-", "--files", "--method", "simhash"],
                         input="stdin document text here", capture_output=True, text=True, check=True)
    rec = json.loads(res.stdout)
    assert rec == {"id": "<stdin>", "simhash": neardup.SimHasher().sign("stdin document text here")}
    res = subprocess.run([sys.executable, "-m", "neardup.cli", "sign", "-", "--method", "simhash"],
                         input='{"text": "one"}\n{"text": "two"}\n', capture_output=True, text=True, check=True)
    assert [r["id"] for r in lines(res.stdout)] == ["<stdin>:1", "<stdin>:2"]


def test_simhash_compat_yanyiwu_on_news_content(shared):
    path = shared / "corpora/yanyiwu_simhash_testdata/news_content"
    expected = json.loads((shared / "corpora/yanyiwu_simhash_testdata/expected.json").read_text())
    want = next(a["expected"] for a in expected["asserts"] if a["test"] == "make(news_content, topN=5) -> simhash")
    res = run_cli("sign", "--method", "simhash", "--compat", "yanyiwu", "--top-n", "5", "--files", str(path))
    assert res.exit_code == 0, res.output
    assert lines(res.output)[0]["simhash"] == int(want)


def test_lsh_command_shows_curve():
    res = run_cli("lsh", "--threshold", "0.8", "--json")
    out = json.loads(res.output)
    assert (out["b"], out["r"]) == (16, 6) and out["p_at_threshold"] >= 0.99
    res = run_cli("lsh", "--threshold", "0.8", "--lsh", "datasketch")
    assert "b = 9 bands × r = 13 rows" in res.output


def test_public_face_and_python_dash_m():
    for name in neardup.__all__:
        assert getattr(neardup, name) is not None, name
    for err in (neardup.ConfigError, neardup.InputFormatError, neardup.InputChangedError, neardup.OutputError,
                neardup.IndexConfigError, neardup.IndexStoreError, neardup.NotAnIndexError,
                neardup.DuplicateKeyError, neardup.ReadOnlyError):
        assert issubclass(err, neardup.NeardupError)
    res = subprocess.run([sys.executable, "-m", "neardup", "--version"], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == f"neardup, version {neardup.__version__}"
    from importlib.metadata import version
    assert neardup.__version__ == version("neardup")


def test_read_only_install_caches_kernels_elsewhere(tmp_path, monkeypatch):
    from neardup._cache import cache_dir_for

    kernels = tmp_path / "kernels"
    (kernels / "__pycache__").mkdir(parents=True)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert cache_dir_for(str(kernels)) is None
    monkeypatch.setattr(os, "access", lambda path, mode: False)       # a read-only installation
    assert cache_dir_for(str(kernels)).startswith(os.path.join(tempfile.gettempdir(), "neardup-numba-"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir_for(str(kernels)) is None


def test_spark_submit_entry_is_the_dedup_command():
    """The file spark-submit runs imports only the command line: the engine module is imported once,
    by the dedup command, never by the entry file itself."""
    code = ("import sys, runpy; sys.argv = ['spark_submit', '--help']\n"
            "try:\n    runpy.run_module('neardup.cli.spark_submit', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('engine loaded:', 'neardup.engines.spark' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and "--engine" in res.stdout and "OUTDIR" in res.stdout, res.stderr
    assert res.stdout.strip().endswith("engine loaded: False")


def test_the_command_line_asks_for_small_pages_unless_told(monkeypatch):
    """`neardup` turns NumPy's huge-page hint off for itself and its workers (compaction cost on a
    full page cache), and leaves a NUMPY_MADVISE_HUGEPAGE the user set alone."""
    from numpy._core.multiarray import _set_madvise_hugepage

    from neardup._arrays import prefer_small_pages

    before = _set_madvise_hugepage(True)
    try:
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
        prefer_small_pages()
        assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "1" and _set_madvise_hugepage(True) is True
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        prefer_small_pages()
        assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0" and _set_madvise_hugepage(True) is False
    finally:
        _set_madvise_hugepage(before)
