"""Text → normalised UTF-8 batches and tokens.

The names below load on first use (PEP 562), so that a light module of this package
(:mod:`.unicode`'s tables, :mod:`.nfkc`, :mod:`.dictionaries`) is imported without the kernels that
:mod:`.normalize` and :mod:`.tokenize` import. ``neardup.text.tokenize`` is the module (its function
is ``neardup.text.tokenize.tokenize``): a lazily loaded name cannot share a submodule's name."""

from .._lazy import lazy_names

_WHERE = {"Normalizer": ".normalize", "encode_batch": ".normalize", "TOKENIZERS": ".tokenize"}

__all__ = ["Normalizer", "encode_batch", "TOKENIZERS"]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
