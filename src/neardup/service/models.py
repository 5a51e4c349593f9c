"""The service's bodies and answers as pydantic models, for its OpenAPI document (``/openapi.json``,
``/docs``). Requests are not parsed by these models (:func:`~neardup.service.validation.parse_documents`
bounds and reads them, and answers are serialised directly): they describe the wire format."""
from __future__ import annotations

from pydantic import BaseModel, Field

Id = str | int


class Document(BaseModel):
    """One document: ``id`` (a string or a signed 64-bit integer) and its text."""

    id: Id | None = Field(None, description="A string (any, '/' and '' included) or a signed 64-bit integer; "
                                            "required by the writes, optional for /v1/check.")
    text: str


class Documents(BaseModel):
    """A batch: at most ``--max-batch`` documents, no id twice."""

    documents: list[Document] = Field(min_length=1)


class BulkDocument(BaseModel):
    """One document of a bulk add (a line of NDJSON, or an element of the array)."""

    id: Id
    text: str


class Match(BaseModel):
    """An indexed document a document matches: ``similarity`` (MinHash, containment, verified
    SimHash) or ``distance`` in bits (classic SimHash)."""

    id: Id
    similarity: float | None = None
    distance: int | None = None


class Result(BaseModel):
    """The outcome for one document, in request order."""

    id: Id | None
    duplicate: bool
    added: bool
    matches: list[Match]


class Results(BaseModel):
    results: list[Result]


class Stored(BaseModel):
    """A document's stored signature: ``signature`` (MinHash; with ``size`` for containment),
    ``fingerprint`` (classic SimHash), or ``fingerprint`` and ``sketch`` (verified SimHash)."""

    id: Id
    signature: list[int] | None = None
    size: int | None = None
    fingerprint: int | None = None
    sketch: list[int] | None = None


class Deleted(BaseModel):
    id: Id
    deleted: bool


class Stats(BaseModel):
    """Documents, bytes on disk, segments and the index's parameters."""

    documents: int
    path: str
    store: str
    bytes: int | None
    segments: int | None = None
    generation: int | None = None
    parameters: dict


class Health(BaseModel):
    status: str


class BulkAdded(BaseModel):
    """A bulk add: documents added (replaced ones included) and the index's size after it."""

    added: int
    documents: int


class Compacted(BaseModel):
    """A compaction: segments and bytes on disk before and after, documents, seconds taken."""

    documents: int
    segments_before: int | None
    segments_after: int | None
    bytes_before: int | None
    bytes_after: int | None
    seconds: float


class BackedUp(BaseModel):
    """A backup: the new index folder, its documents, files hard-linked and copied, bytes, seconds."""

    path: str
    documents: int
    linked: int
    copied: int
    bytes: int
    seconds: float


class ErrorDetail(BaseModel):
    status: int
    message: str = Field(description="One line saying what is wrong (and where in the body).")


class Error(BaseModel):
    """Every refusal: nothing was changed."""

    error: ErrorDetail


#: what each refusal means, per status (the OpenAPI ``responses`` of the endpoints that may give it)
ERRORS = {
    400: "The body is not valid JSON or UTF-8, or nests deeper than 64; an id in the path or query is not UTF-8",
    401: "A write without the bearer token (with --token-file)",
    403: "Backups are off: the service was started without --backup-dir",
    404: "No document with that id",
    408: "The body did not arrive within --body-timeout",
    409: "An id is already indexed (nothing of the batch is added), a compaction is already running, or the "
         "backup's folder exists",
    413: "The body is over --max-body-bytes, or holds more than --max-batch documents",
    422: "The body is not a batch of documents (a field missing or of the wrong type, an id twice), or a query "
         "parameter is invalid",
    503: "Busy (--max-inflight-bytes; retry after Retry-After) or shutting down",
}
