"""Per-method parameter classes and the frozen resolved configuration (issue 38, "one parameter
table"): each method's parameters are a frozen class generated from the table, so a parameter of
another method cannot be given to it; the classes hold the methods' defaults and rules; a resolved
configuration is its own frozen type."""
from __future__ import annotations

import dataclasses
import json
import pickle

import numpy as np
import pytest

from neardup.config import (
    BY_NAME,
    DEFAULTS,
    METHODS,
    PARAMS,
    DedupConfig,
    ExactParams,
    LinesParams,
    MethodParams,
    MinHashParams,
    ResolvedConfig,
    SentencesParams,
    SimHashParams,
    SubstringsParams,
)
from neardup.errors import ConfigError

CLASSES = {"minhash": MinHashParams, "simhash": SimHashParams, "sentences": SentencesParams, "exact": ExactParams,
           "lines": LinesParams, "substrings": SubstringsParams}


def test_one_class_per_method_whose_fields_are_the_tables():
    """The fields of a method's class are exactly the table's algorithm parameters that name the method,
    in the table's order, with the table's defaults: nothing is declared twice, so nothing can drift."""
    assert set(CLASSES) == set(METHODS)
    span_options = {"unit", "min_docs", "min_length", "min_remaining"}    # (a whole-document method's --spans)
    for method, cls in CLASSES.items():
        assert cls.method == method and issubclass(cls, MethodParams)
        want = [p for p in PARAMS if p.group == "algorithm" and p.methods is not None
                and (method in p.methods or (method in BY_NAME["spans"].methods and p.name in span_options))]
        fields = dataclasses.fields(cls)
        assert [f.name for f in fields] == [p.name for p in want], method
        assert [f.default for f in fields] == [p.default for p in want], method
    # every algorithm parameter but the method itself belongs to some method
    owned = {n for cls in CLASSES.values() for n in cls.names()}
    assert {p.name for p in PARAMS if p.group == "algorithm"} - owned == {"method"}


def test_the_config_dataclass_and_its_frozen_twin_match_the_table():
    """DedupConfig's fields are the table's parameters with the table's defaults; ResolvedConfig has the
    same fields in the same order."""
    fields = {f.name: f.default for f in dataclasses.fields(DedupConfig)}
    assert fields == {p.name: p.default for p in PARAMS}
    assert [f.name for f in dataclasses.fields(ResolvedConfig)] == [f.name for f in dataclasses.fields(DedupConfig)]


@pytest.mark.parametrize("cls,other", [(MinHashParams, "bits"), (MinHashParams, "sentences"),
                                       (SimHashParams, "num_perm"), (SimHashParams, "verify"),
                                       (SentencesParams, "threshold"), (ExactParams, "ngram"),
                                       (LinesParams, "keep"), (SubstringsParams, "unit"), (LinesParams, "spans")])
def test_another_methods_parameter_cannot_be_expressed(cls, other):
    with pytest.raises(TypeError, match=other):
        cls(**{other: BY_NAME[other].default})


@pytest.mark.parametrize("cls,kw,msg", [
    (MinHashParams, {"threshold": 1.5}, "threshold (--threshold) must be a number in (0, 1]; got 1.5"),
    (MinHashParams, {"num_perm": 1}, "num_perm (--num-perm) must be an integer in [2, 65536]; got 1"),
    (MinHashParams, {"metric": "cosine"}, "metric (--metric) must be one of jaccard, containment; got 'cosine'"),
    (SimHashParams, {"bits": 33}, "bits (--bits) must be an integer in [0, 32]; got 33"),
    (SimHashParams, {"ngram": "3"}, "ngram (--ngram) must be an integer in [1, 64]; got '3'"),
    (LinesParams, {"unit": "word"}, "unit (--unit) must be one of line, paragraph; got 'word'"),
    (SubstringsParams, {"min_length": 0}, "min_length (--min-length) must be an integer >= 1; got 0"),
    (SentencesParams, {"sentences": True}, "sentences (--sentences) must be an integer >= 1; got True"),
])
def test_a_class_checks_the_tables_constraints_when_built(cls, kw, msg):
    with pytest.raises(ConfigError) as exc:
        cls(**kw)
    assert str(exc.value) == msg


def test_values_are_normalised_and_frozen():
    p = MinHashParams(num_perm=np.int64(64), threshold=np.float32(0.5))
    assert type(p.num_perm) is int and type(p.threshold) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.num_perm = 32
    cfg = DedupConfig().resolved()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.threshold = 0.5


def test_defaults_and_rules_live_with_the_method():
    """What a user gets without flags, per method (the documented defaults), and SimHash's two rules."""
    assert DEFAULTS["minhash"] == {"threshold": 0.8, "ngram": 5, "max_drift": 0.05}
    assert DEFAULTS["simhash"] == {"bits": 3, "ngram": 3, "max_drift": 2 / 64}
    assert all(DEFAULTS[m] == {} for m in ("sentences", "exact", "lines", "substrings"))
    m = DedupConfig().resolved()
    assert (m.threshold, m.ngram, m.max_drift) == (0.8, 5, 0.05)
    verified = DedupConfig(method="simhash").resolved()
    assert verified.bits is None and verified.candidate_bits >= 1 and (verified.threshold, verified.ngram) == (0.8, 1)
    classic = DedupConfig(method="simhash", bits=4).resolved()
    assert (classic.bits, classic.ngram, classic.candidate_bits, classic.threshold) == (4, 3, None, None)
    with pytest.raises(ConfigError, match=r"threshold \(--threshold\) must be left unset with --bits"):
        DedupConfig(method="simhash", bits=4, threshold=0.9).resolved()
    with pytest.raises(ConfigError, match=r"index \(--index\) must be used with --verify borderline or minhash"):
        DedupConfig(index="ix", id_field="id", verify="exact").resolved()


def test_using_builds_the_same_run_as_the_flat_fields():
    a = DedupConfig.using(MinHashParams(threshold=0.9, num_perm=64), id_field="id", workers=1).resolved()
    b = DedupConfig(threshold=0.9, num_perm=64, id_field="id", workers=1).resolved()
    assert a == b
    s = DedupConfig.using(SimHashParams(bits=5), text_field="body").resolved()
    assert (s.method, s.bits, s.text_field) == ("simhash", 5, "body")
    spanned = DedupConfig.using(MinHashParams(spans="lines", unit="paragraph", min_docs=2, min_remaining=3)).resolved()
    assert spanned == DedupConfig(spans="lines", unit="paragraph", min_docs=2, min_remaining=3).resolved()
    assert DedupConfig.using(spanned.params).resolved() == spanned
    with pytest.raises(ConfigError, match="not used by --method minhash: unit"):
        DedupConfig.using(MinHashParams(unit="paragraph")).resolved()
    with pytest.raises(ConfigError, match="threshold belong in the method's parameters"):
        DedupConfig.using(MinHashParams(), threshold=0.5)
    with pytest.raises(ConfigError, match="takes a method's parameters"):
        DedupConfig.using({"threshold": 0.5})


@pytest.mark.parametrize("cfg", [DedupConfig(), DedupConfig(metric="containment", num_perm=64),
                                 DedupConfig(method="simhash"), DedupConfig(method="simhash", compat="1e0ng"),
                                 DedupConfig(method="sentences", sentences=5), DedupConfig(method="exact"),
                                 DedupConfig(method="lines", unit="paragraph", min_docs=2),
                                 DedupConfig(method="substrings", min_length=50), DedupConfig(spans="lines"),
                                 DedupConfig(method="simhash", spans="substrings", min_length=40, spans_order="before")])
def test_a_resolved_configs_params_give_it_back(cfg):
    """The method's parameters of a resolved configuration, with its other parameters, resolve to it
    again (resolution is idempotent), and it survives a pickle (a worker process) and JSON (a Spark task)."""
    r = cfg.resolved()
    assert isinstance(r, ResolvedConfig) and type(r.params) is CLASSES[r.method]
    others = {p.name: getattr(r, p.name) for p in PARAMS if p.group != "algorithm"}
    assert DedupConfig.using(r.params, **others).resolved() == r
    assert r.resolved() == r
    assert pickle.loads(pickle.dumps(r)) == r
    assert DedupConfig(**json.loads(json.dumps(dataclasses.asdict(r)))).resolved() == r


def test_a_derived_copy_is_checked_again_when_resolved():
    """dataclasses.replace makes a derived configuration without checks; resolving it checks it."""
    r = DedupConfig().resolved()
    bad = dataclasses.replace(r, threshold=2.0)
    with pytest.raises(ConfigError, match="threshold"):
        bad.resolved()
    with pytest.raises(ConfigError, match="bits"):
        dataclasses.replace(r, bits=3).resolved()


@pytest.mark.parametrize("args,msg", [
    (["--method", "simhash", "--num-perm", "64"], "not used by --method simhash: num_perm (--num-perm; applies to "
                                                  "--method minhash)"),
    (["--method", "simhash", "--scheme", "permutation"], "not used by --method simhash: scheme"),
    (["--method", "sentences", "--ngram", "3"], "not used by --method sentences: ngram"),
    (["--method", "sentences", "--seed", "7"], "not used by --method sentences: seed"),
    (["--method", "minhash", "--top-n", "5"], "not used by --method minhash: top_n"),
    (["--method", "minhash", "--sentences", "5"], "not used by --method minhash: sentences"),
    (["--method", "simhash", "--num-perm", "128"], "not used by --method simhash: num_perm"),     # (its default)
    (["--method", "sentences", "--tokenizer", "word"], "not used by --method sentences: tokenizer"),
])
def test_sign_refuses_another_methods_option_as_dedup_does(tmp_path, args, msg):
    """`sign` took --num-perm with SimHash and --ngram with the sentence signature and ignored them; every
    option now goes through the method's parameters, so a flag that would change nothing is one line."""
    from hostile import cli, write_jsonl

    src = write_jsonl(tmp_path / "in.jsonl")
    for fmt in ("jsonl", "parquet"):
        code, out, err = cli("sign", src, *args, "--format", fmt, "-o", tmp_path / f"sig.{fmt}")
        assert code == 2 and msg in err and "Traceback" not in err, (fmt, err)
        assert out == "" and not (tmp_path / f"sig.{fmt}").exists()


def test_sign_writes_what_it_wrote_before_for_each_method(tmp_path):
    """The fingerprints and signatures `sign` writes did not change with its options' new path: SimHash's
    classic features (word 3-grams), MinHash's 5-grams, and the sentence signature, against values
    computed directly."""
    from hostile import cli, write_jsonl

    from neardup import MinHasher, SentenceSigner, SimHasher

    texts = ["the quick brown fox jumps over the lazy dog again and again", "a second document, not the first"]
    src = write_jsonl(tmp_path / "in.jsonl", texts)
    got = {}
    for method in ("minhash", "simhash", "sentences"):
        code, out, err = cli("sign", src, "--method", method)
        assert code == 0, err
        got[method] = [json.loads(line)[method] for line in out.splitlines()]
    assert got["minhash"] == [row.tolist() for row in MinHasher(num_perm=128, ngram=5).sign_batch(texts).values]
    assert got["simhash"] == [int(v) for v in SimHasher(ngram=3).sign_batch(texts)]
    assert got["sentences"] == [int(v) for v in SentenceSigner(3).sign_batch(texts)]
