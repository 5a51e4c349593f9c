"""``neardup sign``: documents → one JSON line each with its signature, or a Parquet / ``.npy`` file
of all of them signed on every core (:mod:`neardup.engines.local.sign`)."""
from __future__ import annotations

import contextlib
import json
import sys
import time

import click

from ..config import BY_NAME, DedupConfig, click_options, params_class
from ..dedup.methods import method_of
from ..dedup.progress import begin, plain_size, reporting
from ..engines.local.sign import write_signatures
from ..engines.sign_output import check_sign_outputs
from ..errors import ConfigError
from ..io.outfile import check_output_file, replacing
from ..io.readers import batched, iter_documents
from ..io.sources import expand_inputs
from ..text.dictionaries import word_files
from .group import ParameterError, main, refuse_unused


@contextlib.contextmanager
def _output_file(path: str):
    """Standard output for ``-``; otherwise a temporary file beside ``path`` that replaces it only
    when the block ends without an error (the one rule: :mod:`neardup.io.outfile`)."""
    if path == "-":
        if sys.stdout is None or getattr(sys.stdout, "closed", False):
            raise click.ClickException("standard output is closed; give -o FILE")
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with replacing(path) as tmp, open(tmp, "wb") as fh:
        yield fh


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--method", type=click.Choice(["minhash", "simhash", "sentences"]), default="minhash", show_default=True,
              help="The signature: MinHash (k slots), SimHash (a 64-bit fingerprint) or the sentence signature.")
# every other option is the table's (neardup.config.PARAMS): dedup, the index and sign agree on each
@click_options(("num_perm", "scheme", "seed", "tokenizer", "ngram", "convert", "weighting", "idf", "user_dict",
                "stop_words", "top_n", "compat", "sentences", "input_format", "text_field", "id_field", "on_error",
                "batch_size", "workers", "progress"), all_schemes=True)
@click.option("--jsonl/--files", "jsonl", default=None,
              help="Shorthands for --input-format jsonl / --input-format file (a whole file is one document).")
@click.option("-o", "--output", default="-", metavar="FILE",
              help="Output file (default: stdout; a file is replaced only when the command succeeds).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet", "npy"]), default="jsonl", show_default=True,
              help="jsonl: a JSON line per document, as it is signed; parquet: id, row, empty and the signature "
                   "column, signed on all cores; npy: the signature matrix (-o FILE.npy) and FILE.ids.jsonl.")
@click.option("--summary", is_flag=True, help="Print counts, throughput and distinct signatures to stderr.")
def sign(inputs, method, num_perm, scheme, seed, tokenizer, ngram, convert, weighting, idf, user_dict, stop_words,
         top_n, compat, sentences,
         input_format, jsonl, text_field, id_field, on_error, batch_size, output, fmt, workers, summary, progress):
    """Print one JSON line per document with its signature.

    INPUTS are read as by dedup: JSONL, CSV, Parquet, text lines (one document per line), folders
    (one document per file), '-' for JSONL on stdin; --files makes each file one document.

    \b
    Examples:
      neardup sign docs.jsonl --id-field id -o signatures.jsonl
      neardup sign docs.jsonl --id-field id --method simhash --format parquet -o fingerprints.parquet
      neardup sign docs.jsonl --format npy -o signatures.npy --summary   # and signatures.ids.jsonl
    """
    if jsonl is not None:
        if input_format is not None:
            raise click.UsageError("give --input-format or --jsonl/--files, not both")
        input_format = "jsonl" if jsonl else "file"
    # the method's options, checked by dedup's rules (an option of another method is refused, as by dedup)
    algo = {"num_perm": num_perm, "scheme": scheme, "seed": seed, "tokenizer": tokenizer, "ngram": ngram,
            "convert": convert, "weighting": weighting, "idf": idf, "user_dict": user_dict, "stop_words": stop_words,
            "top_n": top_n, "compat": compat, "sentences": sentences}
    refuse_unused(click.get_current_context(), method, algo)    # (also one typed with its default value)
    given = {name: value for name, value in algo.items() if value != BY_NAME[name].default}
    if "bits" in params_class(method).names() and compat is None:
        given["bits"] = 3       # SimHash's fingerprint as sign has always written it: the classic rule's features
    try:
        run = DedupConfig(method=method, **given, text_field=text_field, id_field=id_field, on_error=on_error,
                          input_format=input_format, workers=workers, batch_size=batch_size,
                          progress=progress).resolved()
    except ConfigError as exc:
        raise ParameterError(str(exc)) from None
    if fmt != "jsonl":
        return _sign_binary(inputs, output, fmt, summary, run)
    signer = method_of(run).value_signer(run)
    key = method_of(run).column

    def sign_batch(texts):
        values = signer(texts)
        return [row.tolist() for row in values] if values.ndim == 2 else [int(v) for v in values]
    skipped: list = []
    count = 0
    n_bytes = 0
    distinct: set = set()
    start = time.perf_counter()
    specs = expand_inputs(list(inputs), input_format)
    check_output_file(output, specs, files=word_files(idf, user_dict, stop_words))
    blank: list = []
    docs = iter_documents(inputs, fmt=input_format, text_field=text_field, id_field=id_field, on_error=on_error,
                          skipped=skipped, blank=blank)
    with reporting(progress), _output_file(output) as out:
        step = begin("read+sign", plain_size(specs), unit="B")
        for batch in batched(docs, batch_size):
            texts = [d.text for d in batch]
            sigs = sign_batch(texts)
            # a lone surrogate in an id becomes its JSON escape (valid JSON that reads back the same)
            out.write(b"".join((json.dumps({"id": d.id, key: s}, ensure_ascii=False) + "\n")
                               .encode("utf-8", "backslashreplace") for d, s in zip(batch, sigs)))
            if summary:
                distinct.update(tuple(s) if isinstance(s, list) else s for s in sigs)
            count += len(batch)
            step.update(sum(len(t) for t in texts), rows=len(batch))
            if summary:
                n_bytes += sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
        step.end(step.total, rows=count + len(skipped) + len(blank), documents=count, skipped=len(skipped),
                 blank=len(blank))
    if summary:
        secs = time.perf_counter() - start
        click.echo(f"neardup sign --method {method}: {count} documents, {n_bytes / 1e6:.2f} MB in {secs:.2f} s "
                   f"({n_bytes / 1e6 / max(secs, 1e-9):.1f} MB/s incl. reading and JSON output); "
                   f"{len(distinct)} distinct signatures ({count - len(distinct)} documents share one "
                   f"with an earlier document)", err=True)
    if skipped:
        click.echo(f"neardup: signed {count} documents, skipped {len(skipped)} bad records:", err=True)
        for _path, _line, reason in skipped[:20]:
            click.echo(f"  {reason}", err=True)


def _sign_binary(inputs, output: str, fmt: str, summary: bool, cfg: DedupConfig) -> None:
    if output == "-" and sys.stdout is not None and sys.stdout.isatty():
        raise click.UsageError(f"--format {fmt} is binary; give -o FILE rather than writing it to a terminal")
    try:
        cfg = cfg.resolved()
    except ConfigError as exc:
        raise ParameterError(str(exc)) from None
    check_sign_outputs(output, fmt, expand_inputs(list(inputs), cfg.input_format), cfg)
    start = time.perf_counter()
    got = write_signatures(list(inputs), output, cfg, fmt)
    secs = time.perf_counter() - start
    if summary:
        click.echo(f"neardup sign --method {cfg.method} --format {fmt}: {got['documents']} documents "
                   f"({got['empty']} empty) in {secs:.2f} s on {cfg.workers} processes", err=True)
    skipped = got["skipped"]
    if skipped:
        click.echo(f"neardup: signed {got['documents']} documents, skipped {len(skipped)} bad records:", err=True)
        for _row, _file, _line, reason in skipped[:20]:
            click.echo(f"  {reason}", err=True)
