"""MinHash's parameters (:class:`MinHashParams`) and the rules that tie them together."""
from __future__ import annotations

from ..index.lsh import choose_params
from ..sketches.minhash import MinHasher
from .method import MethodParams, method_params, word_files
from .table import BY_NAME


@method_params("minhash")
class MinHashParams(MethodParams):
    """``--method minhash``: Jaccard (or containment) estimated from k hash values per document, LSH
    bands for candidates, verification (the fields: the table's parameters of MinHash)."""

    defaults = {"threshold": 0.8, "ngram": 5, "max_drift": 0.05}

    @classmethod
    def resolve(cls, c) -> None:
        if c.user_dict is not None and c.tokenizer != "jieba":
            raise BY_NAME["user_dict"].refuse(c.user_dict, "given only with --tokenizer jieba (auto shingles with "
                                                           "word tokens)")
        word_files(c)
        cls.fill_defaults(c)
        # the sketch and the bands exist (a bound that depends on two parameters: k and the threshold)
        MinHasher(num_perm=c.num_perm, scheme=c.scheme, seed=c.seed, tokenizer=c.tokenizer, ngram=c.ngram)
        choose_params(c.threshold, c.num_perm, c.lsh_mode, c.recall, c.bands, c.rows)
        if c.verify == "exact" and c.scheme.startswith("datasketch"):
            raise BY_NAME["verify"].refuse(c.verify, "minhash or none with a datasketch scheme (exact works "
                                                     "with the native schemes: oph, permutation, bottomk)")

    @classmethod
    def index_refusal(cls, c) -> str | None:
        if c.verify == "exact":
            return "used with --verify borderline or minhash (the index keeps signatures, not shingle sets)"
        return None


__all__ = ["MinHashParams"]
