"""The parameters of ``--method sentences``, the longest-sentences signature (:class:`SentencesParams`)."""
from __future__ import annotations

from .method import MethodParams, method_params


@method_params("sentences")
class SentencesParams(MethodParams):
    """``--method sentences``: documents whose ``sentences`` longest sentences are the same (the fields: the table's
    parameters of the method; every one has its default in the table)."""


__all__ = ["SentencesParams"]
