"""The index as an HTTP service: :func:`create_app` (FastAPI), started by ``neardup serve``."""
from .app import MAX_BATCH, MAX_BODY, IndexService, create_app, parse_documents

__all__ = ["MAX_BATCH", "MAX_BODY", "IndexService", "create_app", "parse_documents"]
