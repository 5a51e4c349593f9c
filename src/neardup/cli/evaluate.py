"""``neardup eval``: score a dedup result against labels (pairwise P/R/F1, adjusted Rand index).

The command object is :data:`eval_cmd` (its name is ``eval``), registered by :mod:`neardup.cli`.
"""
from __future__ import annotations

import csv
import io
import json
import math

import click
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import evaluate as ev
from ..config import click_options
from ..errors import InputFormatError
from ..features.shingles import Shingler
from ..io.compression import open_read, split_suffix
from ..io.formats.base import id_problem
from ..io.readers import iter_documents
from ..text.tokenize import signing_tokenizer

FORMATS = ("auto", "pairs", "clusters")
# the documented labels only: a word such as "yes" or a grade such as "2" is refused, not guessed
_TRUE = {"1", "1.0", "true"}
_FALSE = {"0", "0.0", "false"}


class _Ids:
    """String form of every id (so JSON 3 and CSV "3" are one id) → dense index 0..n-1."""

    def __init__(self):
        self.index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.index)

    def add(self, key: str) -> int:
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.index)
        return i


def _key(value, where: str) -> str:
    problem = id_problem(value)
    if problem is not None:
        raise click.ClickException(f"{where}: id {problem}")
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _label(value, where: str):
    """1 → True, 0 → False, null → None (unjudged)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("", "null", "none", "nan"):
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise click.ClickException(f"{where}: label must be 1 or 0 (true/false), or null/empty for unjudged; "
                               f"got {value!r}")


def _open(path: str):
    """Text of a pairs/clusters file through the integrity-checked reader (.gz/.zst/.bz2 by name;
    standard input by its first bytes)."""
    if path == "-":
        raw = open_read("-", None, "<stdin>", sniffed=True)
    else:
        raw = open_read(path, split_suffix(path)[1], path)
    return io.TextIOWrapper(raw, encoding="utf-8", newline="")


def _is_csv(path: str) -> bool:
    return split_suffix(path)[0].lower().endswith((".csv", ".tsv"))


def _parquet(path: str) -> list[tuple[str, dict]] | None:
    """Records of a Parquet file (dedup's ``--format parquet`` clusters) as (location, dict); None
    when ``path`` is not one (standard input, or no Parquet magic at its start)."""
    if path == "-":
        return None
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"PAR1":
                return None
    except OSError:
        return None                    # (the reader below names what is wrong)

    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, pa.ArrowException) as exc:
        raise click.ClickException(f"{path}: cannot read as Parquet ({exc})") from None
    return [(f"{path}: row {i}", rec) for i, rec in enumerate(rows, 1)]


def _read(path: str) -> list[tuple[str, dict]]:
    """Records of a JSONL, CSV or Parquet file as (location, dict). CSV: header optional; without one
    the columns are a, b[, label]."""
    out = _parquet(path)
    if out is not None:
        return out
    out = []
    try:
        with _open(path) as fh:
            if _is_csv(path):
                reader = csv.reader(fh, delimiter="\t" if split_suffix(path)[0].lower().endswith(".tsv") else ",",
                                    strict=True)
                header = None
                for lineno, row in enumerate(reader, 1):
                    if not row or all(not c.strip() for c in row):
                        continue
                    cells = [c.strip() for c in row]
                    if header is None and not out and ({"a", "b"} <= set(cells) or {"id", "cluster"} <= set(cells)):
                        header = cells
                        continue
                    names = header or ["a", "b", "label"][:len(cells)]
                    if len(cells) != len(names):
                        raise click.ClickException(f"{path}:{lineno}: expected {len(names)} columns, got {len(cells)}")
                    out.append((f"{path}:{lineno}", dict(zip(names, cells))))
            else:
                for lineno, raw in enumerate(fh, 1):
                    if not raw.strip():
                        continue
                    try:
                        rec = json.loads(raw)
                    except ValueError as exc:
                        raise click.ClickException(f"{path}:{lineno}: malformed JSON ({exc})") from None
                    except RecursionError:
                        raise click.ClickException(f"{path}:{lineno}: JSON nested too deeply to parse") from None
                    if not isinstance(rec, dict):
                        raise click.ClickException(f"{path}:{lineno}: expected a JSON object")
                    out.append((f"{path}:{lineno}", rec))
    except InputFormatError as exc:
        raise click.ClickException(str(exc)) from None
    except csv.Error as exc:
        raise click.ClickException(f"{path}: malformed CSV ({exc}), near line {reader.line_num}") from None
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{path}: not UTF-8 ({exc})") from None
    return out


def _kind(records, fmt: str, path: str) -> str:
    if fmt != "auto":
        return fmt
    if not records:
        raise click.ClickException(f"{path}: empty; pass --format/--labels-format to say what it holds")
    keys = set(records[0][1])
    if {"id", "cluster"} <= keys:
        return "clusters"
    if {"a", "b"} <= keys:
        return "pairs"
    raise click.ClickException(f"{records[0][0]}: neither a pairs record (a, b[, label]) nor a clusters "
                               f"record (id, cluster); fields: {', '.join(sorted(map(str, keys)))}")


def _clusters(records, ids: _Ids, path: str) -> dict[int, str]:
    """{document index: cluster key}; every id once."""
    out: dict[int, str] = {}
    for where, rec in records:
        if "id" not in rec or "cluster" not in rec:
            raise click.ClickException(f"{where}: a clusters record needs 'id' and 'cluster'")
        i = ids.add(_key(rec["id"], where))
        if i in out:
            raise click.ClickException(f"{where}: id {rec['id']!r} appears twice in {path}")
        out[i] = _key(rec["cluster"], where)
    return out


def _pairs(records, ids: _Ids):
    """(a, b, label) arrays; label: 1 duplicate, 0 not, -1 unjudged (null). Missing label → 1."""
    a, b, lab = [], [], []
    for where, rec in records:
        if "a" not in rec or "b" not in rec:
            raise click.ClickException(f"{where}: a pairs record needs 'a' and 'b'")
        a.append(ids.add(_key(rec["a"], where)))
        b.append(ids.add(_key(rec["b"], where)))
        v = _label(rec.get("label", 1), where)
        lab.append(-1 if v is None else int(v))
    return np.asarray(a, np.int64), np.asarray(b, np.int64), np.asarray(lab, np.int8)


def _label_array(clusters: dict[int, str], n: int) -> np.ndarray:
    """Labels for documents 0..n-1 (>= 0); a document absent from ``clusters`` gets a label of
    its own (< 0), so it is a singleton."""
    lab = -1 - np.arange(n, dtype=np.int64)
    if clusters:
        idx = np.fromiter(clusters.keys(), dtype=np.int64, count=len(clusters))
        _, inv = np.unique(np.array(list(clusters.values()), dtype=object).astype(str), return_inverse=True)
        ok = idx < n
        lab[idx[ok]] = inv.ravel()[ok]
    return lab


def _corpus_truth(corpus, text_field, id_field, threshold, tokenizer, ngram, ids: _Ids):
    texts = []
    for doc in iter_documents([corpus], text_field=text_field, id_field=id_field):
        i = ids.add(_key(doc.id, f"{corpus}:{doc.line}"))
        if i != len(texts):
            raise click.ClickException(f"{corpus}:{doc.line}: id {doc.id!r} appears twice")
        texts.append(doc.text)
    feats = Shingler(tokenizer=signing_tokenizer(tokenizer), ngram=ngram).features(texts)   # as MinHash shingles
    lo, hi, _ = ev.exact_jaccard_truth(feats, threshold)
    return len(texts), lo, hi


def _fmt(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


# (-h as on every command even when the command object is invoked alone: click keeps the help option it
# first builds, so one built without the group's setting would refuse -h under the group afterwards)
@click.command("eval", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("predicted", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--labels", type=click.Path(dir_okay=False), default=None,
              help="Ground truth: a pairs file (JSONL or CSV) or a clusters file (JSONL).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="What PREDICTED holds (auto: from its first record).")
@click.option("--labels-format", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="What --labels holds (auto: from its first record).")
@click.option("--scope", type=click.Choice(["auto", "all", "judged"]), default="auto", show_default=True,
              help="Pairs labels: 'all' = every unlisted pair is a non-duplicate; 'judged' = score only "
                   "the listed (judged) pairs. auto: 'judged' when the file has a label-0 pair.")
@click.option("--exact-jaccard", "exact", type=click.FloatRange(0, 1, min_open=True), default=None,
              metavar="THRESH", help="Ground truth = every corpus pair with exact Jaccard >= THRESH.")
@click.option("--corpus", default=None,
              help="Corpus for --exact-jaccard (any input dedup reads: JSONL, CSV, Parquet, text lines, a folder).")
@click_options(("tokenizer", "ngram", "text_field", "id_field"), defaults={"ngram": 5, "id_field": "id"},
               helps={"tokenizer": "Shingles for --exact-jaccard.", "ngram": "Shingle size for --exact-jaccard.",
                      "id_field": "Field holding each document's id in --corpus."})
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def eval_cmd(predicted, labels, fmt, labels_format, scope, exact, corpus, text_field, id_field, tokenizer, ngram,
             as_json):
    """Score PREDICTED duplicates against ground truth: pairwise precision, recall and F1, and
    the adjusted Rand index (ARI) when both sides are clusterings.

    \b
    File formats (JSONL = one JSON object per line; .gz accepted):
      clusters  JSONL {"id": ID, "cluster": C, ...}: one record per document; documents
                with equal C are one cluster (the dedup output: extra fields such as
                "kept" and "similarity" are ignored; its Parquet form, --format
                parquet, is read too). A document absent from the file is a cluster
                of its own.
      pairs     JSONL {"a": ID, "b": ID, "label": 1|0} or CSV rows a,b[,label]
                (optional header "a,b,label"). label 1 (or true) = duplicate,
                0 (or false) = not, null/empty = unjudged (skipped); no label
                means 1; any other label is an error. Pairs are unordered;
                repeats and self-pairs are ignored.
    Ids are compared as text: JSON 7 and CSV "7" are the same document.

    \b
    Ground truth, one of:
      --labels FILE      pairs or clusters (see --scope for pairs files);
      --exact-jaccard T  --corpus CORPUS.jsonl [--text-field text] [--id-field id]
                         [--tokenizer word] [--ngram 5]: every pair of corpus
                         documents with exact Jaccard >= T over distinct shingles.
                         ARI is then taken against the connected components of
                         those pairs (Jaccard is not transitive: read it as a guide).

    \b
    Scores: a pair is predicted when both documents share a predicted cluster (or
    the pair is listed); P = TP/(TP+FP), R = TP/(TP+FN), F1 = 2PR/(P+R), over all
    pairs of documents (scope all) or over the judged pairs only (scope judged).
    ARI (Hubert & Arabie) compares two clusterings over the union of their ids.

    \b
    Examples:
      neardup eval out/clusters.jsonl --labels labels.jsonl    # labels: {"a", "b", "label"} lines
      neardup eval out/clusters.jsonl --exact-jaccard 0.8 --corpus docs.jsonl --json
    """
    if (labels is None) == (exact is None):
        raise click.UsageError("give exactly one ground truth: --labels FILE or --exact-jaccard THRESH --corpus FILE")
    if exact is not None and corpus is None:
        raise click.UsageError("--exact-jaccard needs --corpus CORPUS.jsonl")
    if corpus is not None and exact is None:
        raise click.UsageError("--corpus is only used with --exact-jaccard")
    warnings: list[str] = []
    ids = _Ids()
    result: dict = {"predicted": predicted}

    # ground truth first when it defines the documents (corpus)
    if exact is not None:
        n_corpus, t_lo, t_hi = _corpus_truth(corpus, text_field, id_field, exact, tokenizer, ngram, ids)
        truth_kind = "exact"
        result["truth"] = {"kind": "exact_jaccard", "threshold": exact, "corpus": corpus, "tokenizer": tokenizer,
                           "ngram": ngram}
    else:
        lab_records = _read(labels)
        truth_kind = _kind(lab_records, labels_format, labels)
        result["truth"] = {"kind": truth_kind, "labels": labels}

    pred_records = _read(predicted)
    pred_kind = _kind(pred_records, fmt, predicted)
    n_before_pred = len(ids)
    if pred_kind == "clusters":
        pred_clusters = _clusters(pred_records, ids, predicted)
    else:
        p_a, p_b, p_lab = _pairs(pred_records, ids)
        keep = p_lab == 1
        p_a, p_b = p_a[keep], p_b[keep]
    if exact is not None and len(ids) > n_before_pred:
        extra = len(ids) - n_before_pred
        warnings.append(f"{extra} predicted ids are not in the corpus; they are ignored")

    if truth_kind == "clusters":
        truth_clusters = _clusters(lab_records, ids, labels)
    elif truth_kind == "pairs":
        t_a, t_b, t_lab = _pairs(lab_records, ids)
        unjudged = int(np.count_nonzero(t_lab < 0))
        if unjudged:
            warnings.append(f"{unjudged} unjudged (null label) pairs skipped")
        if scope == "auto":
            scope = "judged" if np.any(t_lab == 0) else "all"
        result["unjudged_pairs"] = unjudged
    if truth_kind != "pairs":
        if scope == "judged":
            raise click.UsageError("--scope judged needs a pairs labels file")
        scope = "all"
    result["scope"] = scope
    result["format"] = pred_kind

    n = n_corpus if exact is not None else len(ids)
    ari = None
    if exact is not None:
        if pred_kind == "clusters":
            known = {i: c for i, c in pred_clusters.items() if i < n}
            missing = n - len(known)
            if missing:
                warnings.append(f"{missing} corpus documents have no predicted cluster: scored as singletons")
            pl = _label_array(known, n)
            scores = ev.clusters_vs_pairs_scores(pl, (t_lo, t_hi))
            ari = ev.adjusted_rand_index(pl, ev.labels_from_pairs(n, (t_lo, t_hi)))
            result["ari_truth"] = "connected components of the exact-Jaccard pairs"
        else:
            ok = (p_a < n) & (p_b < n)
            scores = ev.pair_scores((p_a[ok], p_b[ok]), (t_lo, t_hi))
    elif truth_kind == "clusters":
        tl = _label_array(truth_clusters, n)
        if pred_kind == "clusters":
            missing_p = n - len(pred_clusters)
            missing_t = n - len(truth_clusters)
            if missing_p:
                warnings.append(f"{missing_p} labelled ids have no predicted cluster: scored as singletons")
            if missing_t:
                warnings.append(f"{missing_t} predicted ids have no true cluster: scored as singletons")
            pl = _label_array(pred_clusters, n)
            scores = ev.cluster_pair_scores(pl, tl)
            ari = ev.adjusted_rand_index(pl, tl)
        else:
            scores = ev.pairs_vs_clusters_scores((p_a, p_b), tl)
    elif scope == "judged":
        judged = t_lab >= 0
        a, b, y = t_a[judged], t_b[judged], t_lab[judged] == 1
        if pred_kind == "clusters":
            pl = _label_array(pred_clusters, n)
            missing = int(np.count_nonzero((pl[a] < 0) | (pl[b] < 0)))
            if missing:
                warnings.append(f"{missing} judged pairs name a document with no predicted cluster")
            decided = pl[a] == pl[b]
        else:
            lo, hi = ev.canonical_pairs((p_a, p_b))
            pk = lo * np.int64(n) + hi
            qk = np.minimum(a, b) * np.int64(n) + np.maximum(a, b)
            decided = np.isin(qk, pk) & (a != b)
        scores = ev.decision_scores(decided, y)
        result["judged_pairs"] = int(judged.sum())
    else:
        pos = t_lab == 1
        if pred_kind == "clusters":
            missing = len({int(x) for x in np.concatenate([t_a[pos], t_b[pos]])} - set(pred_clusters))
            if missing:
                warnings.append(f"{missing} labelled ids have no predicted cluster: scored as singletons")
            scores = ev.clusters_vs_pairs_scores(_label_array(pred_clusters, n), (t_a[pos], t_b[pos]))
        else:
            scores = ev.pair_scores((p_a, p_b), (t_a[pos], t_b[pos]))

    result.update({"documents": n, "predicted_pairs": scores.tp + scores.fp, "true_pairs": scores.tp + scores.fn,
                   **scores.to_dict(), "ari": ari, "warnings": warnings})
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False))
        return
    for w in warnings:
        click.echo(f"neardup eval: warning: {w}", err=True)
    what = "judged pairs" if scope == "judged" else "pairs"
    click.echo(f"{what}: precision {_fmt(scores.precision)}  recall {_fmt(scores.recall)}  F1 {_fmt(scores.f1)}  "
               f"(TP {scores.tp}, FP {scores.fp}, FN {scores.fn}; scope {scope})")
    if ari is not None:
        click.echo(f"clusters: ARI {_fmt(ari)}  ({n} documents)")
