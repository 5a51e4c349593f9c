"""The methods as strategies (neardup.dedup.methods): one per name of the parameter table, each
signer giving values in the layout its method declares (what every engine allocates, ships and
stores by), and the run's steps reaching the method through method_of."""
from array import array

import numpy as np
import pytest

from neardup.config import METHODS as NAMES
from neardup.config import DedupConfig
from neardup.dedup.find import find_run
from neardup.dedup.methods import METHODS, method_of
from neardup.dedup.signing import make_signer
from neardup.dedup.tables import Corpus

TEXTS = ["the quick brown fox jumps over the lazy dog. it was a sunny day in the park today.",
         "the quick brown fox jumps over the lazy dog. it was a sunny day in the park today!",
         "an entirely different document about index segments, logs and manifests on disk.",
         "", "   "]

WHOLE = [("minhash", {}), ("minhash", {"num_perm": 2, "lsh_mode": "datasketch"}), ("minhash", {"metric": "containment"}),
         ("minhash", {"scheme": "permutation", "num_perm": 64}), ("simhash", {}), ("simhash", {"bits": 3}),
         ("sentences", {}), ("exact", {})]


def test_one_method_per_name_of_the_parameter_table():
    assert sorted(METHODS) == sorted(NAMES)
    assert all(m.name == name for name, m in METHODS.items())
    assert method_of("simhash") is METHODS["simhash"] is method_of(DedupConfig(method="simhash").resolved())


def test_the_steps_take_only_a_resolved_configuration():
    """A configuration that was never checked does not reach a step (DedupConfig(...).resolved() does)."""
    with pytest.raises(TypeError, match="resolved configuration"):
        method_of(DedupConfig(method="simhash"))
    with pytest.raises(TypeError, match="resolved configuration"):
        make_signer(DedupConfig())


def _variants(n: int, seed: int) -> list[str]:
    """Chains of edited copies of a few base texts (each copy a few words away from the one before)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(400)]
    out = []
    for _ in range(4):
        doc = list(rng.choice(words, 60))
        for _ in range(n // 4):
            doc = list(doc)
            for _ in range(2):
                doc[int(rng.integers(len(doc)))] = str(rng.choice(words))
            out.append(" ".join(doc))
    return out + out[:6:2] + ["", "short text"]        # (exact copies too: every method has pairs)


@pytest.mark.parametrize("method,opts", [*WHOLE, ("minhash", {"verify": "exact"}), ("minhash", {"linkage": "components"}),
                                         ("simhash", {"bits": 6, "max_drift": 0.1})])
def test_the_finish_rule_is_the_finders(method, opts):
    """Finishing a run's verified pairs by its method's rule (what the Spark engine does per component)
    gives the clusters the method's finder gave: the rule is written once."""
    from neardup.dedup.finish import finish
    from neardup.dedup.verify import minhasher, verification_config

    texts = _variants(48, 7)
    cfg = DedupConfig(method=method, **opts).resolved()
    values, empty, sizes = make_signer(cfg)(texts)[:3]
    rule = method_of(cfg).finish_rule(cfg)
    feats = None
    if rule.sets:
        feats = minhasher(verification_config(cfg) if method == "simhash" else cfg).shingler.features(texts)
    corpus = Corpus(ids=list(range(len(texts))), lengths=array("q", [len(t) for t in texts]))
    res = find_run(values, empty, sizes, feats if cfg.verify == "exact" else None, cfg, corpus,
                   texts_of=lambda docs: [(int(d), texts[int(d)]) for d in docs])
    done = finish(len(texts), res.pairs_lo, res.pairs_hi, res.pairs_sim, res.how(),
                  rule.similarity(values, sizes, feats), threshold=rule.threshold, max_drift=rule.max_drift,
                  linkage=rule.linkage, oracle=rule.oracle(values, feats) if rule.linkage == "bounded" else None,
                  containment=rule.containment, sizes=sizes, lengths=np.asarray(corpus.lengths, dtype=np.int64))
    assert res.pairs_lo.shape[0] > 0, "no pairs: the test would show nothing"
    assert np.array_equal(done.clusters.cluster, res.clusters.cluster)
    assert np.allclose(done.clusters.similarity, res.clusters.similarity)
    assert np.array_equal(done.decided, res.clusters.decided)


@pytest.mark.parametrize("method,opts", WHOLE)
def test_the_signer_gives_the_declared_layout(method, opts):
    cfg = DedupConfig(method=method, **opts).resolved()
    m = method_of(cfg)
    values, empty, sizes = make_signer(cfg)(TEXTS)[:3]
    assert values.dtype == m.dtype(cfg) == m.no_values(cfg).dtype
    k = m.slots(cfg)
    assert values.shape == ((len(TEXTS),) if k is None else (len(TEXTS), k))
    assert m.no_values(cfg).shape == ((0,) if k is None else (0, k))
    assert values.nbytes == len(TEXTS) * m.row_bytes(cfg)
    assert empty.tolist() == [False, False, False, True, True]
    assert (sizes is not None) == m.sizes
    assert not m.spans


@pytest.mark.parametrize("method,opts", WHOLE)
def test_the_method_finds_the_near_copy(method, opts):
    """Through find_run (the steps' call, the method's finder): the first two texts (one character
    apart) are one cluster for MinHash (k = 128 or 64) and SimHash; a different document and the empty
    ones stay alone for every method."""
    cfg = DedupConfig(method=method, **opts).resolved()
    values, empty, sizes = make_signer(cfg)(TEXTS)[:3]
    corpus = Corpus(ids=list(range(len(TEXTS))), lengths=array("q", [len(t) for t in TEXTS]))

    def texts_of(docs):
        return [(int(d), TEXTS[int(d)]) for d in docs]
    result = find_run(values, empty, sizes, None, cfg, corpus, texts_of=texts_of)
    rep = result.clusters.cluster.tolist()
    if method in ("minhash", "simhash") and opts.get("num_perm", 128) >= 64:
        assert rep[1] == rep[0] == 0
    assert rep[2:] == [2, 3, 4]
    assert result.params["method"] in (method, "equal")


def test_span_methods_sign_through_the_span_step_and_find_nothing_whole():
    for name in ("lines", "substrings"):
        cfg = DedupConfig(method=name).resolved()
        m = method_of(cfg)
        assert m.spans
        with pytest.raises(Exception, match="inside documents"):
            m.find(np.zeros(0), np.zeros(0, bool), None, None, cfg, None, None, 0)
        with pytest.raises(Exception, match="no index"):
            m.index_kind(cfg)
