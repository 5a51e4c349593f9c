"""Every error neardup raises about a user's parameters, inputs or index derives from
:class:`neardup.errors.NeardupError` (the command line prints those as one line; anything else is a
bug and keeps its traceback). A scan of the source keeps it so: no ``raise ValueError`` and no bare
``raise Exception``; every exception class neardup defines that is a ValueError, OSError or
sqlite3 error is also a NeardupError."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import neardup
from neardup.errors import ConfigError, InputFormatError, NeardupError

SRC = Path(neardup.__file__).parent
FORBIDDEN = {"ValueError", "Exception", "BaseException"}


def _raised_names(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name):
                yield exc.id, node.lineno


def test_no_bare_value_errors_in_the_library():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(SRC)}:{line}: raise {name}" for name, line in _raised_names(tree)
                  if name in FORBIDDEN]
    assert not found, "raise a class of neardup.errors instead:\n" + "\n".join(found)


def test_the_scan_sees_a_bare_value_error():
    tree = ast.parse("def f(x):\n    if x:\n        raise ValueError('no')\n    raise ConfigError('ok')\n")
    assert sorted(n for n, _ in _raised_names(tree)) == ["ConfigError", "ValueError"]


def _modules():
    skip = ("neardup.engines.spark", "neardup.service", "neardup.cli.spark_submit")      # (optional extras)
    for info in pkgutil.walk_packages(neardup.__path__, "neardup."):
        if not info.name.startswith(skip) and not info.name.endswith("__main__"):
            yield info.name


def test_every_error_class_of_the_library_is_in_the_hierarchy():
    import sqlite3

    wrong = []
    for name in _modules():
        mod = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ != name or not issubclass(cls, BaseException):
                continue
            if issubclass(cls, (ValueError, OSError, sqlite3.Error)) and not issubclass(cls, NeardupError):
                wrong.append(f"{name}.{cls_name}")
    assert not wrong


@pytest.mark.parametrize("call,kind", [
    (lambda: neardup.MinHasher(num_perm=0), ConfigError),
    (lambda: neardup.MinHash.from_bytes(b"not a sketch"), InputFormatError),
    (lambda: neardup.DedupConfig(method="lines", min_length=30).resolved(), ConfigError),
])
def test_user_errors_are_neardup_errors_and_still_value_errors(call, kind):
    """The classes keep ValueError as a base, so code written against the builtin still catches them."""
    with pytest.raises(kind) as exc:
        call()
    assert isinstance(exc.value, NeardupError) and isinstance(exc.value, ValueError)
