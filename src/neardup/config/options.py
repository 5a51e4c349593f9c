"""The command line's options, built from the parameter table (:func:`click_options`), so that every
command offers a parameter under one name, with one type, bound, default and help."""
from __future__ import annotations

from .param import Param
from .table import BY_NAME, NOT_BANDED, PARAMS


def click_options(names=None, exclude=(), all_schemes: bool = False, defaults: dict | None = None,
                  choices: dict | None = None, helps: dict | None = None, required=(), lows: dict | None = None):
    """A decorator adding the command-line options of :data:`PARAMS` (``names``: those, in the
    table's order; else all with a flag), each with its name, type, bounds, default and help from the
    table. ``--scheme`` offers the schemes that band (a scheme of :data:`NOT_BANDED` is one line
    naming it), or every scheme with ``all_schemes`` (``neardup sign``, which bands nothing). A
    command whose use of a parameter is narrower says so here, by name: ``defaults`` (name → its
    default there), ``choices`` (name → the subset it offers), ``helps`` (name → its help there),
    ``required`` (names it cannot do without). One whose use is wider says so too: ``lows`` (name →
    a lower bound below the table's, e.g. ``compare``'s ``--num-perm 1``, which estimates only)."""
    defaults, choices, helps, lows = defaults or {}, choices or {}, helps or {}, lows or {}
    for name, low in lows.items():
        p = BY_NAME.get(name)
        if p is None or p.kind not in (int, float) or p.lo is None or low > p.lo:
            raise RuntimeError(f"click_options: lows may only widen a numeric parameter's lower bound; got "
                               f"{name}={low!r}")
    for name in (*defaults, *choices, *helps, *required):
        if name not in BY_NAME:
            raise KeyError(f"click_options: {name!r} is not a parameter of the table")
    for name, sub in choices.items():
        if not set(sub) <= set(BY_NAME[name].choices or ()):
            raise RuntimeError(f"click_options: {name!r} offers {sorted(BY_NAME[name].choices or ())}, not {sub}")
    import click  # noqa: PLC0415  (the command line's dependency, not the library's)

    chosen = [p for p in PARAMS if p.option and p.name not in exclude and (names is None or p.name in names)]

    class Schemes(click.Choice):
        """The table's schemes, those of :data:`NOT_BANDED` refused (and left out of the help)."""

        def banded(self) -> list[str]:
            return [c for c in self.choices if c not in NOT_BANDED]

        def get_metavar(self, *args, **kwargs) -> str:
            return f"[{'|'.join(self.banded())}]"

        def convert(self, value, param, ctx):
            if value in NOT_BANDED:
                raise BY_NAME["scheme"].refuse(value, f"one of {', '.join(self.banded())} to find duplicates "
                                                      f"({NOT_BANDED[value]})")
            return super().convert(value, param, ctx)

    def click_type(p: Param):
        if p.name == "scheme" and not all_schemes:
            return Schemes([str(c) for c in choices.get(p.name, p.choices)])
        if p.choices is not None:
            return click.Choice([str(c) for c in choices.get(p.name, p.choices)])
        lo, lo_open = (lows[p.name], False) if p.name in lows else (p.lo, p.lo_open)
        if p.kind is int:
            return click.IntRange(lo, p.hi, min_open=lo_open, max_open=p.hi_open)
        if p.kind is float:
            return click.FloatRange(lo, p.hi, min_open=lo_open, max_open=p.hi_open)
        return str

    def decorate(fn):
        for p in reversed(chosen):
            decls = p.option.split(" ")
            default, text = defaults.get(p.name, p.default), helps.get(p.name, p.help)
            if p.kind is bool and "/" in p.option:       # --html/--no-html: a switch
                fn = click.option(*decls, p.name, default=default, show_default=True, help=text)(fn)
            elif p.kind is bool:                         # -q --quiet: a flag
                fn = click.option(*decls, p.name, is_flag=True, default=default, help=text)(fn)
            elif p.name in required:
                fn = click.option(*decls, p.name, type=click_type(p), required=True, help=text)(fn)
            else:
                fn = click.option(*decls, p.name, type=click_type(p), default=default,
                                  show_default=default is not None, help=text)(fn)
        return fn
    return decorate


__all__ = ["click_options"]
