"""Names of a package loaded on first use (PEP 562), so that importing the package costs nothing
until a name is used: ``import neardup`` takes 1–2 ms instead of 375 (numba), and a light module
of a package imports without the kernels."""
from __future__ import annotations

import importlib


def lazy_names(package: str, where: dict, public: list):
    """``(__getattr__, __dir__)`` for ``package``: a name of ``where`` (name → relative module) is
    taken from its module and kept; any other name is the submodule of that name (as when the
    package imported them all), else AttributeError. A lazily loaded name cannot share a
    submodule's name: importing the submodule would replace it."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            try:
                return importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
