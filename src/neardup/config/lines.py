"""The parameters of ``--method lines``, repeated lines and paragraphs (:class:`LinesParams`)."""
from __future__ import annotations

from .method import MethodParams, method_params


@method_params("lines")
class LinesParams(MethodParams):
    """``--method lines``: a line or paragraph repeated in ``min_docs`` documents or more is removed after its first
    occurrence (the fields: the table's parameters of the method)."""


__all__ = ["LinesParams"]
