"""Parameters are checked before any input is read, with one line naming the parameter; flags that
do not apply to the method are refused; extreme but valid values work (issue 13, "Tracebacks or
unusable messages" and "Lower")."""
from __future__ import annotations

import json
import sys

import pytest
from hostile import accounted, cli, docs, write_jsonl

from neardup import DedupConfig, run_dedup
from neardup.errors import ConfigError
from neardup.index.lsh import choose_params, datasketch_params, recall_params


@pytest.fixture
def unreadable_input(tmp_path):
    """An input that fails as soon as it is read: a parameter error must come first."""
    p = tmp_path / "broken.jsonl"
    p.write_text("{broken\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("k", [4096, 8192, 65536])
def test_large_num_perm_chooses_bands_without_overflow(k):
    b, r = recall_params(0.8, k)
    assert b * r <= k and 1 - (1 - 0.8 ** r) ** b >= 0.99


def test_datasketch_bands_for_large_k_are_found():
    b, r = datasketch_params(0.8, 4096)
    assert b * r <= 4096 and (b, r) == (163, 25)


def test_num_perm_4096_end_to_end(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", docs(9))
    run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(workers=1, quiet=True, num_perm=4096))
    rep = accounted(tmp_path / "o", 9)
    assert rep["lsh"]["b"] * rep["lsh"]["r"] <= 4096


@pytest.mark.parametrize("args,msg", [
    (["--threshold", "0.01"], "no (b, r) with b*r <= 128 reaches recall"),
    (["--bands", "40"], "explicit bands need"),
    (["--bands", "40", "--rows", "40"], "explicit bands need"),
    (["--keep-field", "n"], "keep_field (--keep-field) must be given only with --keep key; got 'n'"),
    (["--keep", "key"], "keep_field (--keep-field) must be a field name with --keep key"),
    (["--method", "simhash", "--bits", "3", "--threshold", "0.9"], "threshold (--threshold) must be left unset with "
                                                                    "--bits or --compat"),
    (["--method", "sentences", "--threshold", "0.9"], "threshold (--threshold; applies to --method minhash or simhash)"),
    (["--method", "exact", "--ngram", "3"], "ngram (--ngram; applies to --method minhash or simhash)"),
    (["--method", "sentences", "--bits", "2"], "bits (--bits; applies to --method simhash)"),
    (["--method", "minhash", "--sentences", "4"], "sentences (--sentences; applies to --method sentences)"),
    (["--method", "simhash", "--num-perm", "128"], "num_perm (--num-perm; applies to --method minhash)"),
    (["--method", "exact", "--linkage", "components"], "linkage (--linkage; applies to --method minhash or simhash)"),
])
def test_parameter_errors_come_before_reading(tmp_path, unreadable_input, args, msg):
    code, _, err = cli("dedup", unreadable_input, "-o", tmp_path / "o", *args)
    assert code == 2 and msg in err and "malformed JSON" not in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_one_message_shape_names_parameter_allowed_values_and_value():
    from neardup.config import PARAMS

    cases = {"metric": ("cosine", "metric (--metric) must be one of jaccard, containment; got 'cosine'"),
             "num_perm": (1, "num_perm (--num-perm) must be an integer in [2, 65536]; got 1"),
             "threshold": (1.5, "threshold (--threshold) must be a number in (0, 1]; got 1.5"),
             "recall": (1.0, "recall (--recall) must be a number in [0.5, 1); got 1.0"),
             "workers": (-1, "workers (--workers) must be an integer >= 0; got -1"),
             "html": ("yes", "html (--html/--no-html) must be true or false; got 'yes'"),
             "text_field": (3, "text_field (--text-field) must be text; got 3")}
    for name, (value, msg) in cases.items():
        with pytest.raises(ConfigError) as exc:
            DedupConfig(**{name: value}).resolved()
        assert str(exc.value) == msg
    assert {p.group for p in PARAMS} == {"algorithm", "input", "output", "run"}
    assert DedupConfig().group("run") == {"workers": 0, "batch_size": 2000, "max_memory": None, "quiet": False, "progress": "auto",
                                          "resume": False}


def test_the_cli_options_come_from_the_table():
    """Every parameter with a flag is an option of `dedup` with the table's choices and default."""
    import click

    from neardup.cli.dedup import dedup
    from neardup.config import PARAMS

    options = {p.name: p for p in dedup.params if isinstance(p, click.Option)}
    for param in PARAMS:
        if not param.option:
            assert param.name not in options
            continue
        opt = options[param.name]
        assert opt.default == param.default, param.name
        if param.choices is not None:
            assert list(opt.type.choices) == [str(c) for c in param.choices], param.name


def test_every_command_takes_shared_options_from_the_table():
    """An option that names a parameter of the table (--text-field, --on-error, --tokenizer, --method …)
    is the table's in every command: its flag, its type's bounds, and a choice list that is the table's
    or a subset of it; only the default or help may differ where the command says so."""
    import click

    from neardup.cli import main
    from neardup.config import BY_NAME

    def commands(group, prefix=()):
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                yield from commands(cmd, (*prefix, name))
            else:
                yield " ".join((*prefix, name)), cmd

    wider = {("compare", "num_perm")}    # compare's own, documented there: k = 1 shows one slot (no verdict)
    seen = 0
    for name, cmd in commands(main):
        for opt in cmd.params:
            p = BY_NAME.get(opt.name)
            if not isinstance(opt, click.Option) or p is None or not p.option:
                continue
            seen += 1
            assert opt.opts[-1] == p.option.split(" ")[-1].split("/")[0], (name, opt.name)
            if p.choices is not None and isinstance(opt.type, click.Choice):
                assert set(opt.type.choices) <= {str(c) for c in p.choices}, (name, opt.name)
            if isinstance(opt.type, click.types._NumberRangeBase) and (name, opt.name) not in wider:
                assert (opt.type.min, opt.type.max) == (p.lo, p.hi), (name, opt.name)
    assert seen > 60


def test_click_options_refuses_overrides_outside_the_table():
    from neardup.config import click_options

    with pytest.raises(KeyError, match="not a parameter"):
        click_options(("text_field",), defaults={"no_such_option": 1})
    with pytest.raises(RuntimeError, match="offers"):
        click_options(("tokenizer",), choices={"tokenizer": ("word", "nonsense")})
    for lows in ({"num_perm": 3}, {"tokenizer": 1}, {"text_field": 0}):     # only a wider numeric lower bound
        with pytest.raises(RuntimeError, match="lows may only widen"):
            click_options(("num_perm", "tokenizer", "text_field"), lows=lows)


def test_idf_batch_size_above_its_bound_is_one_line(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", docs(3))
    code, _, err = cli("idf", "fit", str(src), "-o", str(tmp_path / "idf.txt"), "--batch-size", "100000")
    assert code == 2 and "batch_size (--batch-size) must be at most 65536" in err and "Traceback" not in err


def test_api_refuses_what_the_cli_refuses():
    with pytest.raises(ConfigError, match="threshold"):
        DedupConfig(method="simhash", bits=3, threshold=0.9).resolved()
    with pytest.raises(ConfigError, match="candidate_bits"):
        DedupConfig(method="simhash", compat="yanyiwu", candidate_bits=8).resolved()
    v = DedupConfig(method="simhash").resolved()            # verified SimHash: the default
    assert (v.bits, v.candidate_bits, v.threshold, v.ngram) == (None, 9, 0.8, 1)
    with pytest.raises(ConfigError, match="scheme"):
        DedupConfig(scheme="nope", workers=2).resolved()
    with pytest.raises(ConfigError, match="tokenizer"):
        DedupConfig(tokenizer="nope", workers=2).resolved()
    with pytest.raises(ConfigError, match="metric"):
        DedupConfig(metric="cosine").resolved()
    with pytest.raises(ConfigError, match="num_perm"):
        DedupConfig(num_perm=True).resolved()
    c = DedupConfig(method="sentences").resolved()
    assert c.resolved() == c and c.threshold is None and c.ngram is None


def test_threshold_one_keeps_only_exact_shingle_set_matches(tmp_path):
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    texts = [base, base, base + " lambda", "Alpha  BETA gamma delta epsilon zeta eta theta iota kappa"]
    src = write_jsonl(tmp_path / "in.jsonl", texts)
    code, _, err = cli("dedup", src, "-o", tmp_path / "o", "--threshold", "1", "--workers", "1", "-q")
    assert code == 0, err
    recs = [json.loads(x) for x in (tmp_path / "o" / "clusters.jsonl").read_text().splitlines()]
    assert [r["kept"] for r in recs] == [True, False, True, False]


def test_convert_without_opencc_is_a_parameter_error(tmp_path, unreadable_input, monkeypatch):
    from neardup.text import normalize

    normalize._converter.cache_clear()
    monkeypatch.setitem(sys.modules, "opencc", None)        # import opencc → ImportError
    try:
        code, _, err = cli("dedup", unreadable_input, "-o", tmp_path / "o", "--convert", "t2s", "--workers", "2")
        assert code == 2 and "needs OpenCC" in err and "malformed JSON" not in err
    finally:
        normalize._converter.cache_clear()


def test_sign_tfidf_without_idf_is_a_usage_error(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", docs(3))
    code, _, err = cli("sign", src, "--method", "simhash", "--weighting", "tfidf")
    assert code == 2 and "--idf" in err and "Traceback" not in err


def test_choose_params_threshold_one_and_bounds():
    p = choose_params(1.0, 128)
    assert (p.b, p.r) == (1, 128)
    with pytest.raises(ValueError):
        choose_params(1.5, 128)


def test_max_memory_is_checked_before_any_input():
    with pytest.raises(ConfigError, match=r"max_memory \(--max-memory\) must be an integer >= 1; got 0"):
        DedupConfig(method="substrings", max_memory=0).resolved()
    with pytest.raises(ConfigError, match="max_memory"):
        DedupConfig(method="minhash", max_memory=100).resolved()
    assert DedupConfig(method="minhash", spans="substrings", max_memory=100).resolved().max_memory == 100
