"""The one table of parameters, :data:`PARAMS`: each parameter's group, type, allowed values or
range, the methods whose result it changes, its default, its command-line flag and its help.
Allowed values that name things of other modules (schemes, tokenizers, formats, conversions) are
taken from those modules.

Groups: ``algorithm`` (what is a duplicate and which row is kept: the result), ``input`` (how rows
are read), ``output`` (what is written), ``run`` (how the work is done: never the result).
"""
from __future__ import annotations

from ..io.formats import FORMATS
from ..sketches.minhash import SCHEMES
from ..sketches.simhash import COMPATS, WEIGHTINGS
from ..text.normalize import CONVERSIONS
from ..text.tokenize import TOKENIZERS
from .param import Param

METHODS = ("minhash", "simhash", "sentences", "exact", "lines", "substrings")
_MINHASH = ("minhash",)
_SHINGLED = ("minhash", "simhash")
_DOCUMENTS = ("minhash", "simhash", "sentences", "exact")   # remove whole documents
_SPANS = ("lines", "substrings")                              # remove repeated spans inside documents


def _params() -> tuple[Param, ...]:
    """The table (module docstring)."""
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
#: the span step's own parameters (those of the span methods alone): a whole-document method takes them
#: with --spans
SPAN_OPTIONS: tuple[str, ...] = tuple(p.name for p in PARAMS if p.methods is not None and set(p.methods) <= set(_SPANS))


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


__all__ = ["BY_NAME", "METHODS", "NOT_BANDED", "PARAMS", "SPAN_OPTIONS", "check_banded", "inapplicable",
           "simhash_verified"]
