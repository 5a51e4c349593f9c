"""``neardup serve --index IDX``: the index as an HTTP JSON service (FastAPI on uvicorn).

Endpoints (``{"documents": [{"id": …, "text": …}, …]}`` in, ``{"results": [...]}`` out, in request
order; each result ``{"id", "duplicate", "added", "matches": [{"id", "similarity" | "distance"}]}``):

* ``POST /v1/check`` — matches, best first; nothing is added (``id`` optional);
* ``POST /v1/add`` — adds every document (409 and nothing added if an id is taken);
* ``POST /v1/check-and-add`` — the crawler's question, atomic: a document is a duplicate when it
  matches an indexed one or an earlier one of the batch that was added, and every other one is added.
  Requests are serialised, so two near-identical documents sent at once are never both added;
* ``GET`` / ``DELETE /v1/docs/{id}``; ``GET /v1/stats``; ``GET /healthz``; the OpenAPI page at ``/docs``.

A success response to a write means it is on disk: each write is one log record, fsynced before
the answer (``synchronous="FULL"``). With ``--token-file``, writes need ``Authorization: Bearer
TOKEN``. Bad requests — malformed JSON, invalid UTF-8, a body over ``--max-body-bytes``, missing or
wrongly typed fields, an empty batch, more than ``--max-batch`` documents — get a 4xx answer
``{"error": {"status", "message"}}`` and change nothing.
"""
import hmac
import json
import threading
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import NeardupError
from ..index.store import DuplicateKeyError

MAX_BODY = 16 << 20
MAX_BATCH = 10000


class RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _schema() -> dict:
    doc = {"type": "object", "required": ["text"],
           "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "text": {"type": "string"}}}
    return {"type": "object", "required": ["documents"],
            "properties": {"documents": {"type": "array", "minItems": 1, "items": doc}}}


def parse_documents(body: bytes, need_id: bool, max_batch: int) -> tuple:
    """(ids, texts) of a request body, or :class:`RequestError` naming what is wrong (and where)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict) or "documents" not in obj:
        raise RequestError(422, 'the body must be an object {"documents": [{"id": …, "text": …}, …]}')
    docs = obj["documents"]
    if not isinstance(docs, list):
        raise RequestError(422, "documents must be a list")
    if not docs:
        raise RequestError(422, "documents is empty: send at least one document")
    if len(docs) > max_batch:
        raise RequestError(413, f"{len(docs)} documents in one request; at most {max_batch}")
    ids, texts = [], []
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            raise RequestError(422, f"documents[{i}] must be an object with id and text")
        t = d.get("text")
        if not isinstance(t, str):
            raise RequestError(422, f"documents[{i}].text must be a string"
                               + ("" if "text" in d else " (missing)"))
        k = d.get("id")
        if k is None and need_id:
            raise RequestError(422, f"documents[{i}].id is missing")
        if k is not None and (isinstance(k, bool) or not isinstance(k, (str, int))
                              or isinstance(k, int) and not -2**63 <= k < 2**63):
            raise RequestError(422, f"documents[{i}].id must be a string or a 64-bit integer; got {k!r}")
        ids.append(k)
        texts.append(t)
    if need_id and len(set(map(repr, ids))) != len(ids):
        raise RequestError(422, "an id appears twice in documents")
    return ids, texts


class _Pending:
    __slots__ = ("ids", "values", "empty", "done", "result", "error")

    def __init__(self, ids, values, empty):
        self.ids, self.values, self.empty = ids, values, empty
        self.done = threading.Event()
        self.result = self.error = None


class IndexService:
    """The operations behind the endpoints, serialised by one lock (the index object belongs to one
    thread at a time; check-and-add must be atomic).

    Group commit: check-and-add requests that arrive while one is being processed wait in a queue;
    the next round takes all of them, in arrival order, as one batch — one probe of the index, one
    log record, one fsync — and gives each request its own results. The outcome is the one of
    processing the requests one after another in that order (a document is checked against
    everything added before it, including by earlier requests of the round)."""

    def __init__(self, index, max_group: int = 4096):
        self.index = index
        self.lock = threading.Lock()
        self.simhash = index.kind == "simhash"
        self.field = "distance" if self.simhash else "similarity"
        self.max_group = max_group
        self._queue: list[_Pending] = []
        self._qlock = threading.Lock()

    def _matches(self, ms) -> list:
        return [{"id": k, self.field: (int(s) if self.simhash else float(s))} for k, s in ms]

    def check(self, ids, texts) -> list:
        values, empty = self.index._sign(texts)          # signing needs no lock
        with self.lock:
            found = self.index._query(values, empty, self.index._default_accept())
        return [{"id": k, "duplicate": bool(m), "added": False, "matches": self._matches(m)}
                for k, m in zip(ids, found)]

    def add(self, ids, texts) -> list:
        values, empty = self.index._sign(texts)
        with self.lock:
            try:
                self.index._put(ids, values, empty, replace=False, bulk=False)
            except DuplicateKeyError as exc:
                raise RequestError(409, str(exc)) from None
        return [{"id": k, "duplicate": False, "added": True, "matches": []} for k in ids]

    def check_and_add(self, ids, texts) -> list:
        values, empty = self.index._sign(texts)
        me = _Pending(ids, values, empty)
        with self._qlock:
            self._queue.append(me)
        while not me.done.is_set():
            with self.lock:                 # whoever holds the lock serves every queued request
                if me.done.is_set():
                    break
                self._serve_queue()
        if me.error is not None:
            raise me.error
        for r in me.result:
            r["matches"] = self._matches(r["matches"])
        return me.result

    def _serve_queue(self) -> None:
        with self._qlock:
            group, size = [], 0
            while self._queue and (not group or size + len(self._queue[0].ids) <= self.max_group):
                p = self._queue.pop(0)
                group.append(p)
                size += len(p.ids)
        if not group:
            return
        try:
            # one batch in arrival order: the same outcome as the requests one after another (an id
            # sent by two requests is added at most once, by the first that adds it)
            ids = [k for p in group for k in p.ids]
            values = np.concatenate([p.values for p in group])
            empty = np.concatenate([p.empty for p in group])
            res = self.index._check_and_add(ids, values, empty, self.index._default_accept())
            results, at = [], 0
            for p in group:
                results.append(res[at:at + len(p.ids)])
                at += len(p.ids)
            for p, r in zip(group, results):
                p.result = r
        except BaseException as exc:   # every request of the group learns of it; nothing was added
            for p in group:
                p.error = exc
        for p in group:
            p.done.set()

    def _key(self, raw: str):
        """A path id: the string, or (when only that exists) the integer it spells."""
        if raw in self.index:
            return raw
        if raw.lstrip("-").isdigit() and -2**63 <= int(raw) < 2**63 and int(raw) in self.index:
            return int(raw)
        raise RequestError(404, f"no document with id {raw!r}")

    def get(self, raw: str) -> dict:
        with self.lock:
            key = self._key(raw)
            sig = self.index.get(key)
        if self.simhash:
            return {"id": key, "fingerprint": int(np.asarray(sig).reshape(-1)[0])}
        return {"id": key, "signature": np.asarray(sig).tolist()}

    def delete(self, raw: str) -> dict:
        with self.lock:
            key = self._key(raw)
            self.index.remove(key)
        return {"id": key, "deleted": True}

    def stats(self) -> dict:
        with self.lock:
            return self.index.stats()


def create_app(index, token: str | None = None, max_body: int = MAX_BODY, max_batch: int = MAX_BATCH):
    """The ASGI application serving ``index`` (a :class:`~neardup.index.disk.DiskIndex` or
    :class:`~neardup.index.disk.SimHashDiskIndex` opened for writing)."""
    svc = IndexService(index)
    app = FastAPI(title="neardup", version=_version(),
                  description="Have I seen this document, or something nearly like it? "
                              f"A {svc.index.kind} index of near-duplicates.")

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)

    @app.exception_handler(RequestError)
    async def _request_error(request, exc: RequestError):
        return error(exc.status, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, exc):
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation(request, exc):
        return error(422, "; ".join(str(e.get("msg")) for e in exc.errors()) or "invalid request")

    @app.exception_handler(NeardupError)
    async def _neardup_error(request, exc):
        return error(500, f"{type(exc).__name__}: {exc}")

    def authorise(request: Request) -> None:
        if token is None:
            return
        got = request.headers.get("authorization", "")
        if not (got.startswith("Bearer ") and hmac.compare_digest(got[7:].strip().encode(), token.encode())):
            raise RequestError(401, "this endpoint changes the index: send Authorization: Bearer TOKEN")

    async def body(request: Request) -> bytes:
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > max_body:
            raise RequestError(413, f"the body has {int(size)} bytes; at most {max_body}")
        chunks, total = [], 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > max_body:
                raise RequestError(413, f"the body exceeds {max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    docs_body = {"requestBody": {"required": True, "content": {"application/json": {"schema": _schema()}}}}

    @app.post("/v1/check", openapi_extra=docs_body, summary="Matches of each document; nothing added")
    async def check(request: Request) -> dict[str, Any]:
        ids, texts = parse_documents(await body(request), False, max_batch)
        return {"results": await run_in_threadpool(svc.check, ids, texts)}

    @app.post("/v1/add", openapi_extra=docs_body, summary="Add every document (409 if an id is taken)")
    async def add(request: Request) -> dict[str, Any]:
        authorise(request)
        ids, texts = parse_documents(await body(request), True, max_batch)
        return {"results": await run_in_threadpool(svc.add, ids, texts)}

    @app.post("/v1/check-and-add", openapi_extra=docs_body,
              summary="Add each document that is not a near-duplicate (atomic)")
    async def check_and_add(request: Request) -> dict[str, Any]:
        authorise(request)
        ids, texts = parse_documents(await body(request), True, max_batch)
        return {"results": await run_in_threadpool(svc.check_and_add, ids, texts)}

    @app.get("/v1/docs/{doc_id}", summary="A document's stored signature")
    async def get_doc(doc_id: str) -> dict[str, Any]:
        return await run_in_threadpool(svc.get, doc_id)

    @app.delete("/v1/docs/{doc_id}", summary="Remove a document")
    async def delete_doc(doc_id: str, request: Request) -> dict[str, Any]:
        authorise(request)
        return await run_in_threadpool(svc.delete, doc_id)

    @app.get("/v1/stats", summary="Documents, bytes on disk and the index's parameters")
    async def stats() -> dict[str, Any]:
        return await run_in_threadpool(svc.stats)

    @app.get("/healthz", summary="The service is up")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _version() -> str:
    from .._version import __version__  # noqa: PLC0415

    return __version__
