"""SimHash's parameters (:class:`SimHashParams`) and the rules that tie them together: a peer's
features with ``--compat``, IDF tables and stop words, and the two rules (classic within ``--bits``;
verified, the default)."""
from __future__ import annotations

from ..similarity.simhash import candidate_radius
from ..text.tokenize import keyword_features
from .method import MethodParams, method_params, word_files
from .table import BY_NAME

#: verified SimHash's defaults (``--method simhash`` without ``--bits`` or ``--compat``), chosen by measurement
#: on the Chinese man pages (benchmarks/bench_simhash_verified.py): unigram tf features (characters for
#: Chinese) find near-duplicates within few bits, and the exact Jaccard at MinHash's threshold decides them
SIMHASH_VERIFIED = {"threshold": 0.8, "ngram": 1, "max_drift": 0.05}


@method_params("simhash")
class SimHashParams(MethodParams):
    """``--method simhash``: weighted features folded into 64 bits; pairs within ``candidate_bits``
    verified by exact Jaccard (the default), or within ``--bits`` accepted unchecked (the classic rule)
    (the fields: the table's parameters of SimHash). ``defaults``: the classic rule's."""

    defaults = {"bits": 3, "ngram": 3, "max_drift": 2 / 64}

    @classmethod
    def resolve(cls, c) -> None:
        if c.compat is not None:
            _compat_rules(c)
        else:
            _feature_rules(c)
        word_files(c)
        if c.bits is None and c.compat is None:    # verified SimHash (the default)
            for name, value in SIMHASH_VERIFIED.items():
                if getattr(c, name) is None:
                    setattr(c, name, value)
            if c.candidate_bits is None:
                c.candidate_bits = candidate_radius(c.recall)
        else:
            for name in ("threshold", "candidate_bits"):
                if getattr(c, name) is not None:
                    raise BY_NAME[name].refuse(getattr(c, name), "left unset with --bits or --compat (pairs within "
                                                                 "k bits are accepted unchecked; without them "
                                                                 "SimHash verifies its candidates)")
        for name, value in cls.defaults.items():   # (a peer's own n-gram; no bits beside a verified radius)
            if getattr(c, name) is None and not (c.compat and name == "ngram") and not (
                    name == "bits" and c.candidate_bits is not None):
                setattr(c, name, value)


def _compat_rules(c) -> None:
    """``--compat``: the peer's own features, so the options that shape features are left unset."""
    files = {"1e0ng": ("idf", "user_dict", "stop_words"), "jieba-analyse": ("user_dict",)}.get(c.compat, ())
    own = [n for n in ("weighting", "ngram", *files) if getattr(c, n) is not None]
    own += ["tokenizer"] if c.tokenizer != "word" else []
    if own:
        hint = {"1e0ng": "; jieba keywords weighted by tf-idf, as crawlers feed simhash.Simhash: "
                         "--compat jieba-analyse",
                "jieba-analyse": ": jieba's dictionary; --idf and --stop-words are "
                                 "jieba.analyse's set_idf_path and set_stop_words"}.get(c.compat, "")
        raise BY_NAME[own[0]].refuse(getattr(c, own[0]), f"left unset with --compat {c.compat} (the "
                                                         f"peer's own features are used{hint})")
    if c.compat == "1e0ng" and c.top_n is not None:
        raise BY_NAME["top_n"].refuse(c.top_n, "left unset with --compat 1e0ng (the library weighs every window)")
    if c.idf == "jieba":
        raise BY_NAME["idf"].refuse(c.idf, f"a file with --compat {c.compat} (the peer's own table is its default)")


def _feature_rules(c) -> None:
    """neardup's own features: an IDF table means tf-idf weights; word tables mean single-word features."""
    if c.weighting == "tfidf" and c.idf is None:
        raise BY_NAME["idf"].refuse(c.idf, "jieba or a file with --weighting tfidf (the IDF table)")
    if c.idf is not None:
        if c.weighting not in (None, "tfidf"):
            raise BY_NAME["weighting"].refuse(c.weighting, "tfidf with --idf")
        c.weighting = "tfidf"
    for name in ("idf", "stop_words"):     # tables of single words
        if getattr(c, name) not in (None, "jieba") and c.tokenizer == "char":
            raise BY_NAME[name].refuse(getattr(c, name), "given with --tokenizer word, jieba or auto (its "
                                                         "words are tokens; char shingles are code points)")
        if getattr(c, name) is not None:
            if c.ngram is None:
                c.ngram = 1
            elif c.ngram != 1:
                raise BY_NAME["ngram"].refuse(c.ngram, f"1 with {BY_NAME[name].option} (its words are "
                                                       "single tokens)")
    keywords = keyword_features(c.ngram, c.weighting, c.stop_words)     # where auto segments with jieba
    if c.user_dict is not None and not (c.tokenizer == "jieba" or (c.tokenizer == "auto" and keywords)):
        raise BY_NAME["user_dict"].refuse(c.user_dict, "given only with --tokenizer jieba, --tokenizer auto "
                                                       "with keywords (--idf or --stop-words, --ngram 1), "
                                                       "or --compat yanyiwu (auto shingles with word tokens)")


__all__ = ["SIMHASH_VERIFIED", "SimHashParams"]
