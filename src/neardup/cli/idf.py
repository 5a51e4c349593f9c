"""``neardup idf fit``: an IDF table of your own corpus, in jieba's ``word idf`` format, for
``--weighting tfidf --idf PATH`` (or ``--compat yanyiwu --idf PATH``)."""
from __future__ import annotations

import sys
import time

import click
import numpy as np

from ..config import DedupConfig, click_options
from ..errors import ConfigError, OutputError
from ..features.weights import fit_idf_words
from ..io.outfile import check_output_file, replacing
from ..io.readers import batched
from ..io.sources import expand_inputs
from ..text.dictionaries import load_user_dict, word_files, write_idf
from .group import ParameterError, main
from .index import _rows

MAX_BATCH = 1 << 16           # documents per batch at most: a batch is held in memory whole



@main.group()
def idf():
    """IDF tables for SimHash's tf-idf weights.

    \b
    Examples:
      neardup idf fit 'news/*.jsonl' -o news-idf.txt
    """


@idf.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The table to write ('-': standard output); replaced only when the command succeeds.")
@click_options(("tokenizer", "convert", "user_dict", "compat"), defaults={"tokenizer": "jieba"},
               choices={"tokenizer": ("word", "jieba", "auto")},
               helps={"tokenizer": "The tokens counted: use the tokenizer you will sign with."})
@click.option("--min-df", type=click.IntRange(1), default=1, show_default=True,
              help="Leave out words found in fewer documents (they get the table's default).")
@click_options(("input_format", "text_field", "on_error", "batch_size"), defaults={"batch_size": 4096},
               helps={"batch_size": f"Documents held and counted at once, at most {MAX_BATCH} (the corpus is "
                                    "streamed: memory is one batch and the counts)."})
def fit(inputs, output, tokenizer, convert, user_dict, compat, min_df, input_format, text_field, on_error, batch_size):
    """Count in how many documents of INPUTS each word occurs and write idf = ln((1 + N) / (1 + df)) + 1
    per word, one 'word idf' line each, sorted (the same corpus always gives the same file). Its first
    line records the tokenizer (or --compat yanyiwu) counted with; a command that signs with another
    refuses the table.

    \b
    Examples:
      neardup idf fit news/*.jsonl -o news-idf.txt
      neardup dedup news/*.jsonl -o out --method simhash --tokenizer jieba --idf news-idf.txt --top-n 20
      neardup idf fit news/ --compat yanyiwu -o idf.utf8     # for --compat yanyiwu --idf idf.utf8
      neardup idf fit news/ --compat jieba-analyse -o idf.txt  # for --compat jieba-analyse --idf idf.txt
    """

    if batch_size > MAX_BATCH:
        raise ParameterError(f"batch_size (--batch-size) must be at most {MAX_BATCH} here (a batch is held in memory "
                             f"whole); got {batch_size}")
    if compat is not None and compat not in ("yanyiwu", "jieba-analyse"):
        raise click.UsageError(f"--compat {compat} has no IDF table (only yanyiwu and jieba-analyse weigh words by "
                               "IDF)")
    if user_dict is not None:
        load_user_dict(user_dict)      # a bad or oversized file: one line naming it (checked again below, cached)
    try:
        DedupConfig(method="simhash", convert=convert, user_dict=user_dict, compat=compat,   # an IDF table is
                    tokenizer="word" if compat else tokenizer,                             # of keywords
                    idf=None if compat else "jieba").resolved()
    except ConfigError as exc:
        raise ParameterError(str(exc)) from None
    specs = expand_inputs(list(inputs), input_format)
    try:        # the one rule for output files, before anything is read
        check_output_file(output, specs, files=word_files(user_dict=user_dict))
    except OutputError as exc:
        raise ParameterError(str(exc)) from None
    seen: list = []            # the reader's list of skipped rows (one list, filled as it reads)

    def texts():
        for _, text, skipped in _rows(inputs, text_field, None, on_error, specs=specs):
            if not seen:
                seen.append(skipped)
            yield text

    start = time.perf_counter()
    words, values, n = fit_idf_words(batched(texts(), batch_size), tokenizer, compat, user_dict, convert)
    if min_df > 1:
        df_min = np.log((1.0 + n) / (1.0 + min_df)) + 1.0     # idf falls as df grows: df ≥ min_df ⇔ idf ≤ this
        keep = values <= df_min + 1e-12
        words = [w for w, k in zip(words, keep) if k]
        values = values[keep]
    made_with = compat or tokenizer      # recorded in the table, checked by every --idf
    if not words:
        raise click.ClickException(f"no words found in {n} documents: nothing to write to {output}")
    if output == "-":
        write_idf(output, words, values, made_with)
    else:
        with replacing(output) as tmp:
            write_idf(tmp, words, values, made_with)
    click.echo(f"{n} documents, {len(words)} words, {len(seen[0]) if seen else 0} rows skipped, "
               f"{time.perf_counter() - start:.2f} s → {output}", err=True)
    sys.stderr.flush()
