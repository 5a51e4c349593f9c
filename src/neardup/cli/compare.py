"""``neardup compare A B``: why two documents are (not) near-duplicates."""
from __future__ import annotations

import json
import sys

import click

from ..errors import ConfigError, InputFormatError
from ..sketches.minhash import DEFAULT_SCHEME, SCHEMES, MinHasher
from ..sketches.sentences import SentenceSigner
from ..sketches.simhash import SimHasher
from ..text.dictionaries import read_limited
from ..text.tokenize import TOKENIZERS
from . import main

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


@main.command()
@click.argument("a")
@click.argument("b")
@click.option("--text", "literal", is_flag=True, help="A and B are the texts themselves, not file names.")
@click.option("--tokenizer", type=click.Choice(TOKENIZERS), default="word", show_default=True)
@click.option("--ngram", type=click.IntRange(1, 64), default=5, show_default=True)
@click.option("--num-perm", type=click.IntRange(1, 65536), default=128, show_default=True)
@click.option("--scheme", type=click.Choice(SCHEMES), default=DEFAULT_SCHEME, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True)
@click.option("--show", type=click.IntRange(0), default=5, show_default=True, help="Shingles to show of each kind.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--explain", is_flag=True,
              help="Each method's reasoning: MinHash slot by slot (the shingle giving each minimum) and the LSH "
                   "bands at --threshold; SimHash features, weights, per-bit sums and differing bits; the "
                   "longest sentences.")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=0.8, show_default=True,
              help="With --explain: the LSH bands a dedup run at this threshold uses.")
def compare(a, b, literal, tokenizer, ngram, num_perm, scheme, seed, show, as_json, explain, threshold):
    """Why are A and B (not) near-duplicates? Exact Jaccard and containment, MinHash estimate, SimHash
    distance, sentence-signature match, and some shared / unshared shingles."""
    from ..features.shingles import Shingler  # noqa: PLC0415
    from ..similarity.jaccard import containment_pairs, exact_jaccard_pairs  # noqa: PLC0415
    from ..sketches.simhash import hamming  # noqa: PLC0415
    from ..text.tokenize import signing_tokenizer  # noqa: PLC0415

    if not literal and a == b == "-":
        raise ConfigError("A and B are both '-': standard input holds one document; give the other as a file")
    if scheme.startswith("datasketch") and seed >= 2**32:
        raise ConfigError(f"seed (--seed) must be below 2**32 with --scheme {scheme} (datasketch's seeds are "
                          f"32-bit); got {seed}")
    ta, tb = _read_text_arg(a, literal, "A"), _read_text_arg(b, literal, "B")
    sh = Shingler(tokenizer=signing_tokenizer(tokenizer), ngram=ngram)     # the shingles MinHash signs
    f = sh.features([ta, tb])
    mh = MinHasher(num_perm=num_perm, scheme=scheme, seed=seed, tokenizer=tokenizer, ngram=ngram)
    sims = SimHasher(tokenizer=tokenizer).sign_batch([ta, tb])
    sent = SentenceSigner()
    sa, sb = sh.shingles(ta), sh.shingles(tb)
    set_a, set_b = set(sa), set(sb)
    shared = [s for s in dict.fromkeys(sa) if s in set_b][:show]
    only_a = [s for s in dict.fromkeys(sa) if s not in set_b][:show]
    only_b = [s for s in dict.fromkeys(sb) if s not in set_a][:show]
    sig_a, sig_b = sent.sign(ta), sent.sign(tb)
    out = {
        "jaccard": float(exact_jaccard_pairs(f, [0], [1])[0]),
        "containment": {"a_in_b": float(containment_pairs(f, [0], [1])[0]),
                        "b_in_a": float(containment_pairs(f, [1], [0])[0])},
        "minhash_jaccard": float(mh.sign_batch([ta, tb]).jaccard_pairs([0], [1])[0]),
        "simhash_distance": hamming(sims[0], sims[1]),
        "sentences_match": bool(sig_a == sig_b and sig_a != 0),
        "shingles": {"a": len(set_a), "b": len(set_b), "shared": len(set_a & set_b)},
        "examples": {"shared": shared, "only_a": only_a, "only_b": only_b},
        "parameters": {"tokenizer": tokenizer, "ngram": ngram, "num_perm": num_perm, "scheme": scheme, "seed": seed},
    }
    if explain:
        from ..explain import explain_minhash, explain_sentences, explain_simhash  # noqa: PLC0415
        from ..index.lsh import choose_params  # noqa: PLC0415

        try:
            lsh = choose_params(threshold, num_perm, "recall", 0.99)
        except ValueError as exc:           # (k = 1 has no bands; a tiny threshold, none reaching the recall)
            raise ConfigError(f"--explain: no LSH bands for --threshold {threshold} with --num-perm {num_perm}: "
                              f"{exc}") from None
        try:
            out["explain"] = {"minhash": explain_minhash(ta, tb, mh, (lsh.b, lsh.r), show),
                              "simhash": explain_simhash(ta, tb, tokenizer, 3, show=show),
                              "sentences": explain_sentences(ta, tb)}
        except ValueError as exc:           # (a scheme explain does not cover)
            raise ConfigError(f"--explain with --scheme {scheme}: {exc}") from None
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    c = out["containment"]
    click.echo(f"shingles ({tokenizer} {ngram}-grams): A {len(set_a)}, B {len(set_b)}, shared {len(set_a & set_b)}")
    click.echo(f"exact Jaccard        {out['jaccard']:.4f}")
    click.echo(f"containment A in B   {c['a_in_b']:.4f}   B in A {c['b_in_a']:.4f}")
    click.echo(f"MinHash estimate     {out['minhash_jaccard']:.4f}  (k={num_perm}, {scheme}, seed {seed}; "
               f"± {1.96 * (max(out['jaccard'] * (1 - out['jaccard']), 0) / num_perm) ** 0.5:.3f} at 95%)")
    click.echo(f"SimHash distance     {out['simhash_distance']} bits of 64 (near-duplicate at ≤ 3)")
    click.echo(f"sentence signature   {'match' if out['sentences_match'] else 'differ'}")
    for title, key in (("shared", "shared"), ("only in A", "only_a"), ("only in B", "only_b")):
        if out["examples"][key]:
            click.echo(f"{title}:")
            for s in out["examples"][key]:
                click.echo(f"  · {s}")
    if explain:
        from ..explain import render  # noqa: PLC0415

        click.echo("")
        click.echo(render(out["explain"]))
