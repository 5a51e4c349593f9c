"""report.json — what a run did — built in one place for both engines: each engine fills a
:class:`RunSummary` (counts it computed its own way: in memory, or as DataFrame aggregates) and
:func:`build_report` turns it into the report, so a field is defined once."""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .._version import __version__
from ..config import DedupConfig
from ..index.lsh import s_curve
from ..index.simhash_index import plan_tables
from ..io.ids import json_default
from ..report import write_html
from ..similarity.simhash import COSINE_AT_T, curve, within
from ..text.normalize import Normalizer
from .finish import ROW_HOW

if TYPE_CHECKING:
    pass

RUN_ONLY = ("quiet", "progress", "html", "samples", "resume",   # how a run was done, not what it computed
            "index")                                  # (--index has its own section)
SIMILARITY_BINS = 20
SKIPPED_LISTED = 1000
SAMPLE_CHARS = 4000
INDEXED_TEXT = "(a document of the index: its text is not stored there)"


def sample_ranks(n_removed: int, n: int) -> list[int]:
    """Which removed rows the report shows, as ranks in their (similarity, row) order: the least
    similar half of ``n`` (the most informative), then ``n`` − that spread evenly over the rest."""
    if n_removed == 0 or n <= 0:
        return []
    ranks = list(range(min(n // 2, n_removed)))
    rest = n_removed - len(ranks)
    if rest > 0:
        ranks += [len(ranks) + int(i) for i in np.linspace(0, rest - 1, min(n - len(ranks), rest)).astype(int)]
    return list(dict.fromkeys(ranks))


def similarity_edges() -> list[float]:
    return [round(float(e), 4) for e in np.linspace(0.0, 1.0, SIMILARITY_BINS + 1)]


def similarity_counts(similarities) -> list[int]:
    """Counts of the removed rows' similarities to their representatives in 20 bins over [0, 1]
    (NumPy's histogram rules: the last bin is closed)."""
    counts, _ = np.histogram(np.asarray(similarities, dtype=np.float64), bins=SIMILARITY_BINS, range=(0.0, 1.0))
    return counts.tolist()


def lsh_report(threshold: float, b: int, r: int, mode: str = "") -> dict:
    """The report's LSH section: the bands and 101 points of their S-curve. Containment banding
    (``mode`` "containment per size ratio …") gives each pair the bands of its size ratio; the curve
    shown is then that of two documents of equal size, over their containment C (J = C / (2 − C))."""
    xs = np.linspace(0.0, 1.0, 101)
    per_ratio = mode.startswith("containment")
    ys = s_curve(xs / (2.0 - xs) if per_ratio else xs, b, r)
    out = {"b": b, "r": r, "threshold": threshold,
           "curve": [[round(float(x), 4), round(float(y), 6)] for x, y in zip(xs, ys)]}
    if per_ratio:
        out["curve_of"] = "containment, two documents of equal size (each size ratio has its own bands)"
    return out


def distance_counts(similarities) -> list[int]:
    """SimHash: counts of the removed rows' Hamming distances to their representatives, d = 64 (1 − s),
    for d = 0 … the largest seen."""
    d = np.rint(64.0 * (1.0 - np.asarray(similarities, dtype=np.float64))).astype(np.int64)
    return np.bincount(np.clip(d, 0, 64)).tolist() if d.size else []


def simhash_report(k: int, counts: list, fingerprints: int) -> dict:
    """The report's SimHash section: the distances (in bits) of removed documents to their kept
    representatives, and the permuted-table layout that found every pair within k bits
    (:func:`neardup.index.simhash_index.plan_tables` for the run's distinct fingerprints: the
    pigeonhole argument of Manku et al. — k differing bits leave at least one key untouched)."""
    plan = plan_tables(64, k, max(int(fingerprints), 2))
    top = max(k, len(counts) - 1)
    counts = [int(x) for x in counts] + [0] * (top + 1 - len(counts))
    bits = [int(x) for x in plan.key_bits]
    if len(plan.levels) == 1:
        b = plan.levels[0]
        width = f"{64 // b}" if 64 % b == 0 else f"{64 // b}–{64 // b + 1}"
        keys = f"{min(bits)}" if min(bits) == max(bits) else f"{min(bits)}–{max(bits)}"
        layout = (f"{b} blocks of {width} bits; each of the C({b}, {k}) = {plan.n_tables} tables keys on "
                  f"{b - k} block{'s' if b - k != 1 else ''} ({keys} bits)")
    else:
        b1, b2 = plan.levels
        keys = f"{min(bits)}" if min(bits) == max(bits) else f"{min(bits)}–{max(bits)}"
        layout = (f"two levels, {b1} × {b2} blocks; C({b1}, {k}) × C({b2}, {k}) = {plan.n_tables} tables keyed on "
                  f"{keys} bits")
    return {"bits": 64, "max_distance": int(k), "fingerprints": int(fingerprints),
            "distance_histogram": {"distances": list(range(top + 1)), "counts": counts},
            "tables": {"count": plan.n_tables, "levels": list(plan.levels), "key_bits": [min(bits), max(bits)],
                       "layout": layout}}


def verified_simhash_report(k_c: int, threshold: float, recall: float, counts: list, fingerprints: int) -> dict:
    """The report's section for verified SimHash: :func:`simhash_report` of the candidate radius k_c
    (its histogram: the distances of the accepted pairs), the rule that decided them, and the S-curve
    of the radius over feature cosine (:mod:`neardup.similarity.simhash`), with the recall it gives at
    the cosine near-duplicates reach at the threshold."""
    out = simhash_report(k_c, counts, fingerprints)
    out["histogram_of"] = "the Hamming distances of the accepted pairs (each checked exactly)"
    out["verified"] = {"candidate_bits": int(k_c), "threshold": float(threshold),
                       "decided_by": "exact Jaccard of word 5-gram shingles (the texts re-read for the candidates)",
                       "recall_target": float(recall), "at_cosine": COSINE_AT_T,
                       "expected_recall": round(within(k_c, COSINE_AT_T), 6), "curve": curve(k_c),
                       "curve_of": "P(a pair is a candidate) over the cosine of its unigram-tf feature vectors"}
    return out


@dataclass
class RunSummary:
    """What an engine measured; :func:`build_report` makes the report of it."""

    cfg: DedupConfig
    command: str
    engine: str
    inputs: list
    outputs: list
    n_rows: int
    n_docs: int
    removed: int
    n_skipped: int
    skipped: list                  # (file, line, reason) of the first skipped rows
    empty: int
    replaced: int
    chars: int
    candidates: int
    verified: int
    cluster_sizes: dict            # size (> 1) → number of clusters of that size
    similarity_counts: list        # SIMILARITY_BINS counts
    samples: list                  # (kept id, removed id, similarity, kept text, removed text)
    timings: dict
    lsh: tuple | None = None       # (b, r, mode) for MinHash
    simhash: tuple | None = None   # (distance counts, distinct fingerprints) for SimHash
    index: dict | None = None      # --index: the index before the run, matches, documents added
    engine_info: dict | None = None
    decisions: dict | None = None  # removed rows per decision word; containment: overrides, top containers
    extra: dict = field(default_factory=dict)


def as_compared(cfg):
    """A sample's text as the run compared it: with ``--convert``, converted (OpenCC), so that a pair
    found equal is not shown differing in every character; case and spacing are left as they are."""
    if cfg.convert is None:
        return lambda text: text
    return Normalizer(nfkc=False, casefold=False, whitespace=False, convert=cfg.convert)


def build_report(s: RunSummary, explain=None) -> dict:
    """The report of a run. ``explain(kept_text, removed_text, params)``: a sample pair's compact
    explanation (a dict or None; the engines pass :func:`neardup.explain.compact_explanation`, which
    lies above this layer); None: samples carry ``"explain": null``."""
    c = s.cfg
    params = {k: v for k, v in vars(c).items() if k not in RUN_ONLY}
    compared = as_compared(c)
    if s.lsh is not None:
        params.update({"b": s.lsh[0], "r": s.lsh[1], "lsh_mode": s.lsh[2]})
    report = {
        "neardup_version": __version__,
        "command": s.command,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "engine": s.engine,
    }
    if s.engine_info is not None:
        report[s.engine] = s.engine_info
    report.update({
        "inputs": list(s.inputs),
        "outputs": s.outputs,
        "parameters": params,
        "counts": {
            "input_rows": s.n_rows,
            "documents": s.n_docs,
            "kept": s.n_docs - s.removed,
            "removed": s.removed,
            "skipped_records": s.n_skipped,
            "duplicate_rate": s.removed / s.n_docs if s.n_docs else 0.0,
            "clusters": int(sum(s.cluster_sizes.values())),
            "empty_documents": s.empty,
            "invalid_utf8_replaced": s.replaced,
            "candidate_pairs": s.candidates,
            "verified_pairs": s.verified,
            "input_chars": s.chars,
            "accounted": s.n_rows == s.n_docs + s.n_skipped,
        },
        "skipped": [{"file": f, "line": line, "reason": reason} for f, line, reason in s.skipped[:SKIPPED_LISTED]],
        "timings": {k: round(v, 4) for k, v in s.timings.items()},
        "cluster_sizes": {str(int(k)): int(v) for k, v in sorted(s.cluster_sizes.items())},
        "similarity_histogram": {"edges": similarity_edges(), "counts": [int(x) for x in s.similarity_counts]},
        "samples": [{"kept_id": k, "removed_id": d, "similarity": round(sim, 4), "kept_text": kt[:SAMPLE_CHARS],
                     "removed_text": dt[:SAMPLE_CHARS], "explain": explain(kt, dt, params) if explain else None}
                    for k, d, sim, kt, dt in ((k, d, sim, compared(kt), compared(dt)) for k, d, sim, kt, dt
                                              in s.samples)],
    })
    if s.lsh is not None:             # (what the run's finder banded with: MinHash's bands)
        report["lsh"] = lsh_report(c.threshold, s.lsh[0], s.lsh[1], s.lsh[2])
    if s.simhash is not None:         # (SimHash's finders: the distances of the removed)
        report["simhash"] = (verified_simhash_report(c.candidate_bits, c.threshold, c.recall, *s.simhash)
                             if c.candidate_bits is not None else simhash_report(c.bits, *s.simhash))
    if s.index is not None:
        report["index"] = s.index
    if s.decisions is not None:
        report["decisions"] = s.decisions
    report.update(s.extra)
    return report


CONTAINERS_LISTED = 10


def decisions_report(counts: dict, containment: bool, overridden: int = 0, containers=()) -> dict:
    """The report's ``decisions``: removed rows per decision word (every word, 0 included, in
    :data:`~neardup.dedup.finish.ROW_HOW` order); for containment also how many times a container was
    kept against the keep policy's choice, and the containers that hold the most removed documents
    (``containers``: (id, count), most first, ties by row; the first :data:`CONTAINERS_LISTED`)."""
    out = {"removed_by": {w: int(counts.get(w, 0)) for w in ROW_HOW}}
    if containment:
        out["containment"] = {"removed_as_contained": int(counts.get("contained", 0)),
                              "keep_policy_overridden": int(overridden),
                              "top_containers": [{"id": i, "contained": int(k)} for i, k in
                                                 list(containers)[:CONTAINERS_LISTED]]}
    return out


def write_report(report: dict, folder: str, html: bool) -> None:
    """report.json (and report.html) in ``folder``; a lone surrogate in a text, an id or a file name is
    written as its JSON escape ``\\udXXX`` (valid JSON that reads back to the same string)."""
    with open(os.path.join(folder, "report.json"), "w", encoding="utf-8", errors="backslashreplace") as fh:
        json.dump(report, fh, indent=2, ensure_ascii=False, default=json_default)
        fh.write("\n")
    if html:
        write_html(report, os.path.join(folder, "report.html"))


