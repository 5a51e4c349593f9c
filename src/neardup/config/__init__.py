"""The parameters of a deduplication run, declared once.

:data:`PARAMS` (:mod:`.table`) is the one table of constraints (scikit-learn's idea): each
parameter's group, type, allowed values or range, the methods whose result it changes, its default,
its command-line flag and its help. Each method's parameters are a frozen class generated from it
(:class:`MinHashParams`, :class:`SimHashParams`, …, one module each), which also holds the method's
defaults and the rules that tie its parameters together. :meth:`DedupConfig.resolved` checks a
configuration against the table and those rules before any input is read and gives a frozen
:class:`ResolvedConfig`, the only configuration the dedup's steps take. The command line builds its
options from the same table (:func:`click_options`), so an allowed value is written in one place.

Every refusal has one shape, naming the parameter (field and flag), what is allowed and what was
given::

    metric (--metric) must be one of jaccard, containment; got 'cosine'
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .._procs import cpu_count
from ..errors import ConfigError, InputFormatError
from ..text.normalize import _converter
from .exact import ExactParams
from .lines import LinesParams
from .method import CLASSES, MethodParams, params_class
from .minhash import MinHashParams
from .options import click_options
from .param import Param
from .sentences import SentencesParams
from .simhash import SIMHASH_VERIFIED, SimHashParams
from .substrings import SubstringsParams
from .table import (
    _DOCUMENTS,
    _MINHASH,
    _SHINGLED,
    _SPANS,
    BY_NAME,
    METHODS,
    NOT_BANDED,
    PARAMS,
    SPAN_OPTIONS,
    check_banded,
    inapplicable,
    simhash_verified,
)

#: per method: what a user gets without flags (for parameters whose table default is None)
DEFAULTS = {m: dict(CLASSES[m].defaults) for m in METHODS}


class _Groups:
    """What a configuration, as given or resolved, gives by the table's groups."""

    def group(self, name: str) -> dict:
        """The parameters of one group (``algorithm``, ``input``, ``output``, ``run``) as a dict."""
        return {p.name: getattr(self, p.name) for p in PARAMS if p.group == name}


@dataclass
class DedupConfig(_Groups):
    """A deduplication run's parameters as given (see :data:`PARAMS` for each one's constraints and
    help; :class:`MinHashParams` and its siblings hold one method's). :meth:`resolved` checks them
    and gives the :class:`ResolvedConfig` that the dedup's steps take."""

    method: str = "minhash"
    threshold: float | None = None       # minhash (Jaccard or containment); verified simhash (exact Jaccard)
    tokenizer: str = "word"
    convert: str | None = None           # Chinese script conversion before signing (t2s, tw2sp, …)
    ngram: int | None = None
    num_perm: int = 128
    scheme: str = "oph"
    seed: int = 1
    bits: int | None = None              # simhash: accept within k bits, unchecked (the classic rule)
    candidate_bits: int | None = None    # simhash, verified (no --bits): the candidate radius k_c
    weighting: str | None = None         # simhash: uniform | tf (default) | tfidf
    idf: str | None = None               # simhash: IDF table for tfidf ("jieba" or a file)
    user_dict: str | None = None         # simhash: user dictionary file (jieba tokenizer / yanyiwu)
    stop_words: str | None = None        # simhash: stop-word file
    top_n: int | None = None             # simhash: keep the N heaviest features
    compat: str | None = None            # simhash: a peer's fingerprints (yanyiwu | 1e0ng | jieba-analyse)
    sentences: int = 3
    unit: str = "line"                   # lines: line | paragraph
    min_docs: int = 1                    # lines: remove units found in ≥ N documents
    min_length: int = 100                # substrings: shortest repeated span, bytes
    max_memory: int | None = None        # substrings: MB the suffix sort may take (None: half of RAM)
    spans: str | None = None             # whole-document methods: also remove spans (lines | substrings)
    spans_order: str = "after"           # with spans: after | before the whole-document step
    min_remaining: int = 0               # spans: drop documents left shorter than this
    keep: str = "first"                  # first | longest | key
    keep_field: str | None = None
    metric: str = "jaccard"
    verify: str = "borderline"
    lsh_mode: str = "recall"
    recall: float = 0.99
    bands: int | None = None
    rows: int | None = None
    linkage: str = "bounded"             # bounded | components
    max_drift: float | None = None       # bounded linkage: members stay ≥ t − max_drift (default per method)
    workers: int = 0                     # 0: all cores
    batch_size: int = 2000
    text_field: str = "text"
    id_field: str | None = None
    on_error: str = "raise"
    input_format: str | None = None
    clusters_format: str = "jsonl"
    pairs: bool = False                  # also write pairs.parquet (every verified pair)
    samples: int = 12
    html: bool = True
    index: str | None = None             # --index IDX: dedup against a persistent index and grow it
    replace: bool = False                # --index: a kept row with an indexed id replaces that document
    quiet: bool = False
    progress: str = "auto"               # auto (bars on a terminal) | bar | json | none
    resume: bool = False                 # keep pass 1 beside OUTDIR; continue from it after an interruption

    @classmethod
    def using(cls, params: MethodParams, **others) -> DedupConfig:
        """A configuration of the method of ``params`` (e.g. ``MinHashParams(threshold=0.9)``, checked
        when built) with the input, output and run parameters ``others``."""
        if not isinstance(params, MethodParams):
            raise ConfigError(f"DedupConfig.using takes a method's parameters (MinHashParams, SimHashParams, …); "
                              f"got {type(params).__name__}")
        algorithm = [k for k in others if k in BY_NAME and BY_NAME[k].group == "algorithm"]
        if algorithm:
            raise ConfigError(f"DedupConfig.using: {', '.join(algorithm)} belong in the method's parameters "
                              f"({type(params).__name__}), not beside them")
        return cls(method=params.method, **{n: getattr(params, n) for n in params.names()}, **others)

    def resolved(self) -> ResolvedConfig:
        """The configuration checked against :data:`PARAMS` and the rules that tie parameters together
        (:class:`~neardup.errors.ConfigError` in one shape), with the method's defaults filled in and
        ``workers`` capped at the CPUs this process may use — all before any input is read — as a
        frozen :class:`ResolvedConfig`."""
        try:
            return _resolve(self)
        except (InputFormatError, ImportError) as exc:     # a file a parameter names (word lists, IDF tables)
            raise ConfigError(str(exc)) from None           # or an optional dependency it needs


class _Resolved(_Groups):
    """What :class:`ResolvedConfig` adds to its generated fields."""

    def resolved(self) -> ResolvedConfig:
        """Checked again (a copy made by :func:`dataclasses.replace` is not checked when made)."""
        return DedupConfig(**dataclasses.asdict(self)).resolved()

    @property
    def params(self) -> MethodParams:
        """The method's parameters alone, as its frozen class (:class:`MinHashParams`, …)."""
        cls = CLASSES[self.method]
        return cls(**{n: getattr(self, n) for n in cls.names()})


_RESOLVED_DOC = """A checked configuration (:meth:`DedupConfig.resolved`), frozen: the method's
    defaults filled in, word-file paths absolute, ``workers`` capped. The dedup's steps take this type;
    a step never changes it (:func:`dataclasses.replace` makes a derived one)."""


def _frozen(cls) -> type:
    """The frozen twin of the dataclass ``cls``: its fields, in its order, with its defaults."""
    fields = [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(cls)]
    made = dataclasses.make_dataclass("ResolvedConfig", fields, bases=(_Resolved,), frozen=True,
                                      namespace={"__doc__": _RESOLVED_DOC})
    made.__module__ = __name__       # (pickled by name: a worker process or a Spark task finds it here)
    return made


ResolvedConfig = _frozen(DedupConfig)


def _resolve(cfg: DedupConfig) -> ResolvedConfig:
    c = DedupConfig(**{p.name: p.check(getattr(cfg, p.name)) for p in PARAMS})
    given = [p.name for p in PARAMS if getattr(c, p.name) != p.default]
    wrong = inapplicable(c.method, given, c.spans)
    if wrong:
        raise ConfigError(f"not used by --method {c.method}: {'; '.join(wrong)}")
    if c.keep == "key" and not c.keep_field:
        raise BY_NAME["keep_field"].refuse(c.keep_field, "a field name with --keep key (the row with the "
                                                         "largest value is kept)")
    if c.keep_field and c.keep != "key":
        raise BY_NAME["keep_field"].refuse(c.keep_field, "given only with --keep key")
    method = CLASSES[c.method]
    method.resolve(c)            # the method's defaults and the rules that tie its parameters together
    if c.index is not None:
        why = None
        if not c.id_field:
            why = "given with --id-field (ids name the documents in the index across runs)"
        elif (refusal := method.index_refusal(c)) is not None:
            why = refusal
        elif c.spans is not None:
            why = "used without --spans (the index keeps whole documents)"
        elif c.convert is not None:
            why = "used without --convert (the index does not record the conversion)"
        elif not str(c.index).strip():
            why = "a folder path"
        if why:
            raise BY_NAME["index"].refuse(c.index, why)
    elif c.replace:
        raise BY_NAME["replace"].refuse(c.replace, "used with --index (it replaces indexed documents)")
    if c.convert is not None:
        _converter(c.convert)          # OpenCC is there (not found first inside a worker)
    if c.workers == 0 or c.workers > cpu_count():
        c.workers = cpu_count()
    return ResolvedConfig(**dataclasses.asdict(c))


__all__ = ["BY_NAME", "DEFAULTS", "METHODS", "NOT_BANDED", "PARAMS", "SIMHASH_VERIFIED", "SPAN_OPTIONS", "DedupConfig",
           "ExactParams", "LinesParams", "MethodParams", "MinHashParams", "Param", "ResolvedConfig", "SentencesParams",
           "SimHashParams", "SubstringsParams", "check_banded", "click_options", "cpu_count", "inapplicable",
           "params_class", "simhash_verified", "_DOCUMENTS", "_MINHASH", "_SHINGLED", "_SPANS"]
