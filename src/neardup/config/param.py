"""A parameter's constraints (scikit-learn's constraint objects, for one value): its type, allowed
values or range, whether None is allowed, the methods whose result it changes; the check, and the
one shape of every refusal::

    metric (--metric) must be one of jaccard, containment; got 'cosine'
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError


@dataclass(frozen=True)
class Param:
    """One parameter's constraints. ``choices`` or a range (``lo``/``hi``, open or closed) bound the
    value; ``nullable``: None is allowed (the method's default, or "not given"); ``methods``: the
    methods whose result it changes (set for another method it is refused: a flag that silently does
    nothing misleads); ``flag``: the command-line option ("" for the Python API only)."""

    name: str
    group: str
    kind: type
    default: object = None
    choices: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    methods: tuple | None = None
    flag: str | None = None
    help: str = ""

    @property
    def option(self) -> str:
        return self.flag if self.flag is not None else "--" + self.name.replace("_", "-")

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        what = {int: "an integer", float: "a number", bool: "true or false", str: "text"}[self.kind]
        if self.lo is None and self.hi is None:
            return what
        if self.hi is None:
            return f"{what} {'>' if self.lo_open else '>='} {self.lo:g}"
        if self.lo is None:
            return f"{what} {'<' if self.hi_open else '<='} {self.hi:g}"
        return f"{what} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"

    def refuse(self, value, why: str | None = None) -> ConfigError:
        label = f"{self.name} ({self.option})" if self.option else self.name
        return ConfigError(f"{label} must be {why or self.allowed()}; got {value!r}")

    def check(self, value):
        """``value`` normalised (NumPy scalars to Python), or :class:`ConfigError` in the one shape."""
        if value is None:
            if self.nullable:
                return None
            raise self.refuse(value)
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise self.refuse(value)
            return bool(value)
        if self.kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise self.refuse(value)
            value = int(value)
        elif self.kind is float:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise self.refuse(value)
            value = float(value)
            if math.isnan(value):
                raise self.refuse(value)
        elif not isinstance(value, str):
            raise self.refuse(value)
        if self.choices is not None and value not in self.choices:
            raise self.refuse(value)
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            raise self.refuse(value)
        if self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi):
            raise self.refuse(value)
        return value


__all__ = ["Param"]
