"""Command line: ``neardup sign`` (documents → signatures as JSON lines)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time

import click

from ._version import __version__
from .errors import NeardupError
from .io.formats import FORMATS
from .io.readers import batched, iter_documents
from .sketches.minhash import DEFAULT_SCHEME, SCHEMES, MinHasher
from .sketches.sentences import SentenceSigner
from .sketches.simhash import WEIGHTINGS, SimHasher
from .text.tokenize import TOKENIZERS

DEFAULT_NGRAM = {"minhash": 5, "simhash": 3}


class _Group(click.Group):
    """The command group: SIGTERM ends a run like Ctrl-C (outputs staged so far are removed, signing
    workers are stopped), and user errors — :class:`~neardup.errors.NeardupError` and the
    operating system's (a full disk, a permission) — are one line on stderr and exit status 1.
    Any other exception is a bug and keeps its traceback."""

    def invoke(self, ctx):
        def on_term(signum, frame):
            global _INTERRUPTED
            _INTERRUPTED = signum
            raise SystemExit(128 + signum)

        global _INTERRUPTED
        with _signal(signal.SIGTERM, on_term):
            try:
                return super().invoke(ctx)
            except KeyboardInterrupt:
                _INTERRUPTED = signal.SIGINT
                raise
            except NeardupError as exc:
                raise click.ClickException(str(exc)) from None
            except BrokenPipeError:        # `neardup … | head`: the reader left, not an error of ours
                _silence_stdout()
                raise SystemExit(141) from None
            except OSError as exc:
                where = f"{exc.filename}: " if exc.filename else ""
                raise click.ClickException(f"{where}{exc.strerror or exc}") from None


_INTERRUPTED = 0     # the signal that stopped the run (SIGINT, SIGTERM), if one did


def entry() -> None:
    """The console script (and ``python -m neardup``): :func:`main`; after Ctrl-C or SIGTERM, once
    the run has cleaned up (work folder removed, workers stopped), the process ends at once with
    128 + the signal's number, never waiting on a thread of an abandoned worker pool."""
    try:
        main(prog_name="neardup")
    except SystemExit:
        if not _INTERRUPTED:
            raise
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(128 + int(_INTERRUPTED))


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _signal:
    """Install a signal handler for a block (only in the main thread; elsewhere a no-op)."""

    def __init__(self, sig, handler):
        self.sig, self.handler, self.old = sig, handler, None

    def __enter__(self):
        try:
            self.old = signal.signal(self.sig, self.handler)
        except ValueError:          # not the main thread
            self.old = None

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(self.sig, self.old)


@contextlib.contextmanager
def _output_file(path: str):
    """Standard output for ``-``; otherwise a temporary file beside ``path`` that replaces it only
    when the block ends without an error (a failed run leaves the previous file as it was)."""
    if path == "-":
        if sys.stdout is None or getattr(sys.stdout, "closed", False):
            raise click.ClickException("standard output is closed; give -o FILE")
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    if os.path.isdir(path):
        raise click.ClickException(f"{path}: is a folder; -o needs a file")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot write here ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@click.group(cls=_Group)
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
@click.option("--num-perm", type=click.IntRange(1, 65536), default=128, show_default=True,
              help="MinHash signature length k.")
@click.option("--scheme", type=click.Choice(SCHEMES), default=DEFAULT_SCHEME, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True, help="MinHash seed.")
@click.option("--tokenizer", type=click.Choice(TOKENIZERS), default="word", show_default=True)
@click.option("--ngram", type=click.IntRange(1, 64), default=None,
              help="Shingle size (default: 5 for minhash, 3 for simhash).")
@click.option("--weighting", type=click.Choice(WEIGHTINGS), default="tf", show_default=True,
              help="SimHash feature weights.")
@click.option("--idf", type=click.Choice(["jieba"]), default=None, help="IDF table for --weighting tfidf.")
@click.option("--top-n", type=click.IntRange(1), default=None, help="SimHash: keep the N heaviest features.")
@click.option("--compat", type=click.Choice(["yanyiwu", "1e0ng"]), default=None,
              help="SimHash: reproduce a peer's fingerprints exactly.")
@click.option("--sentences", "n_sentences", type=click.IntRange(1), default=3, show_default=True,
              help="Sentence signature: how many longest sentences.")
@click.option("--input-format", type=click.Choice(FORMATS), default=None,
              help="Force the input format (default: by suffix, as for dedup; '-' is JSONL).")
@click.option("--jsonl/--files", "jsonl", default=None,
              help="Shorthands for --input-format jsonl / --input-format file (a whole file is one document).")
@click.option("--text-field", default="text", show_default=True)
@click.option("--id-field", default=None, help="Field holding the document id (default: file:line).")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise", show_default=True)
@click.option("--batch-size", type=click.IntRange(1), default=4096, show_default=True)
@click.option("-o", "--output", default="-", metavar="FILE",
              help="Output file (default: stdout; a file is replaced only when the command succeeds).")
@click.option("--summary", is_flag=True, help="Print counts, throughput and distinct signatures to stderr.")
def sign(inputs, method, num_perm, scheme, seed, tokenizer, ngram, weighting, idf, top_n, compat, n_sentences,
         input_format, jsonl, text_field, id_field, on_error, batch_size, output, summary):
    """Print one JSON line per document with its signature.

    INPUTS are read as by dedup: JSONL, CSV, Parquet, text lines (one document per line), folders
    (one document per file), '-' for JSONL on stdin; --files makes each file one document.
    """
    if compat and method != "simhash":
        raise click.UsageError("--compat applies to --method simhash")
    if method == "simhash" and not compat and weighting == "tfidf" and idf is None:
        raise click.UsageError("--weighting tfidf needs an IDF table: --idf jieba")
    if jsonl is not None:
        if input_format is not None:
            raise click.UsageError("give --input-format or --jsonl/--files, not both")
        input_format = "jsonl" if jsonl else "file"
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
    docs = iter_documents(inputs, fmt=input_format, text_field=text_field, id_field=id_field, on_error=on_error,
                          skipped=skipped)
    with _output_file(output) as out:
        for batch in batched(docs, batch_size):
            texts = [d.text for d in batch]
            sigs = sign_batch(texts)
            # a lone surrogate in an id becomes its JSON escape (valid JSON that reads back the same)
            out.write(b"".join((json.dumps({"id": d.id, key: s}, ensure_ascii=False) + "\n")
                               .encode("utf-8", "backslashreplace") for d, s in zip(batch, sigs)))
            if summary:
                distinct.update(tuple(s) if isinstance(s, list) else s for s in sigs)
            count += len(batch)
            if summary:
                n_bytes += sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
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




# -- dedup ---------------------------------------------------------------------------------------------
@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", "outdir", required=True, metavar="OUTDIR",
              help="Output folder: new, empty, or a previous run's (whose outputs are replaced when this run "
                   "succeeds). '-': the kept rows to stdout, nothing else written.")
@click.option("--method", type=click.Choice(["minhash", "simhash", "sentences", "exact"]), default="minhash",
              show_default=True)
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True), default=None,
              help="MinHash: similarity to call two documents duplicates (default 0.8).")
@click.option("--metric", type=click.Choice(["jaccard", "containment"]), default="jaccard", show_default=True,
              help="MinHash: Jaccard, or containment of either document in the other.")
@click.option("--tokenizer", type=click.Choice(TOKENIZERS), default="word", show_default=True)
@click.option("--convert", type=click.Choice(["t2s", "tw2s", "tw2sp", "hk2s"]), default=None,
              help="Convert traditional Chinese to simplified before signing (OpenCC; pip install 'neardup[zh]').")
@click.option("--ngram", type=click.IntRange(1, 64), default=None, help="Shingle size (default: 5 minhash, 3 simhash).")
@click.option("--num-perm", type=click.IntRange(2, 65536), default=128, show_default=True)
@click.option("--scheme", type=click.Choice(SCHEMES), default=DEFAULT_SCHEME, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True)
@click.option("--bits", type=click.IntRange(0, 32), default=None, help="SimHash: max Hamming distance k (default 3).")
@click.option("--sentences", "n_sentences", type=click.IntRange(1), default=3, show_default=True)
@click.option("--lsh", "lsh_mode", type=click.Choice(["recall", "datasketch"]), default="recall", show_default=True,
              help="How to choose LSH bands: a recall target at the threshold, or datasketch's optimum.")
@click.option("--recall", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.99, show_default=True)
@click.option("--bands", type=click.IntRange(1), default=None, help="Explicit LSH bands b (with --rows).")
@click.option("--rows", type=click.IntRange(1), default=None, help="Explicit LSH rows per band r (with --bands).")
@click.option("--verify", type=click.Choice(["minhash", "exact", "none"]), default="minhash", show_default=True,
              help="Check candidates on the full signature estimate, on the exact shingle sets (keeps 8 bytes "
                   "per distinct shingle in memory), or not at all.")
@click.option("--linkage", type=click.Choice(["bounded", "components"]), default="bounded", show_default=True,
              help="bounded: merge most-similar pairs first and never put documents below threshold − drift "
                   "together; components: plain transitive closure (union-find).")
@click.option("--max-drift", type=click.FloatRange(0.0, 1.0), default=None,
              help="How far below the threshold a cluster member may be from the others and from its "
                   "representative (default 0.05; simhash 2/64, i.e. 2 bits).")
@click.option("--keep", type=click.Choice(["first", "longest", "key"]), default="first", show_default=True)
@click.option("--keep-field", default=None, help="With --keep key: the field whose largest value is kept.")
@click.option("--text-field", default="text", show_default=True)
@click.option("--id-field", default=None, help="Field holding the document id (default: the row's position).")
@click.option("--input-format", type=click.Choice(FORMATS), default=None,
              help="Force the input format (default: by suffix; folders are one document per file; '-' and "
                   "pipes are JSONL).")
@click.option("--format", "clusters_format", type=click.Choice(["jsonl", "parquet"]), default="jsonl",
              show_default=True, help="Format of the clusters file.")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise", show_default=True)
@click.option("--workers", type=click.IntRange(0), default=0, show_default=True,
              help="Signing processes (0: all cores; more than the cores this process may use is capped).")
@click.option("--batch-size", type=click.IntRange(1), default=2000, show_default=True)
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True)
@click.option("--no-html", is_flag=True, help="Skip report.html.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars or summary.")
def dedup(inputs, outdir, method, threshold, metric, tokenizer, convert, ngram, num_perm, scheme, seed, bits,
          n_sentences, lsh_mode, recall, bands, rows, verify, linkage, max_drift, keep, keep_field, text_field,
          id_field, input_format, clusters_format, on_error, workers, batch_size, engine, no_html, quiet):
    """Deduplicate INPUTS (JSONL[.gz|.zst], Parquet, CSV, text lines, directories; globs allowed) into OUTDIR.

    \b
    Writes OUTDIR/kept/ (the kept rows, each input in its own format, every field preserved, input order),
    OUTDIR/clusters.jsonl (one record per input row: id, cluster, kept, similarity, status),
    OUTDIR/report.json and OUTDIR/report.html.
    Defaults: minhash — word 5-grams, 128 permutations (oph), Jaccard ≥ 0.8, LSH bands for 99% recall
    at the threshold, candidates verified on the full signatures; simhash — word 3-grams, tf weights,
    Hamming ≤ 3; sentences — the 3 longest sentences; exact — normalised text hash.
    """
    from .pipeline.dedup import CLI_NAMES, DedupConfig, inapplicable, run_dedup  # noqa: PLC0415

    ctx = click.get_current_context()
    given = [CLI_NAMES.get(p, p) for p in ctx.params
             if ctx.get_parameter_source(p) is not click.core.ParameterSource.DEFAULT]
    wrong = inapplicable(method, given)
    if wrong:
        raise click.UsageError(f"not used by --method {method}: {'; '.join(wrong)}")
    if engine == "spark":
        try:
            from .engines.spark import run_spark_dedup  # noqa: PLC0415
        except ImportError as exc:
            raise click.UsageError(f"--engine spark: {exc}; install with: pip install 'neardup[spark]' "
                                   "'pandas>=2.2'") from None
        run_dedup = run_spark_dedup
    cfg = DedupConfig(method=method, threshold=threshold, metric=metric, tokenizer=tokenizer, convert=convert,
                      ngram=ngram,
                      num_perm=num_perm, scheme=scheme, seed=seed, bits=bits, sentences=n_sentences,
                      lsh_mode=lsh_mode, recall=recall, bands=bands, rows=rows, verify=verify, linkage=linkage,
                      max_drift=max_drift, keep=keep,
                      keep_field=keep_field, text_field=text_field, id_field=id_field, input_format=input_format,
                      clusters_format=clusters_format, on_error=on_error, workers=workers, batch_size=batch_size,
                      html=not no_html, quiet=quiet)
    try:
        cfg = cfg.resolved()
    except NeardupError as exc:
        raise click.UsageError(str(exc)) from None
    if workers > cfg.workers and not quiet:
        click.echo(f"neardup: --workers {workers} capped at {cfg.workers}, the CPUs this process may use "
                   f"(of {os.cpu_count()} on the machine; more processes than CPUs only add memory)", err=True)
    if engine == "spark" and outdir == "-":
        raise click.UsageError("-o - (kept rows to stdout) works with --engine local")
    report = run_dedup(list(inputs), outdir, cfg, command="neardup " + " ".join(sys.argv[1:]))
    if not quiet:
        c = report["counts"]
        t = report["timings"]
        click.echo(f"neardup dedup --method {method}: {c['input_rows']} rows → {c['kept']} kept, {c['removed']} "
                   f"removed as duplicates ({100 * c['duplicate_rate']:.1f}%), {c['skipped_records']} skipped, "
                   f"{c['clusters']} clusters, {c['empty_documents']} empty; {t['total']:.2f} s", err=True)
        if outdir != "-":
            html = os.path.join(outdir, "report.html")
            click.echo(f"report: {os.path.join(outdir, 'report.json')}"
                       + (f" and {html}" if os.path.exists(html) else ""), err=True)


# -- compare -------------------------------------------------------------------------------------------
def _read_text_arg(value: str, literal: bool) -> str:
    if literal:
        return value
    if value == "-":
        return sys.stdin.read()
    try:
        with open(value, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        raise click.BadParameter(f"{value}: {exc.strerror or exc}") from None


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
def compare(a, b, literal, tokenizer, ngram, num_perm, scheme, seed, show, as_json):
    """Why are A and B (not) near-duplicates? Exact Jaccard and containment, MinHash estimate, SimHash
    distance, sentence-signature match, and some shared / unshared shingles."""
    from .features.shingles import Shingler  # noqa: PLC0415
    from .similarity.jaccard import containment_pairs, exact_jaccard_pairs  # noqa: PLC0415
    from .sketches.simhash import hamming  # noqa: PLC0415

    ta, tb = _read_text_arg(a, literal), _read_text_arg(b, literal)
    sh = Shingler(tokenizer=tokenizer, ngram=ngram)
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


# -- lsh ------------------------------------------------------------------------------------------------
@main.command()
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=0.8,
              show_default=True)
@click.option("--num-perm", type=click.IntRange(2, 65536), default=128, show_default=True)
@click.option("--lsh", "lsh_mode", type=click.Choice(["recall", "datasketch"]), default="recall", show_default=True)
@click.option("--recall", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.99, show_default=True)
@click.option("--bands", type=click.IntRange(1), default=None)
@click.option("--rows", type=click.IntRange(1), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print the parameters and the curve as JSON.")
def lsh(threshold, num_perm, lsh_mode, recall, bands, rows, as_json):
    """Show the LSH bands chosen for a threshold and their S-curve P(candidate | s) = 1 − (1 − s^r)^b."""
    from .index.lsh import choose_params, false_negative_mass, false_positive_mass  # noqa: PLC0415

    try:
        p = choose_params(threshold, num_perm, lsh_mode, recall, bands, rows)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    xs = [round(0.05 * i, 2) for i in range(21)]
    ys = [float(p.curve(x)) for x in xs]
    if as_json:
        click.echo(json.dumps({"b": p.b, "r": p.r, "mode": p.mode, "threshold": threshold,
                               "p_at_threshold": float(p.curve(threshold)),
                               "curve": [[x, y] for x, y in zip(xs, ys)]}))
        return
    click.echo(f"b = {p.b} bands × r = {p.r} rows ({p.mode}); P(candidate | s = {threshold}) = "
               f"{float(p.curve(threshold)):.4f}")
    click.echo(f"false-positive mass ∫0^t P ds = {false_positive_mass(threshold, p.b, p.r):.4f}, "
               f"false-negative mass ∫t^1 (1 − P) ds = {false_negative_mass(threshold, p.b, p.r):.4f}")
    for x, y in zip(xs, ys):
        mark = " ← t" if abs(x - threshold) < 0.025 else ""
        click.echo(f"  s = {x:4.2f}  {y:7.4f}  {'█' * int(round(40 * y))}{mark}")


from .cli_eval import eval_cmd  # noqa: E402  (registered after the group exists)

main.add_command(eval_cmd)


if __name__ == "__main__":  # pragma: no cover
    entry()
