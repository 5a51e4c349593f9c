"""The index as an HTTP service: :func:`create_app` (FastAPI), started by ``neardup serve``
(uvicorn with :func:`http_protocol`'s timeouts)."""
from .app import (
    MAX_BATCH,
    MAX_BODY,
    MAX_DEPTH,
    IndexService,
    create_app,
    http_protocol,
    json_shape,
    parse_documents,
)

__all__ = ["MAX_BATCH", "MAX_BODY", "MAX_DEPTH", "IndexService", "create_app", "http_protocol", "json_shape",
           "parse_documents"]
