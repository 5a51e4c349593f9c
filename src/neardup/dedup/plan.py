"""The plan of a run: its steps in order, declared from the resolved configuration before any input
is read — what ``neardup dedup --plan`` prints, and what each engine runs.

A step is named as the run's report times it (``report.json``'s ``timings``), says what flows through
it (documents, candidate pairs, rows of clusters) and how its work divides: ``map`` — any batch of
them alone, so any worker can take any batch; or ``by`` a key — everything sharing the key at once,
which a cluster engine brings together with one shuffle (datatrove's steps, text-dedup's Spark job).
The method's own steps come from its strategy
(:meth:`~neardup.dedup.methods.base.Method.steps`); the plan adds what every run does around them:
reading and signing, an index's matches, the span step, and the outputs. ``tests/test_plan.py``
runs each plan and checks that the steps the run timed are the plan's, in its order.
"""
from __future__ import annotations

from ..config import ResolvedConfig, check_banded
from ..errors import ConfigError
from ..io.outdir import STDOUT
from . import resume
from .methods import method_of
from .spans import span_method, spans_beside
from .step import Step


def refusals(cfg: ResolvedConfig, outdir: str) -> None:
    """What a run refuses before it looks at any input: a scheme LSH cannot band, ``--resume`` where it
    keeps nothing, ``--pairs`` to standard output (``neardup dedup`` and ``--plan`` alike)."""
    check_banded(cfg)
    resume.check_resumable(cfg, [], outdir)
    if outdir == STDOUT and cfg.pairs:
        raise ConfigError("pairs (--pairs) writes OUTDIR/pairs.parquet, and -o - writes nothing but the kept rows; "
                          "give an output folder")


def plan(cfg: ResolvedConfig, outdir: str | None = None) -> tuple[Step, ...]:
    """The steps of the run ``cfg`` (resolved: the method's defaults filled in) into ``outdir``, in order."""
    method = method_of(cfg)
    steps = [Step("read_sign", "documents", None, method.signs(cfg))]
    if cfg.resume:
        steps.append(Step("checkpoint", "documents", None, "keep pass 1's signatures beside OUTDIR (removed when "
                                                           "the run succeeds; a rerun with --resume reads them back "
                                                           "instead, timed as resume_load)"))
    spans = spans_beside(cfg)
    if spans is not None and cfg.spans_order == "before":
        steps.insert(0, _span_step(spans, "first, on the whole texts; documents are then compared on what is left"))
    if cfg.index is not None:
        steps.append(Step("index_query", "documents", None, "probe the index for the documents each new row "
                                                            "matches; they join the clustering first, as kept rows"))
    steps += method.steps(cfg)
    if spans is not None and cfg.spans_order == "after":
        steps.append(_span_step(spans, "among the documents kept"))
    steps.append(Step("write", "inputs", None, "the kept rows to standard output" if outdir == STDOUT
                      else _outputs(cfg)))
    return tuple(steps)


def _span_step(cfg: ResolvedConfig, when: str) -> Step:
    return Step("spans", "documents", "span", f"{method_of(cfg).finds(cfg)}, {when}")


def outputs(cfg: ResolvedConfig) -> list[str]:
    """The files and folders the run writes in OUTDIR (the plan's ``write`` step)."""
    spans_only = span_method(cfg) == cfg.method
    out = ["kept/", "edits.jsonl" if spans_only else f"clusters.{cfg.clusters_format}"]
    if span_method(cfg) is not None and not spans_only:
        out.append("edits.jsonl")
    if cfg.pairs:
        out.append("pairs.parquet")
    return out + ["report.json"] + (["report.html"] if cfg.html else [])


def _outputs(cfg: ResolvedConfig) -> str:
    what = ", ".join(outputs(cfg))
    if cfg.index is not None:
        what += "; the kept rows added to the index"
    return what


def describe(steps: tuple[Step, ...]) -> str:
    """A plan (:func:`plan`) as text: one numbered line per step (name, what flows and how it divides,
    what it does)."""
    width = max(len(s.name) for s in steps)
    flows = [f"{s.over}, {s.division}" for s in steps]
    fw = max(len(f) for f in flows)
    return "\n".join(f"{i:>2}. {s.name:<{width}}  {f:<{fw}}  {s.does}" for i, (s, f) in enumerate(zip(steps, flows), 1))


__all__ = ["Step", "describe", "outputs", "plan", "refusals"]
