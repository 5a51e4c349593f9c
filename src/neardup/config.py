"""The parameters of a deduplication run, declared once.

:data:`PARAMS` is the one table of constraints (scikit-learn's idea): each parameter's group, type,
allowed values or range, the methods whose result it changes, its default, its command-line flag
and its help. :meth:`DedupConfig.resolved` checks a configuration against the table (and the few
rules that tie parameters together) before any input is read; ``neardup dedup`` builds its options
from the same table (:func:`click_options`), so an allowed value is written in one place.

Every refusal has one shape, naming the parameter (field and flag), what is allowed and what was
given::

    metric (--metric) must be one of jaccard, containment; got 'cosine'

Groups: ``algorithm`` (what is a duplicate and which row is kept: the result), ``input`` (how rows
are read), ``output`` (what is written), ``run`` (how the work is done: never the result).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ._procs import cpu_count
from .errors import ConfigError, InputFormatError
from .index.lsh import choose_params
from .io.formats import FORMATS
from .similarity.simhash import candidate_radius
from .sketches.minhash import SCHEMES, MinHasher
from .sketches.simhash import COMPATS, WEIGHTINGS
from .text.dictionaries import file_keys, idf_tokenizer_mismatch
from .text.normalize import CONVERSIONS, _converter
from .text.tokenize import TOKENIZERS, keyword_features

METHODS = ("minhash", "simhash", "sentences", "exact", "lines", "substrings")
_MINHASH = ("minhash",)
_SHINGLED = ("minhash", "simhash")
_DOCUMENTS = ("minhash", "simhash", "sentences", "exact")   # remove whole documents
_SPANS = ("lines", "substrings")                              # remove repeated spans inside documents


@dataclass(frozen=True)
class Param:
    """One parameter's constraints. ``choices`` or a range (``lo``/``hi``, open or closed) bound the
    value; ``nullable``: None is allowed (the method's default, or "not given"); ``methods``: the
    methods whose result it changes (set for another method it is refused: a flag that silently does
    nothing misleads); ``flag``: the command-line option ("" for the Python API only)."""

    name: str
    group: str
    kind: type
    default: object = None
    choices: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    methods: tuple | None = None
    flag: str | None = None
    help: str = ""

    @property
    def option(self) -> str:
        return self.flag if self.flag is not None else "--" + self.name.replace("_", "-")

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        what = {int: "an integer", float: "a number", bool: "true or false", str: "text"}[self.kind]
        if self.lo is None and self.hi is None:
            return what
        if self.hi is None:
            return f"{what} {'>' if self.lo_open else '>='} {self.lo:g}"
        if self.lo is None:
            return f"{what} {'<' if self.hi_open else '<='} {self.hi:g}"
        return f"{what} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"

    def refuse(self, value, why: str | None = None) -> ConfigError:
        label = f"{self.name} ({self.option})" if self.option else self.name
        return ConfigError(f"{label} must be {why or self.allowed()}; got {value!r}")

    def check(self, value):
        """``value`` normalised (NumPy scalars to Python), or :class:`ConfigError` in the one shape."""
        if value is None:
            if self.nullable:
                return None
            raise self.refuse(value)
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise self.refuse(value)
            return bool(value)
        if self.kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise self.refuse(value)
            value = int(value)
        elif self.kind is float:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise self.refuse(value)
            value = float(value)
            if math.isnan(value):
                raise self.refuse(value)
        elif not isinstance(value, str):
            raise self.refuse(value)
        if self.choices is not None and value not in self.choices:
            raise self.refuse(value)
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            raise self.refuse(value)
        if self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi):
            raise self.refuse(value)
        return value


def _params() -> tuple[Param, ...]:
    """The table. Allowed values that name things of other modules (schemes, tokenizers, formats,
    conversions) are taken from those modules."""
    schemes, tokenizers = tuple(SCHEMES), tuple(TOKENIZERS)
    A, I, O, R = "algorithm", "input", "output", "run"
    return (
        Param("method", A, str, "minhash", choices=METHODS,
              help="Whole documents: minhash, simhash, sentences or exact. Spans inside documents: lines "
                   "(repeated lines or paragraphs) or substrings (exact repeated substrings, suffix array)."),
        Param("threshold", A, float, None, lo=0.0, hi=1.0, lo_open=True, nullable=True, methods=_SHINGLED,
              help="Similarity to call two documents duplicates (default 0.8): MinHash's (Jaccard or "
                   "containment); SimHash's verified candidates, Jaccard of word 5-gram shingles checked exactly."),
        Param("metric", A, str, "jaccard", choices=("jaccard", "containment"), methods=_MINHASH,
              help="MinHash: Jaccard, or containment of either document in the other."),
        Param("tokenizer", A, str, "word", choices=tokenizers, methods=_SHINGLED,
              help="How text becomes tokens: word, char, jieba, or auto (word for shingles; for tf-idf keywords "
                   "jieba on Chinese documents and word elsewhere, as the measured table favours)."),
        Param("convert", A, str, None, choices=CONVERSIONS, nullable=True, methods=_DOCUMENTS,
              help="Convert traditional Chinese to simplified before signing (OpenCC; pip install 'neardup[zh]')."),
        Param("ngram", A, int, None, lo=1, hi=64, nullable=True, methods=_SHINGLED,
              help="Shingle size (default: 5 minhash; SimHash: 1 verified, 3 with --bits or --compat and in sign)."),
        Param("num_perm", A, int, 128, lo=2, hi=65536, methods=_MINHASH, help="MinHash signature length k."),
        Param("scheme", A, str, "oph", choices=schemes, methods=_MINHASH, help="MinHash scheme."),
        Param("seed", A, int, 1, lo=0, hi=2**64 - 1, methods=_MINHASH, help="MinHash seed."),
        Param("bits", A, int, None, lo=0, hi=32, nullable=True, methods=("simhash",),
              help="SimHash: accept every pair within k bits, unchecked (the classic rule; the default with "
                   "--compat: 3). Without it SimHash is verified: candidates within --candidate-bits, decided by "
                   "--threshold."),
        Param("candidate_bits", A, int, None, lo=0, hi=32, nullable=True, methods=("simhash",),
              help="Verified SimHash: the candidate radius k_c in bits (default: the smallest that finds a pair "
                   "of feature cosine 0.98 with probability --recall)."),
        Param("weighting", A, str, None, choices=WEIGHTINGS, nullable=True, methods=("simhash",),
              help="SimHash feature weights: uniform, tf (default) or tfidf (with --idf)."),
        Param("idf", A, str, None, nullable=True, methods=("simhash",),
              help="SimHash IDF table for --weighting tfidf: 'jieba' (jieba's Chinese table) or a file of 'word idf' "
                   "lines (jieba's format; `neardup idf fit` writes one); --ngram 1 by default. With --compat "
                   "yanyiwu: a file in place of cppjieba's table; with --compat jieba-analyse: as "
                   "jieba.analyse.set_idf_path."),
        Param("user_dict", A, str, None, nullable=True, methods=("simhash", "minhash"),
              help="A user dictionary for Chinese segmentation, jieba's 'word [freq] [tag]' lines (with --tokenizer "
                   "jieba; SimHash also with auto and keywords (--idf or --stop-words), or --compat yanyiwu, as "
                   "cppjieba reads it)."),
        Param("stop_words", A, str, None, nullable=True, methods=("simhash",),
              help="SimHash: a file of stop words, one per line, dropped before weighting (--ngram 1 by default; "
                   "with --compat yanyiwu: in place of cppjieba's list; with --compat jieba-analyse: besides "
                   "jieba's, as jieba.analyse.set_stop_words)."),
        Param("top_n", A, int, None, lo=1, nullable=True, methods=("simhash",),
              help="SimHash: keep the N heaviest features (with --compat yanyiwu: its length rule when not given; "
                   "with --compat jieba-analyse: extract_tags's topK, 20 when not given)."),
        Param("compat", A, str, None, choices=COMPATS, nullable=True, methods=("simhash",),
              help="SimHash: a peer's fingerprints exactly: yanyiwu (cppjieba keywords, compiled), 1e0ng "
                   "(PyPI simhash of the text) or jieba-analyse (PyPI simhash of jieba.analyse.extract_tags(text, "
                   "topK=--top-n, withWeight=True), compiled)."),
        Param("sentences", A, int, 3, lo=1, methods=("sentences",), help="How many longest sentences."),
        Param("unit", A, str, "line", choices=("line", "paragraph"), methods=("lines",),
              help="lines: the unit removed when repeated: a line, or a paragraph (non-blank lines and the "
                   "blank lines after them)."),
        Param("min_docs", A, int, 1, lo=1, methods=("lines",),
              help="lines: remove a unit only when it occurs in at least N documents (1: every repeat, also "
                   "within one document); its first occurrence always stays."),
        Param("min_length", A, int, 100, lo=1, methods=("substrings",),
              help="substrings: the shortest repeated span removed, in UTF-8 bytes."),
        Param("spans", A, str, None, choices=_SPANS, nullable=True, methods=_DOCUMENTS,
              help="Also remove repeated spans inside the documents, in the same run: lines or substrings "
                   "(their options apply: --unit, --min-docs, --min-length, --min-remaining)."),
        Param("spans_order", A, str, "after", choices=("after", "before"), methods=_DOCUMENTS,
              help="With --spans: after (whole-document duplicates go first, then repeated spans among the "
                   "documents kept) or before (spans go first; documents are compared on what is left)."),
        Param("min_remaining", A, int, 0, lo=0, methods=_SPANS,
              help="lines, substrings: drop a document left with fewer than N characters (white space not "
                   "counted) after its repeats are removed; 0 keeps every document (emptied ones are counted)."),
        Param("lsh_mode", A, str, "recall", choices=("recall", "datasketch"), methods=_MINHASH, flag="--lsh",
              help="How to choose LSH bands: a recall target at the threshold, or datasketch's optimum."),
        Param("recall", A, float, 0.99, lo=0.5, hi=1.0, hi_open=True, methods=_SHINGLED,
              help="LSH recall target at the threshold."),
        Param("bands", A, int, None, lo=1, nullable=True, methods=_MINHASH, help="Explicit LSH bands b (with --rows)."),
        Param("rows", A, int, None, lo=1, nullable=True, methods=_MINHASH,
              help="Explicit LSH rows per band r (with --bands)."),
        Param("verify", A, str, "borderline", choices=("minhash", "exact", "none", "borderline"), methods=_MINHASH,
              help="How candidates are decided: borderline by the full signature estimate unless it lies "
                   "within a few standard errors of the threshold, then exactly on shingles re-read from the "
                   "texts of just those documents; minhash by the estimate alone (the least time and memory); "
                   "exact on the exact shingle sets (keeps 8 bytes per distinct shingle in memory); none: not at "
                   "all."),
        Param("linkage", A, str, "bounded", choices=("bounded", "components"), methods=_SHINGLED,
              help="bounded: merge most-similar pairs first and never put documents below threshold − drift "
                   "together; components: plain transitive closure (union-find)."),
        Param("max_drift", A, float, None, lo=0.0, hi=1.0, nullable=True, methods=_SHINGLED,
              help="How far below the threshold a cluster member may be from the others and from its "
                   "representative (default 0.05; simhash 2/64, i.e. 2 bits)."),
        Param("keep", A, str, "first", choices=("first", "longest", "key"), methods=_DOCUMENTS,
              help="Which row of a cluster is kept: the first, the longest, or the largest --keep-field."),
        Param("keep_field", A, str, None, nullable=True, methods=_DOCUMENTS,
              help="With --keep key: the field whose largest value is kept."),
        Param("text_field", I, str, "text", help="Field holding the text."),
        Param("id_field", I, str, None, nullable=True,
              help="Field holding the document id (default: the row's position)."),
        Param("input_format", I, str, None, choices=FORMATS, nullable=True,
              help="Force the input format (default: by suffix; folders are one document per file; '-' and "
                   "pipes are JSONL)."),
        Param("on_error", I, str, "raise", choices=("raise", "skip"),
              help="A bad row stops the run (raise), or is skipped and counted (skip)."),
        Param("clusters_format", O, str, "jsonl", choices=("jsonl", "parquet"), flag="--format", methods=_DOCUMENTS,
              help="Format of the clusters file."),
        Param("pairs", O, bool, False, flag="--pairs", methods=_DOCUMENTS,
              help="Also write OUTDIR/pairs.parquet: every verified pair (id_a, id_b, row_a, row_b, similarity, "
                   "decided: identical/estimate/exact, same_cluster)."),
        Param("samples", O, int, 12, lo=0, flag="", help="Sample duplicate pairs in the report."),
        Param("html", O, bool, True, flag="--html/--no-html", help="Write report.html."),
        Param("index", O, str, None, nullable=True, methods=_SHINGLED,
              help="A persistent index (a folder; created when absent): rows are also checked against every "
                   "document in it, and the kept rows are added to it. Needs --id-field."),
        Param("replace", O, bool, False, flag="--replace", methods=_SHINGLED,
              help="With --index: a kept row whose id is already in the index replaces that document (without "
                   "it such a row is refused, as by `index add`)."),
        Param("workers", R, int, 0, lo=0,
              help="Signing processes (0: all cores; more than the cores this process may use is capped)."),
        Param("batch_size", R, int, 2000, lo=1, help="Documents per signing batch."),
        Param("max_memory", R, int, None, lo=1, nullable=True, methods=("substrings",),
              help="substrings: MB of memory the suffix sort may take (default: half of physical memory). Text "
                   "above a tenth of it is sorted a stretch at a time, through files in the run's work folder; "
                   "the result is the same."),
        Param("quiet", R, bool, False, flag="-q --quiet", help="No progress bars or summary."),
        Param("progress", R, str, "auto", choices=("auto", "bar", "json", "none"),
              help="Progress on stderr, stage by stage: auto (bars when stderr is a terminal), bar, json (one "
                   "JSON object per line per event: stage start, advance, end, with counts and totals; -q "
                   "leaves them on) or none."),
        Param("resume", R, bool, False, flag="--resume", methods=_DOCUMENTS,
              help="Keep the signatures of pass 1 beside OUTDIR (.OUTDIR.neardup-resume, removed on success); "
                   "rerun with --resume after an interruption to continue from them (the inputs and parameters "
                   "must be unchanged)."),
    )


PARAMS: tuple[Param, ...] = _params()
BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
#: verified SimHash's defaults (``--method simhash`` without ``--bits`` or ``--compat``), chosen by measurement
#: on the Chinese man pages (benchmarks/bench_simhash_verified.py): unigram tf features (characters for
#: Chinese) find near-duplicates within few bits, and the exact Jaccard at MinHash's threshold decides them
SIMHASH_VERIFIED = {"threshold": 0.8, "ngram": 1, "max_drift": 0.05}
DEFAULTS = {  # per method: what a user gets without flags (for parameters whose table default is None)
    "minhash": {"threshold": 0.8, "ngram": 5, "max_drift": 0.05},
    "simhash": {"bits": 3, "ngram": 3, "max_drift": 2 / 64},
    "sentences": {},
    "exact": {},
    "lines": {},
    "substrings": {},
}


def inapplicable(method: str, given, spans: str | None = None) -> list[str]:
    """The parameters among ``given`` that do not change ``method``'s result (nor, with ``--spans``,
    the span method's), with the methods they do."""
    out = []
    for name in given:
        p = BY_NAME.get(name)
        if name == "spans_order" and spans is None and method not in _SPANS:
            out.append("spans_order (--spans-order; applies with --spans)")
        elif p is not None and p.methods is not None and method not in p.methods and spans not in p.methods:
            out.append(f"{name} ({p.option}; applies to --method {' or '.join(p.methods)})")
    return out


@dataclass
class DedupConfig:
    """A deduplication run's parameters (see :data:`PARAMS` for each one's constraints and help)."""

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

    def group(self, name: str) -> dict:
        """The parameters of one group (``algorithm``, ``input``, ``output``, ``run``) as a dict."""
        return {p.name: getattr(self, p.name) for p in PARAMS if p.group == name}

    def resolved(self) -> DedupConfig:
        """A copy checked against :data:`PARAMS` and the rules that tie parameters together
        (:class:`~neardup.errors.ConfigError` in one shape), with the per-method defaults filled in and
        ``workers`` capped at the CPUs this process may use — all before any input is read."""
        try:
            return self._resolved()
        except (InputFormatError, ImportError) as exc:     # a file a parameter names (word lists, IDF tables)
            raise ConfigError(str(exc)) from None           # or an optional dependency it needs

    def _resolved(self) -> DedupConfig:
        c = DedupConfig(**{p.name: p.check(getattr(self, p.name)) for p in PARAMS})
        given = [p.name for p in PARAMS if getattr(c, p.name) != p.default]
        wrong = inapplicable(c.method, given, c.spans)
        if wrong:
            raise ConfigError(f"not used by --method {c.method}: {'; '.join(wrong)}")
        if c.compat is not None:
            files = {"1e0ng": ("idf", "user_dict", "stop_words"),
                     "jieba-analyse": ("user_dict",)}.get(c.compat, ())
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
                raise BY_NAME["top_n"].refuse(c.top_n, "left unset with --compat 1e0ng (the library weighs "
                                                       "every window)")
            if c.idf == "jieba":
                raise BY_NAME["idf"].refuse(c.idf, f"a file with --compat {c.compat} (the peer's own table is "
                                                   "its default)")
        else:
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
            if (c.method == "simhash" and c.user_dict is not None
                    and not (c.tokenizer == "jieba" or (c.tokenizer == "auto" and keywords))):
                raise BY_NAME["user_dict"].refuse(c.user_dict, "given only with --tokenizer jieba, --tokenizer auto "
                                                               "with keywords (--idf or --stop-words, --ngram 1), "
                                                               "or --compat yanyiwu (auto shingles with word tokens)")
        if c.method == "minhash" and c.user_dict is not None and c.tokenizer != "jieba":
            raise BY_NAME["user_dict"].refuse(c.user_dict, "given only with --tokenizer jieba (auto shingles with "
                                                           "word tokens)")
        if c.method in ("simhash", "minhash"):     # the user's files, read now: a bad line stops the run here

            file_keys(c.idf, c.user_dict, c.stop_words)
            why = idf_tokenizer_mismatch(c.idf, c.compat if c.compat in ("yanyiwu", "jieba-analyse") else c.tokenizer)
            if why:
                raise BY_NAME["idf"].refuse(c.idf, why)
            for name in ("idf", "user_dict", "stop_words"):   # absolute: an index or a Spark task reads them
                value = getattr(c, name)
                if value is not None and value != "jieba":
                    setattr(c, name, os.path.abspath(value))
        if c.method == "simhash" and c.bits is None and c.compat is None:    # verified SimHash (the default)

            for name, value in SIMHASH_VERIFIED.items():
                if getattr(c, name) is None:
                    setattr(c, name, value)
            if c.candidate_bits is None:
                c.candidate_bits = candidate_radius(c.recall)
        elif c.method == "simhash":
            for name in ("threshold", "candidate_bits"):
                if getattr(c, name) is not None:
                    raise BY_NAME[name].refuse(getattr(c, name), "left unset with --bits or --compat (pairs within "
                                                                 "k bits are accepted unchecked; without them "
                                                                 "SimHash verifies its candidates)")
        for name, value in DEFAULTS[c.method].items():   # only what the method uses
            if getattr(c, name) is None and not (c.compat and name == "ngram") and not (
                    name == "bits" and c.candidate_bits is not None):
                setattr(c, name, value)
        if c.keep == "key" and not c.keep_field:
            raise BY_NAME["keep_field"].refuse(c.keep_field, "a field name with --keep key (the row with the "
                                                             "largest value is kept)")
        if c.keep_field and c.keep != "key":
            raise BY_NAME["keep_field"].refuse(c.keep_field, "given only with --keep key")
        if c.method == "minhash":

            MinHasher(num_perm=c.num_perm, scheme=c.scheme, seed=c.seed, tokenizer=c.tokenizer, ngram=c.ngram)
            choose_params(c.threshold, c.num_perm, c.lsh_mode, c.recall, c.bands, c.rows)
            if c.verify == "exact" and c.scheme.startswith("datasketch"):
                raise BY_NAME["verify"].refuse(c.verify, "minhash or none with a datasketch scheme (exact works "
                                                         "with the native schemes: oph, permutation, bottomk)")
        if c.index is not None:
            why = None
            if not c.id_field:
                why = "given with --id-field (ids name the documents in the index across runs)"
            elif c.method == "minhash" and c.verify == "exact":
                why = ("used with --verify borderline or minhash (the index keeps signatures, not shingle "
                       "sets)")
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
        return c


NOT_BANDED = {"bottomk": "bottom-k sketches keep the k smallest hashes in sorted order, so slot j of two documents "
                         "is not one event and LSH bands do not apply; bottomk is for `neardup sign` and `neardup "
                         "compare`"}
"""MinHash schemes that cannot find duplicates (LSH bands them: ``dedup``, ``pairs``, an index), with why:
the commands built by :func:`click_options` refuse them up front (``neardup sign`` offers every scheme)."""


def simhash_verified(cfg) -> bool:
    """Whether a resolved SimHash run verifies its candidates (no ``--bits``, no ``--compat``): pairs
    within ``candidate_bits`` decided by exact Jaccard ≥ ``threshold``."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k, None)
    return get("method") == "simhash" and get("candidate_bits") is not None


def check_banded(cfg) -> None:
    """A run that finds duplicates (``dedup``, ``pairs``, an index) refuses a MinHash scheme of
    :data:`NOT_BANDED`, naming ``--scheme`` (the library's entry points call this; the command line
    refuses it when parsing)."""
    if cfg.method == "minhash" and cfg.scheme in NOT_BANDED:
        raise BY_NAME["scheme"].refuse(cfg.scheme, f"a scheme LSH can band to find duplicates "
                                                   f"({NOT_BANDED[cfg.scheme]})")


def click_options(names=None, exclude=(), all_schemes: bool = False, defaults: dict | None = None,
                  choices: dict | None = None, helps: dict | None = None, required=()):
    """A decorator adding the command-line options of :data:`PARAMS` (``names``: those, in the
    table's order; else all with a flag), each with its name, type, bounds, default and help from the
    table. ``--scheme`` offers the schemes that band (a scheme of :data:`NOT_BANDED` is one line
    naming it), or every scheme with ``all_schemes`` (``neardup sign``, which bands nothing). A
    command whose use of a parameter is narrower says so here, by name: ``defaults`` (name → its
    default there), ``choices`` (name → the subset it offers), ``helps`` (name → its help there),
    ``required`` (names it cannot do without)."""
    defaults, choices, helps = defaults or {}, choices or {}, helps or {}
    for name in (*defaults, *choices, *helps, *required):
        if name not in BY_NAME:
            raise KeyError(f"click_options: {name!r} is not a parameter of the table")
    for name, sub in choices.items():
        if not set(sub) <= set(BY_NAME[name].choices or ()):
            raise RuntimeError(f"click_options: {name!r} offers {sorted(BY_NAME[name].choices or ())}, not {sub}")
    import click  # noqa: PLC0415  (the command line's dependency, not the library's)

    chosen = [p for p in PARAMS if p.option and p.name not in exclude and (names is None or p.name in names)]

    class Schemes(click.Choice):
        """The table's schemes, those of :data:`NOT_BANDED` refused (and left out of the help)."""

        def banded(self) -> list[str]:
            return [c for c in self.choices if c not in NOT_BANDED]

        def get_metavar(self, *args, **kwargs) -> str:
            return f"[{'|'.join(self.banded())}]"

        def convert(self, value, param, ctx):
            if value in NOT_BANDED:
                raise BY_NAME["scheme"].refuse(value, f"one of {', '.join(self.banded())} to find duplicates "
                                                      f"({NOT_BANDED[value]})")
            return super().convert(value, param, ctx)

    def click_type(p: Param):
        if p.name == "scheme" and not all_schemes:
            return Schemes([str(c) for c in choices.get(p.name, p.choices)])
        if p.choices is not None:
            return click.Choice([str(c) for c in choices.get(p.name, p.choices)])
        if p.kind is int:
            return click.IntRange(p.lo, p.hi, min_open=p.lo_open, max_open=p.hi_open)
        if p.kind is float:
            return click.FloatRange(p.lo, p.hi, min_open=p.lo_open, max_open=p.hi_open)
        return str

    def decorate(fn):
        for p in reversed(chosen):
            decls = p.option.split(" ")
            default, text = defaults.get(p.name, p.default), helps.get(p.name, p.help)
            if p.kind is bool and "/" in p.option:       # --html/--no-html: a switch
                fn = click.option(*decls, p.name, default=default, show_default=True, help=text)(fn)
            elif p.kind is bool:                         # -q --quiet: a flag
                fn = click.option(*decls, p.name, is_flag=True, default=default, help=text)(fn)
            elif p.name in required:
                fn = click.option(*decls, p.name, type=click_type(p), required=True, help=text)(fn)
            else:
                fn = click.option(*decls, p.name, type=click_type(p), default=default,
                                  show_default=default is not None, help=text)(fn)
        return fn
    return decorate


__all__ = ["BY_NAME", "DEFAULTS", "METHODS", "NOT_BANDED", "PARAMS", "DedupConfig", "Param", "click_options",
           "cpu_count", "inapplicable"]
