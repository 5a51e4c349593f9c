"""The parameters of ``--method substrings``, exact repeated substrings (:class:`SubstringsParams`)."""
from __future__ import annotations

from .method import MethodParams, method_params


@method_params("substrings")
class SubstringsParams(MethodParams):
    """``--method substrings``: exact repeated spans of ``min_length`` bytes or more, found by a suffix array, removed
    after their first occurrence (the fields: the table's parameters of the method)."""


__all__ = ["SubstringsParams"]
