"""``neardup compare A B``: why two documents are (not) near-duplicates — the verdict ``dedup`` would
reach for the pair alone (the two as a two-document run, :class:`~neardup.explain.replay.SmallRun`),
under every feature option ``dedup`` takes (the one table: :func:`~neardup.config.click_options`),
then the numbers of every method."""
from __future__ import annotations

import json
import sys

import click

from ..config import NOT_BANDED, DedupConfig, click_options
from ..dedup.methods import method_of
from ..errors import ConfigError, InputFormatError
from ..explain import explain_minhash, explain_sentences, explain_simhash, render
from ..explain.replay import SmallRun
from ..explain.verdict import verdict
from ..index.lsh import choose_params
from ..similarity.jaccard import containment_pairs, exact_jaccard_pairs
from ..sketches.minhash import MinHasher
from ..sketches.sentences import SentenceSigner
from ..sketches.simhash import SimHasher, feature_signer, hamming
from ..text.dictionaries import read_limited
from ..text.normalize import Normalizer
from .group import main, refuse_unused, typed

MAX_DOCUMENT_BYTES = 32 << 20
"""The most ``neardup compare`` reads of A or of B (32 MiB; at most this + 1 bytes are read, so an
endless stream stops here). It holds every shingle of both texts as a Python string, about 40 bytes
of memory per byte of text: two such documents take about 2.7 GB and half a minute. Larger
documents are for ``neardup pairs`` and ``dedup``, which stream."""
_TOO_LARGE = " (compare reads two documents whole; run `neardup pairs` on larger ones)"


def _read_text_arg(value: str, literal: bool, which: str) -> str:
    """The text of argument ``which`` (A or B): itself with ``--text``, else the file (``-``: standard
    input) as UTF-8 (bad bytes replaced), at most :data:`MAX_DOCUMENT_BYTES`."""
    if literal:
        return value
    if value != "-":
        data = read_limited(value, MAX_DOCUMENT_BYTES, f"document {which}", _TOO_LARGE)
        return data.decode("utf-8", errors="replace")
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    data = stream.read(MAX_DOCUMENT_BYTES + 1)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > MAX_DOCUMENT_BYTES:
        raise InputFormatError(f"<stdin>: the document {which} is over its size limit of "
                               f"{MAX_DOCUMENT_BYTES >> 20} MiB{_TOO_LARGE}")
    return data.decode("utf-8", errors="replace")


#: the options of the table compare takes: those that decide a pair (the clustering's linkage and
#: drift decide nothing for two documents), besides --num-perm and --scheme, which compare takes
#: wider: k = 1 and bottom-k estimate, though dedup refuses them
FEATURES = ("method", "threshold", "metric", "tokenizer", "convert", "ngram", "seed", "bits", "candidate_bits",
            "weighting", "idf", "user_dict", "stop_words", "top_n", "compat", "sentences", "lsh_mode", "recall",
            "bands", "rows", "verify", "keep")
#: options that only SimHash (or the sentence signature) uses: given without --method, they choose it
_CHOOSE = {**dict.fromkeys(("bits", "candidate_bits", "weighting", "idf", "stop_words", "top_n", "compat"),
                           "simhash"), "sentences": "sentences"}


def _run_config(method, num_perm, scheme, algo) -> tuple[DedupConfig | None, str | None]:
    """The configuration of the two-document run (None with why where dedup would refuse the estimating
    options compare allows: k = 1, bottom-k)."""
    if method_of(method).spans:
        raise click.UsageError(f"--method {method} removes spans inside documents; compare judges whole documents "
                               "(minhash, simhash, sentences, exact)")
    if algo["keep"] == "key":
        raise click.UsageError("--keep key needs a field of records; compare reads two texts (--keep first or longest)")
    if method == "minhash" and (num_perm < 2 or scheme in NOT_BANDED):
        why = (f"--num-perm {num_perm} has no LSH bands" if num_perm < 2
               else f"--scheme {scheme} cannot find duplicates ({NOT_BANDED[scheme]})")
        return None, f"no verdict: {why}; dedup refuses it"
    try:
        return DedupConfig(method=method, num_perm=num_perm, scheme=scheme, **algo).resolved(), None
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


@main.command()
@click.argument("a")
@click.argument("b")
@click.option("--text", "literal", is_flag=True, help="A and B are the texts themselves, not file names.")
@click_options(("num_perm", "scheme"), all_schemes=True, lows={"num_perm": 1},
               helps={"num_perm": "MinHash signature length k (1 estimates only: dedup needs 2 or more).",
                      "scheme": "MinHash scheme (bottomk estimates only: dedup cannot band it)."})
@click_options(FEATURES)
@click.option("--show", type=click.IntRange(0), default=5, show_default=True, help="Shingles to show of each kind.")
@click.option("--slots", type=click.Choice(["matter", "all"]), default="matter", show_default=True,
              help="With --explain: the MinHash slots listed (those that matter, or all).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--explain", is_flag=True,
              help="Each method's reasoning: MinHash slot by slot (the shingle giving each minimum) and the LSH "
                   "bands at --threshold; SimHash features, weights, per-bit sums, differing bits and the features "
                   "that flip them; the longest sentences.")
def compare(a, b, literal, num_perm, scheme, show, slots, as_json, explain, **algo):
    """Why are A and B (not) near-duplicates? First the verdict dedup would reach for the pair alone,
    with the rule and the numbers that decided it (--method, default minhash; an option only SimHash
    uses, such as --bits or --idf, chooses simhash); then exact Jaccard and containment, the MinHash
    estimate, the SimHash distance, the sentence-signature match and some shared / unshared shingles.

    \b
    Examples:
      neardup compare a.txt b.txt
      neardup compare a.txt b.txt --method simhash --explain     # the features that flip each differing bit
      neardup compare --text "the cat sat on the mat today" "the cat sat on the mat" --ngram 3 --json
    """

    ctx = click.get_current_context()
    given = typed(ctx, FEATURES)
    if "method" not in given:
        chosen = {_CHOOSE[g] for g in given if g in _CHOOSE}
        if len(chosen) == 1:
            algo["method"] = chosen.pop()
    method = algo.pop("method")
    if not literal and a == b == "-":
        raise ConfigError("A and B are both '-': standard input holds one document; give the other as a file")
    seed = algo["seed"]
    if scheme.startswith("datasketch") and seed >= 2**32:
        raise ConfigError(f"seed (--seed) must be below 2**32 with --scheme {scheme} (datasketch's seeds are "
                          f"32-bit); got {seed}")
    refuse_unused(ctx, method, FEATURES)
    cfg, no_verdict = _run_config(method, num_perm, scheme, algo)
    ta, tb = _read_text_arg(a, literal, "A"), _read_text_arg(b, literal, "B")
    tokenizer, ngram = algo["tokenizer"], algo["ngram"] or 5
    convert = algo["convert"]
    mh = MinHasher(num_perm=num_perm, scheme=scheme, seed=seed, tokenizer=tokenizer, ngram=ngram,
                   normalizer=Normalizer(convert=convert),
                   user_dict=algo["user_dict"] if tokenizer == "jieba" else None)
    sh = mh.shingler                                                      # the shingles MinHash signs
    f = sh.features([ta, tb])
    if method == "simhash":
        sims = feature_signer(cfg.tokenizer, cfg.ngram, cfg.weighting, cfg.idf, cfg.top_n, cfg.compat, cfg.convert,
                              user_dict=cfg.user_dict, stop_words=cfg.stop_words)([ta, tb])[0]
    else:
        sims = SimHasher(tokenizer=tokenizer).sign_batch([ta, tb])
    sent = SentenceSigner(n=algo["sentences"], convert=convert)
    sa, sb = sh.shingles(ta), sh.shingles(tb)
    set_a, set_b = set(sa), set(sb)
    shared = [s for s in dict.fromkeys(sa) if s in set_b][:show]
    only_a = [s for s in dict.fromkeys(sa) if s not in set_b][:show]
    only_b = [s for s in dict.fromkeys(sb) if s not in set_a][:show]
    sig_a, sig_b = sent.sign(ta), sent.sign(tb)
    run = v = None
    if cfg is not None:
        try:
            run = SmallRun([ta, tb], cfg)
        except (ValueError, ImportError) as exc:
            raise ConfigError(f"the two-document run cannot be made: {exc}") from None
        v = verdict(run, 0, 1)
    near = "near-duplicate at ≤ 3"
    if cfg is not None and method == "simhash":
        near = (f"a candidate at ≤ {cfg.candidate_bits}, then checked exactly" if cfg.candidate_bits is not None
                else f"near-duplicate at ≤ {cfg.bits}")
    out = {
        "verdict": v if v is not None else {"sentence": no_verdict, "verdict": None},
        "method": method,
        "jaccard": float(exact_jaccard_pairs(f, [0], [1])[0]),
        "containment": {"a_in_b": float(containment_pairs(f, [0], [1])[0]),
                        "b_in_a": float(containment_pairs(f, [1], [0])[0])},
        "minhash_jaccard": float(mh.sign_batch([ta, tb]).jaccard_pairs([0], [1])[0]),
        "simhash_distance": hamming(sims[0], sims[1]),
        "sentences_match": bool(sig_a == sig_b and sig_a != 0),
        "shingles": {"a": len(set_a), "b": len(set_b), "shared": len(set_a & set_b)},
        "examples": {"shared": shared, "only_a": only_a, "only_b": only_b},
        "parameters": {"tokenizer": tokenizer, "ngram": ngram, "num_perm": num_perm, "scheme": scheme, "seed": seed,
                       **({"run": cfg.group("algorithm")} if cfg is not None else {})},
    }
    if explain:
        out["explain"] = _explanations(ta, tb, mh, cfg, run, algo, num_perm, scheme, show)
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False, default=str))
        return
    c = out["containment"]
    click.echo(out["verdict"]["sentence"])
    click.echo("")
    click.echo(f"shingles ({tokenizer} {ngram}-grams): A {len(set_a)}, B {len(set_b)}, shared {len(set_a & set_b)}")
    click.echo(f"exact Jaccard        {out['jaccard']:.4f}")
    click.echo(f"containment A in B   {c['a_in_b']:.4f}   B in A {c['b_in_a']:.4f}")
    click.echo(f"MinHash estimate     {out['minhash_jaccard']:.4f}  (k={num_perm}, {scheme}, seed {seed}; "
               f"± {1.96 * (max(out['jaccard'] * (1 - out['jaccard']), 0) / num_perm) ** 0.5:.3f} at 95%)")
    click.echo(f"SimHash distance     {out['simhash_distance']} bits of 64 ({near})")
    click.echo(f"sentence signature   {'match' if out['sentences_match'] else 'differ'}")
    for title, key in (("shared", "shared"), ("only in A", "only_a"), ("only in B", "only_b")):
        if out["examples"][key]:
            click.echo(f"{title}:")
            for s in out["examples"][key]:
                click.echo(f"  · {s}")
    if explain:
        click.echo("")
        click.echo(render(out["explain"], slots=slots))


def _explanations(ta, tb, mh, cfg, run, algo, num_perm, scheme, show) -> dict:
    """``--explain``: each method's evidence; MinHash with the bands of the two-document run (of
    --threshold, when dedup would refuse the run's options), SimHash under the run's feature options."""

    threshold = algo["threshold"] if algo["threshold"] is not None else 0.8
    if run is not None and getattr(run, "lsh", None) is not None:
        bands = (run.lsh.b, run.lsh.r)
    else:
        try:
            lsh = choose_params(threshold, num_perm, "recall", 0.99)
        except ValueError as exc:           # (k = 1 has no bands; a tiny threshold, none reaching the recall)
            raise ConfigError(f"--explain: no LSH bands for --threshold {threshold} with --num-perm {num_perm}: "
                              f"{exc}") from None
        bands = (lsh.b, lsh.r)
    simhash = ({"tokenizer": cfg.tokenizer, "ngram": cfg.ngram, "weighting": cfg.weighting, "idf": cfg.idf,
                "top_n": cfg.top_n, "compat": cfg.compat, "convert": cfg.convert, "user_dict": cfg.user_dict,
                "stop_words": cfg.stop_words} if cfg is not None and cfg.method == "simhash"
               else {"tokenizer": algo["tokenizer"], "ngram": 3})
    try:
        return {"minhash": explain_minhash(ta, tb, mh, bands, show), "simhash": explain_simhash(ta, tb, show=show,
                                                                                              **simhash),
                "sentences": explain_sentences(ta, tb, algo["sentences"], algo["convert"])}
    except ValueError as exc:           # (a scheme explain does not cover)
        raise ConfigError(f"--explain with --scheme {scheme}: {exc}") from None
