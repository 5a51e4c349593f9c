"""The parameters of ``--method exact``, exact hashing of the normalised text (:class:`ExactParams`)."""
from __future__ import annotations

from .method import MethodParams, method_params


@method_params("exact")
class ExactParams(MethodParams):
    """``--method exact``: documents whose normalised texts are the same (the fields: the table's parameters of the
    method)."""


__all__ = ["ExactParams"]
