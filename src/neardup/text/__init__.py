"""Text → normalised UTF-8 batches and tokens.

The names below load on first use (PEP 562): :mod:`.unicode`'s tables and :mod:`.nfkc` are read by
the ahead-of-time signer (:mod:`neardup.engines.aot_sign`) without the kernels that
:mod:`.normalize` and :mod:`.tokenize` import. ``neardup.text.tokenize`` is the module (its function
is ``neardup.text.tokenize.tokenize``): a lazily loaded name cannot share a submodule's name."""

_WHERE = {"Normalizer": ".normalize", "encode_batch": ".normalize", "TOKENIZERS": ".tokenize"}

__all__ = ["Normalizer", "encode_batch", "TOKENIZERS"]


def __getattr__(name: str):
    import importlib  # noqa: PLC0415

    where = _WHERE.get(name)
    if where is None:                 # a submodule, as when the package imported them all
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
