"""``neardup serve --index IDX``: the index as an HTTP JSON service (FastAPI on uvicorn).

Endpoints (``{"documents": [{"id": …, "text": …}, …]}`` in, ``{"results": [...]}`` out, in request
order; each result ``{"id", "duplicate", "added", "matches": [{"id", "similarity" | "distance"}]}``):

* ``POST /v1/check`` — matches, best first; nothing is added (``id`` optional);
* ``POST /v1/add`` — adds every document (409 and nothing added if an id is taken);
* ``POST /v1/check-and-add`` — the crawler's question, atomic: a document is a duplicate when it
  matches an indexed one or an earlier one of the batch that was added, and every other one is added.
  Requests are serialised, so two near-identical documents sent at once are never both added;
* ``GET`` / ``DELETE /v1/docs/{id}``; ``GET /v1/stats``; ``GET /healthz``;
* ``POST /v1/admin/add`` — a bulk add (NDJSON or a JSON array; ``?replace=true``), as ``neardup index
  add`` would, and ``POST /v1/admin/compact`` — ``neardup index compact``: both in this process's
  writer, so an index can be grown and compacted while it serves (the CLI's own would wait for the
  writer's lock);
* ``POST /v1/admin/backup`` (with ``--backup-dir``) — a consistent copy of the index, hard-linked
  where it can be, as a new folder there;
* ``GET /metrics`` (Prometheus); the OpenAPI document at ``/openapi.json``, its pages at ``/docs``
  (Swagger UI) and ``/redoc``, with their scripts served from the installed package (fastapi-offline),
  so they work offline.

Every request is one access-log line once answered (:mod:`neardup.service.observe`).

A success response to a write means it is on disk: each write is one log record, fsynced before
the answer (``synchronous="FULL"``). With ``--token-file``, writes need ``Authorization: Bearer
TOKEN``. Bad requests — malformed JSON, invalid UTF-8, a body over ``--max-body-bytes``, missing or
wrongly typed fields, an empty batch, more than ``--max-batch`` documents — get a 4xx answer
``{"error": {"status", "message"}}`` and change nothing.

Ids: any id that ``POST /v1/add`` takes (:func:`~neardup.index.store.check_key`: a string — ``/``
and the empty string included — or a 64-bit integer) can be fetched and deleted, by its
percent-encoded text in the path (``/v1/docs/a%2Fb`` or ``/v1/docs/a/b``; ``/v1/docs/`` is the empty
id) or in the query (``/v1/docs?id=a%2Fb``, ``/v1/docs?id=``). A text that spells an integer means
the integer id only when no string id of that text exists
(:func:`~neardup.index.store.key_candidates`).

Hostile clients. Every bound below answers ``{"error": …}`` (or closes the connection, when the client
is too slow to be answered) and logs at most one line, never a traceback:

* nesting: a body whose arrays/objects nest deeper than :data:`MAX_DEPTH` (64; a request needs 3)
  is refused (400) before it is parsed, by a vectorised scan of its brackets outside strings
  (:func:`json_shape`: 4–6 ms for 16 MB of real documents, against 35–70 ms to decode and parse
  them; 70–120 ms at worst, for 16 MB made only of structure or escaped quotes);
* memory per request: the same scan bounds the JSON values (keys included) at
  :data:`VALUES_PER_DOCUMENT` (32) × (``--max-batch`` + 1) (413 beyond; a document ``{"id",
  "text"}`` is 5). Parsing a body then takes at most about 10 × its size (its text decoded, then
  its strings: up to 4 bytes a character once one needs it) plus ~70 bytes a value (~25 MB at the
  default 10000 documents) — not the ~20 × of ``{"documents": [{}, {}, …]}`` — and keeps at most
  5 × its size (the body and its texts) until the request is answered. Bodies are parsed on the
  event loop, one at a time;
* memory of all requests: at most ``--max-inflight-bytes`` (default 4 × ``--max-body-bytes``, at
  least that) of request bodies are held at once, reserved by their Content-Length (or
  ``--max-body-bytes`` when chunked) from before they are read until the request is answered.
  Up to :data:`MAX_WAITING` (64) more requests wait for room, in arrival order (uvicorn reads at
  most 64 KiB of each meanwhile), and get 503 with ``Retry-After`` when their body timeout ends
  first, as does any request beyond those. So the requests hold at most about 5 ×
  ``--max-inflight-bytes`` + 10 × ``--max-body-bytes`` + 25 MB (~520 MB at the defaults), the
  index's own work (signing, answers) aside;
* time: a request's headers must arrive within ``--header-timeout`` of its first byte (of the
  connection, for its first request; 408, closed), its body within ``--body-timeout`` of its headers
  (408 and closed; a body left unread, e.g. after a 401, is cut off one second later);
* a client that goes away mid-request or mid-answer is one log line ("client … disconnected
  during POST /v1/check"); the answer is dropped, and a write already queued still happens.
"""
import asyncio
import contextlib
import hmac
import json
import re
import time
import urllib.parse
from pathlib import Path

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import PlainTextResponse, Response
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic.json_schema import models_json_schema
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .._version import __version__
from ..errors import NeardupError
from .limits import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    MAX_BATCH,
    MAX_BODY,
    MAX_DEPTH,
    MAX_WAITING,
    UNREAD_GRACE,
    VALUES_PER_DOCUMENT,
    RequestError,
    _BodyBudget,
    log,
)
from .models import (
    ERRORS,
    BackedUp,
    BulkAdded,
    BulkDocument,
    Compacted,
    Deleted,
    Documents,
    Error,
    Health,
    Results,
    Stats,
    Stored,
)
from .observe import Metrics, observed
from .operations import IndexService
from .protocol import _shown_path, http_protocol
from .validation import _decode_id, json_shape, parse_bulk, parse_documents

__all__ = ["BODY_TIMEOUT", "HEADER_TIMEOUT", "MAX_BATCH", "MAX_BODY", "MAX_DEPTH", "MAX_WAITING", "UNREAD_GRACE",
           "VALUES_PER_DOCUMENT", "IndexService", "RequestError", "create_app", "http_protocol", "json_shape",
           "parse_documents"]


_BACKUP_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")     # a folder name, never a path


def _json(obj, status: int = 200, headers: dict | None = None) -> Response:
    """``obj`` as JSON, ASCII-only (an id may hold a lone surrogate, which UTF-8 cannot carry)."""
    return Response(json.dumps(obj, separators=(",", ":")).encode(), status_code=status,
                    media_type="application/json", headers=headers)


def _client(request: Request) -> str:
    """``host:port`` of the client, for a log line."""
    return f"{request.client[0]}:{request.client[1]}" if request.client else "(unknown)"


def _refusals(*statuses: int) -> dict:
    """The OpenAPI ``responses`` of an endpoint's refusals: each status with :class:`Error` and its meaning."""
    return {s: {"model": Error, "description": ERRORS[s]} for s in statuses}


def _body(name: str, ndjson: bool = False) -> dict:
    """``openapi_extra`` naming a request body's schema (the endpoint reads the body itself)."""
    ref = {"$ref": f"#/components/schemas/{name}"}
    content = {"application/json": {"schema": ref}}
    if ndjson:
        content = {"application/json": {"schema": {"anyOf": [
                       {"type": "array", "items": {"$ref": "#/components/schemas/BulkDocument"}, "minItems": 1},
                       {"$ref": "#/components/schemas/Documents"}]}},
                   "application/x-ndjson": {"schema": {"$ref": "#/components/schemas/BulkDocument"}}}
        return {"requestBody": {"required": True, "content": content, "description":
                                "JSON: an array of BulkDocument (or Documents); NDJSON (Content-Type: "
                                "application/x-ndjson): one BulkDocument a line"}}
    return {"requestBody": {"required": True, "content": content}}


def create_app(index, token: str | None = None, max_body: int = MAX_BODY, max_batch: int = MAX_BATCH,
               commit_delay: float = 0.002, max_inflight: int | None = None,
               body_timeout: float = BODY_TIMEOUT, log_format: str = "text", backup_dir=None):
    """The ASGI application serving ``index`` (a :class:`~neardup.index.disk.DiskIndex` or
    :class:`~neardup.index.disk.SimHashDiskIndex` opened for writing); ``app.state.service`` is its
    :class:`IndexService` (close it before the index), ``app.state.metrics`` its
    :class:`~neardup.service.observe.Metrics`. ``max_inflight`` (default 4 × ``max_body``): bytes of
    request bodies held at once; ``body_timeout``: seconds for a body to arrive once its request has
    started (waiting for room included); ``log_format``: the access log's, ``text`` or ``json``;
    ``backup_dir``: where ``POST /v1/admin/backup`` makes its copies (None: backups are off). The
    module docstring states every bound."""
    svc = IndexService(index, commit_delay=commit_delay)
    budget = _BodyBudget(max(max_body, 4 * max_body if max_inflight is None else max_inflight))
    metrics = Metrics(svc.size, svc.index.kind)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await run_in_threadpool(svc.close)       # answer what is queued before the index is closed

    app = FastAPIOffline(lifespan=lifespan, title="neardup", version=__version__,
                         static_url="/docs-static", swagger_ui_parameters={"validatorUrl": None},
                         description="Have I seen this document, or something nearly like it? "
                                     f"A {svc.index.kind} index of near-duplicates."
                                     + (" Writes need `Authorization: Bearer TOKEN`." if token else ""))
    app.add_middleware(observed, metrics=metrics, log_format=log_format)
    guarded = {"security": [{"bearer": []}]} if token is not None else {}

    def openapi() -> dict:
        """FastAPI's document, with the request bodies' schemas and the bearer scheme added."""
        if app.openapi_schema is None:
            spec = get_openapi(title=app.title, version=app.version, description=app.description,
                               routes=app.routes)
            _, defs = models_json_schema([(Documents, "validation"), (BulkDocument, "validation")],
                                         ref_template="#/components/schemas/{model}")
            components = spec.setdefault("components", {})
            components.setdefault("schemas", {}).update(defs["$defs"])
            components["securitySchemes"] = {"bearer": {
                "type": "http", "scheme": "bearer",
                "description": "The token of `neardup serve --token-file`: every write needs it when one is set"}}
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi

    def error(status: int, message: str, headers: dict | None = None) -> Response:
        return _json({"error": {"status": status, "message": message}}, status, headers)

    @app.exception_handler(RequestError)
    async def _request_error(request, exc: RequestError):
        return error(exc.status, exc.message, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, exc):
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation(request, exc):
        return error(422, "; ".join(".".join(map(str, e.get("loc", ()))) + f": {e.get('msg')}"
                                    for e in exc.errors()) or "invalid request")

    @app.exception_handler(NeardupError)
    async def _neardup_error(request, exc):
        return error(500, f"{type(exc).__name__}: {exc}")

    @app.exception_handler(ClientDisconnect)
    async def _gone(request, exc):
        # the client left while its body was read: the server's protocol logged it (one line);
        # nobody reads this answer
        return Response(status_code=400)

    def authorise(request: Request) -> None:
        if token is None:
            return
        got = request.headers.get("authorization", "")
        if not (got.startswith("Bearer ") and hmac.compare_digest(got[7:].strip().encode(), token.encode())):
            raise RequestError(401, "this endpoint changes the index: send Authorization: Bearer TOKEN")

    @contextlib.asynccontextmanager
    async def received(request: Request):
        """The request's body, held within the budget until the request is answered: 413 over
        ``max_body``, 503 when no room is found in time, 408 when the body comes too slowly."""
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > max_body:
            raise RequestError(413, f"the body has {int(size)} bytes; at most {max_body}")
        need = int(size) if size is not None and size.isdigit() else max_body
        loop = asyncio.get_running_loop()
        deadline = loop.time() + body_timeout
        await budget.acquire(need, body_timeout)
        try:
            buf = bytearray()

            async def read() -> None:
                async for chunk in request.stream():
                    if len(buf) + len(chunk) > max_body:
                        raise RequestError(413, f"the body exceeds {max_body} bytes")
                    buf.extend(chunk)

            try:
                await asyncio.wait_for(read(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                log.warning("client %s sent no complete body within %g s for %s; answered 408", _client(request),
                            body_timeout, _shown_path(request.scope.get("raw_path") or b"", request.method))
                raise RequestError(408, f"the body did not arrive within {body_timeout:g} s (--body-timeout)",
                                   {"Connection": "close"}) from None
            yield buf
        finally:
            budget.release(need)

    docs_body = _body("Documents")
    reading = _refusals(400, 408, 413, 422, 503)
    writing = _refusals(400, 401, 408, 413, 422, 503)

    def results(rows: list) -> Response:
        # serialised here (not by FastAPI's encoder, which walks every value in Python first); the
        # response models document the answers
        return _json({"results": rows})

    @app.post("/v1/check", openapi_extra=docs_body, summary="Matches of each document; nothing added",
              response_model=Results, responses=reading)
    async def check(request: Request) -> Response:
        async with received(request) as raw:
            ids, texts = parse_documents(raw, False, max_batch)
            rows = await run_in_threadpool(svc.check, ids, texts)
        metrics.checked.inc(len(rows))
        return results(rows)

    @app.post("/v1/add", openapi_extra={**docs_body, **guarded}, response_model=Results,
              summary="Add every document (409 if an id is taken)", responses={**writing, **_refusals(409)})
    async def add(request: Request) -> Response:
        authorise(request)
        async with received(request) as raw:
            ids, texts = parse_documents(raw, True, max_batch)
            rows = await run_in_threadpool(svc.add, ids, texts)
        metrics.added.inc(len(rows))
        return results(rows)

    @app.post("/v1/check-and-add", openapi_extra={**docs_body, **guarded}, response_model=Results,
              summary="Add each document that is not a near-duplicate (atomic)", responses=writing)
    async def check_and_add(request: Request) -> Response:
        authorise(request)
        async with received(request) as raw:
            ids, texts = parse_documents(raw, True, max_batch)
            rows = await svc.check_and_add_async(ids, texts)
        metrics.checked.inc(len(rows))
        metrics.added.inc(sum(r["added"] for r in rows))
        return results(rows)

    @app.post("/v1/admin/add", openapi_extra={**_body("Documents", ndjson=True), **guarded},
              response_model=BulkAdded, responses={**writing, **_refusals(409)},
              summary="Bulk add: NDJSON or a JSON array of {id, text}, as `neardup index add` "
                      "(?replace=true, ?id_field=, ?text_field=)")
    async def bulk_add(request: Request, replace: bool = False, id_field: str = "id",
                       text_field: str = "text") -> Response:
        authorise(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        async with received(request) as raw:
            ids, texts = parse_bulk(raw, "ndjson" in kind or "jsonl" in kind, max_batch, id_field, text_field)
            out = await run_in_threadpool(svc.bulk_add, ids, texts, replace)
        metrics.added.inc(out["added"])
        return _json(out)

    @app.post("/v1/admin/compact", openapi_extra=guarded, response_model=Compacted,
              responses=_refusals(401, 409),
              summary="Rewrite the index as one segment without removed documents (other requests wait)")
    async def compact(request: Request) -> Response:
        authorise(request)
        out = await run_in_threadpool(svc.compact)
        metrics.compactions.inc()
        metrics.compaction_seconds.observe(out["seconds"])
        return _json(out)

    @app.post("/v1/admin/backup", openapi_extra=guarded, response_model=BackedUp,
              responses=_refusals(401, 403, 409, 422),
              summary="A consistent copy of the index in --backup-dir (?name=; default: the index's name and the "
                      "time); other requests wait")
    async def backup(request: Request, name: str | None = None) -> Response:
        authorise(request)
        if backup_dir is None:
            raise RequestError(403, "backups are off: start neardup serve with --backup-dir DIR")
        if name is not None and not _BACKUP_NAME.fullmatch(name):
            raise RequestError(422, "name must be 1-128 letters, digits, '.', '_' or '-', not starting with '.' "
                                    f"or '-'; got {name[:200]!r}")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        dest = Path(backup_dir) / (name or f"{Path(svc.index.path).name}-{stamp}")
        for n in range(2, 100):                     # two in one second: -2, -3, …
            if name is not None or not (dest.exists() or dest.is_symlink()):
                break
            dest = Path(backup_dir) / f"{Path(svc.index.path).name}-{stamp}-{n}"
        out = await run_in_threadpool(svc.backup, dest)
        metrics.backups.inc()
        metrics.last_backup.set(time.time())
        return _json(out)

    def path_id(request: Request, doc_id: str) -> str:
        """The id of ``/v1/docs/{id}``: the rest of the path as sent, percent-decoded."""
        raw = request.scope.get("raw_path") or b""
        if raw.startswith(b"/v1/docs/"):
            return _decode_id(urllib.parse.unquote_to_bytes(raw[len(b"/v1/docs/"):]), "the id in the path")
        return doc_id                                   # (a path whose prefix was percent-encoded too)

    def query_id(request: Request) -> str:
        """The id of ``/v1/docs?id=…`` (form encoding: ``+`` is a space; ``id=`` is the empty id)."""
        query = request.scope.get("query_string", b"").decode("latin-1")
        found = [v for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True, encoding="latin-1")
                 if k == "id"]
        if len(found) != 1:
            raise RequestError(400, "give the id once: /v1/docs?id=<percent-encoded id> (or /v1/docs/<id>)")
        return _decode_id(found[0].encode("latin-1"), "the query's id")

    async def fetch(key: str) -> Response:
        return _json(await run_in_threadpool(svc.get, key))

    async def remove(key: str, request: Request) -> Response:
        authorise(request)
        out = await run_in_threadpool(svc.delete, key)
        metrics.removed.inc()
        return _json(out)

    lookup = {"response_model": Stored, "responses": _refusals(400, 404, 422)}
    deletion = {"response_model": Deleted, "responses": _refusals(400, 401, 404, 422), "openapi_extra": guarded}

    @app.get("/v1/docs/{doc_id:path}", summary="A document's stored signature (the id percent-encoded)", **lookup)
    async def get_doc(doc_id: str, request: Request) -> Response:
        return await fetch(path_id(request, doc_id))

    @app.delete("/v1/docs/{doc_id:path}", summary="Remove a document (the id percent-encoded)", **deletion)
    async def delete_doc(doc_id: str, request: Request) -> Response:
        return await remove(path_id(request, doc_id), request)

    @app.get("/v1/docs", summary="A document's stored signature: ?id=<percent-encoded id>, any id", **lookup)
    async def get_doc_query(request: Request, id: str) -> Response:
        return await fetch(query_id(request))

    @app.delete("/v1/docs", summary="Remove a document: ?id=<percent-encoded id>, any id", **deletion)
    async def delete_doc_query(request: Request, id: str) -> Response:
        return await remove(query_id(request), request)

    @app.get("/v1/stats", summary="Documents, bytes on disk and the index's parameters", response_model=Stats)
    async def stats() -> Response:
        return _json(await run_in_threadpool(svc.stats))

    @app.get("/healthz", summary="The service is up", response_model=Health)
    async def health() -> Response:
        return _json({"status": "ok"})

    @app.get("/metrics", summary="Prometheus metrics: requests, latencies, documents, index size, compactions",
             response_class=PlainTextResponse, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
    async def prometheus() -> Response:
        body = await run_in_threadpool(metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    app.state.service = svc
    app.state.metrics = metrics
    return app
