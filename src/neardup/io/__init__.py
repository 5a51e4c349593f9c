"""Reading documents: files, stdin, JSONL (plain or gzip) — streamed in batches."""
from .readers import Document, InputError, iter_documents

__all__ = ["Document", "InputError", "iter_documents"]
