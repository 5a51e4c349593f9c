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
import asyncio
import collections
import contextlib
import hmac
import json
import threading
import time
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
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
    """One queued check-and-add request: its documents, and how to deliver the outcome."""
    __slots__ = ("ids", "texts", "deliver")

    def __init__(self, ids, texts, deliver):
        self.ids, self.texts, self.deliver = ids, texts, deliver


class IndexService:
    """The operations behind the endpoints. The index object belongs to one thread at a time (one
    lock); check-and-add must be atomic.

    Group commit: check-and-add requests go to a queue served by one writer thread. Each round takes
    every queued request (up to ``max_group`` documents), in arrival order, as one batch — one call
    of the signing kernels, one probe of the index, one log record, one fsync — and gives each
    request its own results. The outcome is the one of processing the requests one after another
    in that order (a document is checked against everything added before it, including by earlier
    requests of the round). Under load the rounds grow by themselves, so the fixed cost of a round
    (the fsync above all) is shared by more requests; while fewer requests are queued than the last
    round took, a round waits up to ``commit_delay`` seconds for the rest (PostgreSQL's
    ``commit_delay``): with 8 clients on 2 cores, 2 ms raised single-document requests from about
    550/s to 800–930/s and lowered p99 (benchmarks/INDEX.md)."""

    def __init__(self, index, max_group: int = 4096, commit_delay: float = 0.002):
        self.index = index
        self.lock = threading.Lock()
        self.simhash = index.kind == "simhash"
        self.field = "distance" if self.simhash else "similarity"
        self.max_group = max_group
        self.commit_delay = commit_delay
        self.last_round = 0
        self._queue: collections.deque[_Pending] = collections.deque()
        self._wake = threading.Condition()
        self._closed = False
        self._writer = threading.Thread(target=self._serve, name="neardup-writer", daemon=True)
        self._writer.start()

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

    # -- check-and-add: the queue and its writer thread ----------------------------------------
    def _submit(self, ids, texts, deliver) -> None:
        with self._wake:
            if self._closed:
                raise RequestError(503, "the service is shutting down")
            self._queue.append(_Pending(ids, texts, deliver))
            self._wake.notify()

    def check_and_add(self, ids, texts) -> list:
        """Blocking form (for threads): queue the request and wait for its round."""
        done = threading.Event()
        box: list = []

        def deliver(result, error):
            box.append((result, error))
            done.set()

        self._submit(ids, texts, deliver)
        done.wait()
        result, error = box[0]
        if error is not None:
            raise error
        return result

    async def check_and_add_async(self, ids, texts) -> list:
        """Awaitable form (for the event loop): no thread is held while the request waits."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def settle(result, error):
            if not fut.done():
                if error is not None:
                    fut.set_exception(error)
                else:
                    fut.set_result(result)

        self._submit(ids, texts, lambda r, e: loop.call_soon_threadsafe(settle, r, e))
        return await fut

    def _take(self) -> list[_Pending] | None:
        with self._wake:
            while not self._queue and not self._closed:
                self._wake.wait()
            if not self._queue:
                return None
            # group commit's delay: while fewer are queued than the last round took, more are
            # probably on their way (clients answered by that round): let them join, up to the delay
            deadline = time.monotonic() + self.commit_delay
            while len(self._queue) < self.last_round and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
            group, size = [], 0
            while self._queue and (not group or size + len(self._queue[0].ids) <= self.max_group):
                p = self._queue.popleft()
                group.append(p)
                size += len(p.ids)
            self.last_round = len(group)
            return group

    def _serve(self) -> None:
        while True:
            group = self._take()
            if group is None:
                return
            try:
                self._round(group)
            except BaseException as exc:   # every request of the round learns of it; nothing was added
                for p in group:
                    p.deliver(None, exc)

    def _round(self, group: list[_Pending]) -> None:
        ids = [k for p in group for k in p.ids]
        values, empty = self.index._sign([t for p in group for t in p.texts])
        with self.lock:
            res = self.index._check_and_add(ids, values, empty, self.index._default_accept())
        at = 0
        for p in group:
            out = res[at:at + len(p.ids)]
            at += len(p.ids)
            for r in out:
                r["matches"] = self._matches(r["matches"])
            p.deliver(out, None)

    def close(self) -> None:
        """Serve what is queued, then stop the writer thread."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        self._writer.join()

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
        if self.index.kind == "containment":       # (signature slots, distinct-shingle count)
            return {"id": key, "signature": np.asarray(sig)[:-1].tolist(), "size": int(sig[-1])}
        return {"id": key, "signature": np.asarray(sig).tolist()}

    def delete(self, raw: str) -> dict:
        with self.lock:
            key = self._key(raw)
            self.index.remove(key)
        return {"id": key, "deleted": True}

    def stats(self) -> dict:
        with self.lock:
            return self.index.stats()


def create_app(index, token: str | None = None, max_body: int = MAX_BODY, max_batch: int = MAX_BATCH,
               commit_delay: float = 0.002):
    """The ASGI application serving ``index`` (a :class:`~neardup.index.disk.DiskIndex` or
    :class:`~neardup.index.disk.SimHashDiskIndex` opened for writing); ``app.state.service`` is its
    :class:`IndexService` (close it before the index)."""
    svc = IndexService(index, commit_delay=commit_delay)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await run_in_threadpool(svc.close)       # answer what is queued before the index is closed

    app = FastAPI(lifespan=lifespan, title="neardup", version=_version(),
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

    def results(rows: list) -> Response:
        # serialised here (not by FastAPI's encoder, which walks every value in Python first)
        return Response(json.dumps({"results": rows}, separators=(",", ":")).encode(),
                        media_type="application/json")

    @app.post("/v1/check", openapi_extra=docs_body, summary="Matches of each document; nothing added")
    async def check(request: Request) -> Response:
        ids, texts = parse_documents(await body(request), False, max_batch)
        return results(await run_in_threadpool(svc.check, ids, texts))

    @app.post("/v1/add", openapi_extra=docs_body, summary="Add every document (409 if an id is taken)")
    async def add(request: Request) -> Response:
        authorise(request)
        ids, texts = parse_documents(await body(request), True, max_batch)
        return results(await run_in_threadpool(svc.add, ids, texts))

    @app.post("/v1/check-and-add", openapi_extra=docs_body,
              summary="Add each document that is not a near-duplicate (atomic)")
    async def check_and_add(request: Request) -> Response:
        authorise(request)
        ids, texts = parse_documents(await body(request), True, max_batch)
        return results(await svc.check_and_add_async(ids, texts))

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

    app.state.service = svc
    return app


def _version() -> str:
    from .._version import __version__  # noqa: PLC0415

    return __version__
