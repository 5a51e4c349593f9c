"""Command line: ``neardup sign`` (documents → signatures as JSON lines)."""
from __future__ import annotations

import json
import sys
import time

import click

from ._version import __version__
from .io.readers import InputError, batched, iter_documents
from .sketches.minhash import DEFAULT_SCHEME, SCHEMES, MinHasher
from .sketches.sentences import SentenceSigner
from .sketches.simhash import WEIGHTINGS, SimHasher
from .text.tokenize import TOKENIZERS

DEFAULT_NGRAM = {"minhash": 5, "simhash": 3}


@click.group()
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find near-duplicate documents: MinHash, SimHash and sentence signatures."""


def _simhash_compat_signer(compat: str, top_n: int | None):
    if compat == "yanyiwu":
        from .sketches.compat import yanyiwu  # noqa: PLC0415

        return lambda text: yanyiwu.simhash(text, top_n if top_n is not None else yanyiwu.top_n_for_length(
            len(text.encode("utf-8"))))
    from .sketches.compat import simhash_1e0ng  # noqa: PLC0415

    return simhash_1e0ng.simhash


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--method", type=click.Choice(["minhash", "simhash", "sentences"]), default="minhash", show_default=True)
@click.option("--num-perm", type=click.IntRange(1, 65536), default=128, show_default=True, help="MinHash signature length k.")
@click.option("--scheme", type=click.Choice(SCHEMES), default=DEFAULT_SCHEME, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True, help="MinHash seed.")
@click.option("--tokenizer", type=click.Choice(TOKENIZERS), default="word", show_default=True)
@click.option("--ngram", type=click.IntRange(1, 64), default=None, help="Shingle size (default: 5 for minhash, 3 for simhash).")
@click.option("--weighting", type=click.Choice(WEIGHTINGS), default="tf", show_default=True, help="SimHash feature weights.")
@click.option("--idf", type=click.Choice(["jieba"]), default=None, help="IDF table for --weighting tfidf.")
@click.option("--top-n", type=click.IntRange(1), default=None, help="SimHash: keep the N heaviest features.")
@click.option("--compat", type=click.Choice(["yanyiwu", "1e0ng"]), default=None,
              help="SimHash: reproduce a peer's fingerprints exactly.")
@click.option("--sentences", "n_sentences", type=click.IntRange(1), default=3, show_default=True,
              help="Sentence signature: how many longest sentences.")
@click.option("--jsonl/--files", "jsonl", default=None, help="Treat inputs as JSONL (default: by suffix .jsonl[.gz]).")
@click.option("--text-field", default="text", show_default=True)
@click.option("--id-field", default=None, help="JSONL field holding the document id (default: file:line).")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise", show_default=True)
@click.option("--batch-size", type=click.IntRange(1), default=4096, show_default=True)
@click.option("-o", "--output", type=click.File("w"), default="-", help="Output file (default: stdout).")
@click.option("--summary", is_flag=True, help="Print counts, throughput and distinct signatures to stderr.")
def sign(inputs, method, num_perm, scheme, seed, tokenizer, ngram, weighting, idf, top_n, compat, n_sentences,
         jsonl, text_field, id_field, on_error, batch_size, output, summary):
    """Print one JSON line per document with its signature.

    INPUTS are files (one document each), '-' for one document on stdin, or JSONL files.
    """
    if compat and method != "simhash":
        raise click.UsageError("--compat applies to --method simhash")
    ngram = ngram or DEFAULT_NGRAM.get(method, 5)
    key = method
    try:
        if method == "minhash":
            hasher = MinHasher(num_perm=num_perm, scheme=scheme, seed=seed, tokenizer=tokenizer, ngram=ngram)
            sign_batch = lambda texts: [row.tolist() for row in hasher.sign_batch(texts).values]  # noqa: E731
        elif method == "simhash" and compat:
            one = _simhash_compat_signer(compat, top_n)
            sign_batch = lambda texts: [int(one(t)) for t in texts]  # noqa: E731
        elif method == "simhash":
            hasher = SimHasher(tokenizer=tokenizer, ngram=ngram, weighting=weighting, idf=idf, top_n=top_n)
            sign_batch = lambda texts: [int(v) for v in hasher.sign_batch(texts)]  # noqa: E731
        else:
            signer = SentenceSigner(n=n_sentences)
            key = "sentences"
            sign_batch = lambda texts: [int(v) for v in signer.sign_batch(texts)]  # noqa: E731
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    skipped: list = []
    count = 0
    n_bytes = 0
    distinct: set = set()
    start = time.perf_counter()
    try:
        docs = iter_documents(inputs, jsonl=jsonl, text_field=text_field, id_field=id_field, on_error=on_error,
                              skipped=skipped)
        for batch in batched(docs, batch_size):
            texts = [d.text for d in batch]
            sigs = sign_batch(texts)
            for d, s in zip(batch, sigs):
                output.write(json.dumps({"id": d.id, key: s}, ensure_ascii=False) + "\n")
                if summary:
                    distinct.add(tuple(s) if isinstance(s, list) else s)
            count += len(batch)
            if summary:
                n_bytes += sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    output.flush()
    if summary:
        secs = time.perf_counter() - start
        click.echo(f"neardup sign --method {method}: {count} documents, {n_bytes / 1e6:.2f} MB in {secs:.2f} s "
                   f"({n_bytes / 1e6 / max(secs, 1e-9):.1f} MB/s incl. reading and JSON output); "
                   f"{len(distinct)} distinct signatures ({count - len(distinct)} documents share one "
                   f"with an earlier document)", err=True)
    if skipped:
        click.echo(f"neardup: signed {count} documents, skipped {len(skipped)} bad records:", err=True)
        for path, line, reason in skipped[:20]:
            click.echo(f"  {reason}", err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
