"""A step of a run's plan (:mod:`neardup.dedup.plan`)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step of a run: ``name`` (its timing in ``report.json``), ``over`` (what flows through it),
    ``by`` (the key its work is grouped by; None: a map over any batch alone), ``does`` (one line,
    with the run's parameters)."""

    name: str
    over: str
    by: str | None
    does: str

    @property
    def division(self) -> str:
        return "map" if self.by is None else f"by {self.by}"


__all__ = ["Step"]
