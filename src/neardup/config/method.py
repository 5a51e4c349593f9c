"""Per-method parameter classes (text-dedup's config per algorithm): each method's parameters as a
frozen dataclass whose fields are the ``algorithm`` parameters of :data:`~.table.PARAMS` that change
that method's result (for a whole-document method, also the options of a span step it can carry,
``--spans``) — so a parameter another method uses cannot be given to it — checked by the
table's constraints when constructed. A class also holds its method's defaults (for parameters whose
table default is None) and the rules that tie its parameters together (:meth:`MethodParams.resolve`).
The fields are generated from the table, never written twice; ``tests/test_params.py`` checks that
every algorithm parameter belongs to some class."""
from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

from ..text.dictionaries import file_keys, idf_tokenizer_mismatch
from .table import BY_NAME, PARAMS, SPAN_OPTIONS

#: method name → its parameter class (filled by :func:`method_params`)
CLASSES: dict[str, type[MethodParams]] = {}


class MethodParams:
    """Base of the per-method parameter classes (module docstring). ``method``: the method's name;
    ``defaults``: what a user gets without flags."""

    method: ClassVar[str]
    defaults: ClassVar[dict] = {}

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):      # the table's checks (ConfigError naming the parameter)
            object.__setattr__(self, f.name, BY_NAME[f.name].check(getattr(self, f.name)))

    @classmethod
    def resolve(cls, c) -> None:
        """Fill the method's defaults into the draft configuration ``c`` (its parameters checked one
        by one already) and refuse what its parameters together do not allow; subclasses add their
        rules."""
        cls.fill_defaults(c)

    @classmethod
    def fill_defaults(cls, c) -> None:
        for name, value in cls.defaults.items():
            if getattr(c, name) is None:
                setattr(c, name, value)

    @classmethod
    def index_refusal(cls, c) -> str | None:
        """Why ``--index`` cannot be used with these parameters (None: it can)."""
        return None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


def _belongs(p, name: str) -> bool:
    """Whether parameter ``p`` is a field of method ``name``'s class: an algorithm parameter of the
    method, or — for a whole-document method, which can carry a span step (``--spans``) — one of the
    span methods' options."""
    if p.group != "algorithm" or p.methods is None:
        return False
    return name in p.methods or (name in BY_NAME["spans"].methods and p.name in SPAN_OPTIONS)


def method_params(name: str):
    """Class decorator: the frozen dataclass of method ``name``'s parameters, its fields the table's
    parameters that belong to it (:func:`_belongs`), in the table's order, with its defaults."""
    def make(cls):
        fields = [(p.name, p.kind | None if p.nullable else p.kind, dataclasses.field(default=p.default))
                  for p in PARAMS if _belongs(p, name)]
        made = dataclasses.make_dataclass(cls.__name__, fields, bases=(cls,), frozen=True,
                                          namespace={"method": name, "__doc__": cls.__doc__})
        made.__module__, made.__qualname__ = cls.__module__, cls.__qualname__    # (pickled by name)
        CLASSES[name] = made
        return made
    return make


def params_class(method: str) -> type[MethodParams]:
    """The parameter class of the method named ``method``."""
    return CLASSES[method]


def word_files(c) -> None:
    """The user's word files (``--idf``, ``--user-dict``, ``--stop-words``) read now, so that a bad
    line stops the run before any input is read, and their paths made absolute (an index or a Spark
    task reads them from elsewhere). MinHash's and SimHash's rule."""
    file_keys(c.idf, c.user_dict, c.stop_words)
    why = idf_tokenizer_mismatch(c.idf, c.compat if c.compat in ("yanyiwu", "jieba-analyse") else c.tokenizer)
    if why:
        raise BY_NAME["idf"].refuse(c.idf, why)
    for name in ("idf", "user_dict", "stop_words"):
        value = getattr(c, name)
        if value is not None and value != "jieba":
            setattr(c, name, os.path.abspath(value))


__all__ = ["CLASSES", "MethodParams", "method_params", "params_class", "word_files"]
