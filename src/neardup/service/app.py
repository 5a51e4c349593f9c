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
import collections
import contextlib
import hmac
import json
import logging
import threading
import time
import urllib.parse
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ..errors import NeardupError
from ..index.store import DuplicateKeyError, InvalidKeyError, check_key, key_candidates

MAX_BODY = 16 << 20
MAX_BATCH = 10000
MAX_DEPTH = 64                # arrays/objects nested in a body, at most (a request needs 3)
VALUES_PER_DOCUMENT = 32      # JSON values a body may hold per --max-batch document ({"id", "text"}: 5)
MAX_WAITING = 64              # requests that may wait for room among --max-inflight-bytes
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 60.0
UNREAD_GRACE = 1.0            # a body the application never reads is cut off this long after its timeout

log = logging.getLogger("neardup.service")


class RequestError(Exception):
    """A request the service refuses: answered ``{"error": {"status", "message"}}``."""

    def __init__(self, status: int, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def _json(obj, status: int = 200, headers: dict | None = None) -> Response:
    """``obj`` as JSON, ASCII-only (an id may hold a lone surrogate, which UTF-8 cannot carry)."""
    return Response(json.dumps(obj, separators=(",", ":")).encode(), status_code=status,
                    media_type="application/json", headers=headers)


def _error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": {"status": status, "message": message}}).encode()


_DELTA = np.zeros(256, np.int8)           # nesting: +1 at an opening bracket, -1 at a closing one
_DELTA[list(b"[{")] = 1
_DELTA[list(b"]}")] = -1
_COUNTED = np.zeros(256, bool)            # a value starts after each of these (and once at the start)
_COUNTED[list(b"[{,:")] = True
_CHUNK = 1 << 19                          # bytes scanned at a time: temporaries stay ~10 MB
_LOOK_BACK = 16                           # backslash runs this long before a quote take the slow way


def _backslashes_before(a: np.ndarray, at: int) -> int:
    """How many backslashes end just before ``a[at]`` (windows doubling up to :data:`_CHUNK`)."""
    n, size = 0, 64
    while at - n > 0:
        w = a[max(0, at - n - size):at - n]
        other = np.flatnonzero(w != 92)
        if len(other):
            return n + len(w) - 1 - int(other[-1])
        n += len(w)
        size = min(2 * size, _CHUNK)
    return n


def _escaped(a: np.ndarray, q: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Which of the quotes at ``q`` (positions in ``a``, within [lo, hi)) are escaped: preceded by
    an odd run of backslashes (in a JSON string, backslashes pair up from the left)."""
    out = np.zeros(len(q), bool)
    cand = np.flatnonzero(a[np.maximum(q - 1, 0)] == 92)
    cand = cand[q[cand] > 0]
    if not len(cand):
        return out
    p = q[cand]
    run = np.ones(len(p), np.int64)
    longer = np.ones(len(p), bool)
    for k in range(2, _LOOK_BACK + 1):
        idx = p - k
        longer &= idx >= 0
        longer[longer] = a[idx[longer]] == 92
        if not longer.any():
            break
        run += longer
    else:       # a run of _LOOK_BACK or more: measure the chunk's runs, and the one ending at its start
        back = _backslashes_before(a, lo)
        bs = np.flatnonzero(a[lo:hi] == 92) + lo
        first = np.ones(len(bs), bool)
        np.not_equal(bs[1:], bs[:-1] + 1, out=first[1:])
        starts = bs[first]
        if len(bs) and bs[0] == lo:
            starts[0] -= back
        run = np.full(len(p), back, np.int64)         # a quote at the chunk's start: the run before it
        within = p > lo
        run[within] = p[within] - starts[np.cumsum(first) - 1][np.searchsorted(bs, p[within] - 1)]
    out[cand] = run % 2 == 1
    return out


def json_shape(body, chunk: int = _CHUNK, most: tuple[float, float] = (np.inf, np.inf)) -> tuple[int, int]:
    """(deepest nesting of arrays and objects, values) of the JSON text ``body`` (bytes), without
    parsing it: from its brackets, commas and colons outside strings, found with numpy. ``values``
    is 1 + every ``[``, ``{``, ``,`` and ``:`` outside strings: the number of values, keys included,
    plus one per empty array or object. Exact for valid JSON; for invalid JSON, exact up to the
    first error (where a parser stops). Returns early, with either count so far, once the nesting
    or the values exceed ``most``."""
    a = np.frombuffer(body, np.uint8)
    depth = top = 0
    values = 1
    inside = 0                                # in a string at the start of the chunk
    for lo in range(0, len(a), chunk):
        c = a[lo:lo + chunk]
        m = len(c)
        q = np.flatnonzero(c == 34)
        if len(q):
            q = q[~_escaped(a, q + lo, lo, lo + m)]
        edges = np.empty(len(q) + 2, np.int64)   # the quotes cut the chunk into pieces, alternately
        edges[0], edges[1:-1], edges[-1] = -1, q, m   # outside and inside strings
        starts = edges[inside:-1:2] + 1
        ends = edges[1 + inside::2]
        inside ^= len(q) & 1
        lens = ends - starts
        total = int(lens.sum())
        if total == m:
            outside = c
        elif total:
            pos = np.repeat(starts - (np.cumsum(lens) - lens), lens)
            pos += np.arange(total)
            outside = c[pos]
        else:
            continue
        values += int(np.count_nonzero(_COUNTED[outside]))
        d = _DELTA[outside]
        d = d[d != 0]
        if len(d):
            levels = np.cumsum(d, dtype=np.int64)
            top = max(top, depth + int(levels.max()))
            depth += int(levels[-1])
        if top > most[0] or values > most[1]:
            break
    return top, values


def _schema() -> dict:
    doc = {"type": "object", "required": ["text"],
           "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "text": {"type": "string"}}}
    return {"type": "object", "required": ["documents"],
            "properties": {"documents": {"type": "array", "minItems": 1, "items": doc}}}


def parse_documents(body: bytes, need_id: bool, max_batch: int) -> tuple:
    """(ids, texts) of a request body, or :class:`RequestError` naming what is wrong (and where).
    The body's nesting and number of values are checked before it is parsed (:func:`json_shape`)."""
    most = VALUES_PER_DOCUMENT * (max_batch + 1)
    depth, values = json_shape(body, most=(MAX_DEPTH, most))
    if depth > MAX_DEPTH:
        raise RequestError(400, f"the body nests arrays/objects {depth} deep (or more); at most {MAX_DEPTH}")
    if values > most:
        raise RequestError(413, f"the body holds over {most} JSON values: a batch of at most {max_batch} "
                                f"documents may hold {VALUES_PER_DOCUMENT} a document")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(text)
        del text
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
        if k is not None:
            try:
                k = check_key(k, f"documents[{i}].id")
            except InvalidKeyError as exc:
                raise RequestError(422, str(exc)) from None
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
            found = self.index._check(values, empty, self.index._default_accept())
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
        """The id a URL's text means: the string, or (when only that exists) the integer it spells
        (:func:`~neardup.index.store.key_candidates`); 404 when neither is indexed."""
        try:
            check_key(raw, "id")
        except InvalidKeyError as exc:
            raise RequestError(422, str(exc)) from None
        for key in key_candidates(raw):
            if key in self.index:
                return key
        shown = repr(raw) if len(raw) <= 200 else repr(raw[:200]) + "…"
        raise RequestError(404, f"no document with id {shown}")

    def get(self, raw: str) -> dict:
        with self.lock:
            key = self._key(raw)
            sig = self.index.get(key)
        if self.simhash:
            return {"id": key, "fingerprint": int(np.asarray(sig).reshape(-1)[0])}
        if self.index.kind == "simhash-verified":  # (the fingerprint, then the sketch's slots)
            return {"id": key, "fingerprint": int(sig[0]),
                    "sketch": self.index.sketch_of_row(sig).tolist()}
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


class _BodyBudget:
    """At most ``limit`` bytes of request bodies held at once, all requests together: a request
    reserves its size before reading its body and gives it back once answered. Requests that find
    no room wait in arrival order (at most ``max_waiting`` of them; beyond, 503 at once). Event-loop
    only (no lock)."""

    def __init__(self, limit: int, max_waiting: int = MAX_WAITING) -> None:
        self.limit = self.free = limit
        self.max_waiting = max_waiting
        self._waiting: collections.deque = collections.deque()

    def _busy(self) -> RequestError:
        return RequestError(503, f"the service is busy: {self.limit} bytes of request bodies are being received "
                                 "or served (--max-inflight-bytes); retry later", {"Retry-After": "1"})

    async def acquire(self, n: int, timeout: float) -> None:
        """Reserve ``n`` bytes, waiting up to ``timeout`` seconds; else :class:`RequestError` 503."""
        if not self._waiting and n <= self.free:
            self.free -= n
            return
        if len(self._waiting) >= self.max_waiting:
            raise self._busy()
        fut = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._waiting.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except BaseException as exc:
            if fut.done() and not fut.cancelled():      # granted just as the wait ended
                if isinstance(exc, asyncio.TimeoutError):
                    return
                self.release(n)
            else:
                fut.cancel()
                self._waiting.remove(entry)
                self._grant()                           # it may have held back the ones behind it
            if isinstance(exc, asyncio.TimeoutError):
                raise self._busy() from None
            raise

    def release(self, n: int) -> None:
        self.free += n
        self._grant()

    def _grant(self) -> None:
        while self._waiting and self._waiting[0][0] <= self.free:
            n, fut = self._waiting.popleft()
            self.free -= n
            fut.set_result(None)


def _client(request: Request) -> str:
    """``host:port`` of the client, for a log line."""
    return f"{request.client[0]}:{request.client[1]}" if request.client else "(unknown)"


def _shown_path(raw: bytes, method: str) -> str:
    """``METHOD /path`` for a log line: the path as sent (percent-encoded), cut at 200 characters."""
    path = raw.decode("ascii", "backslashreplace")
    return f"{method} {path if len(path) <= 200 else path[:200] + '…'}"


def create_app(index, token: str | None = None, max_body: int = MAX_BODY, max_batch: int = MAX_BATCH,
               commit_delay: float = 0.002, max_inflight: int | None = None,
               body_timeout: float = BODY_TIMEOUT):
    """The ASGI application serving ``index`` (a :class:`~neardup.index.disk.DiskIndex` or
    :class:`~neardup.index.disk.SimHashDiskIndex` opened for writing); ``app.state.service`` is its
    :class:`IndexService` (close it before the index). ``max_inflight`` (default 4 × ``max_body``):
    bytes of request bodies held at once; ``body_timeout``: seconds for a body to arrive once its
    request has started (waiting for room included). The module docstring states every bound."""
    svc = IndexService(index, commit_delay=commit_delay)
    budget = _BodyBudget(max(max_body, 4 * max_body if max_inflight is None else max_inflight))

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await run_in_threadpool(svc.close)       # answer what is queued before the index is closed

    app = FastAPI(lifespan=lifespan, title="neardup", version=_version(),
                  description="Have I seen this document, or something nearly like it? "
                              f"A {svc.index.kind} index of near-duplicates.")

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

    docs_body = {"requestBody": {"required": True, "content": {"application/json": {"schema": _schema()}}}}

    def results(rows: list) -> Response:
        # serialised here (not by FastAPI's encoder, which walks every value in Python first)
        return _json({"results": rows})

    @app.post("/v1/check", openapi_extra=docs_body, summary="Matches of each document; nothing added")
    async def check(request: Request) -> Response:
        async with received(request) as raw:
            ids, texts = parse_documents(raw, False, max_batch)
            return results(await run_in_threadpool(svc.check, ids, texts))

    @app.post("/v1/add", openapi_extra=docs_body, summary="Add every document (409 if an id is taken)")
    async def add(request: Request) -> Response:
        authorise(request)
        async with received(request) as raw:
            ids, texts = parse_documents(raw, True, max_batch)
            return results(await run_in_threadpool(svc.add, ids, texts))

    @app.post("/v1/check-and-add", openapi_extra=docs_body,
              summary="Add each document that is not a near-duplicate (atomic)")
    async def check_and_add(request: Request) -> Response:
        authorise(request)
        async with received(request) as raw:
            ids, texts = parse_documents(raw, True, max_batch)
            return results(await svc.check_and_add_async(ids, texts))

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
        return _json(await run_in_threadpool(svc.delete, key))

    @app.get("/v1/docs/{doc_id:path}", summary="A document's stored signature (the id percent-encoded)")
    async def get_doc(doc_id: str, request: Request) -> Response:
        return await fetch(path_id(request, doc_id))

    @app.delete("/v1/docs/{doc_id:path}", summary="Remove a document (the id percent-encoded)")
    async def delete_doc(doc_id: str, request: Request) -> Response:
        return await remove(path_id(request, doc_id), request)

    @app.get("/v1/docs", summary="A document's stored signature: ?id=<percent-encoded id>, any id")
    async def get_doc_query(request: Request, id: str) -> Response:
        return await fetch(query_id(request))

    @app.delete("/v1/docs", summary="Remove a document: ?id=<percent-encoded id>, any id")
    async def delete_doc_query(request: Request, id: str) -> Response:
        return await remove(query_id(request), request)

    @app.get("/v1/stats", summary="Documents, bytes on disk and the index's parameters")
    async def stats() -> dict[str, Any]:
        return await run_in_threadpool(svc.stats)

    @app.get("/healthz", summary="The service is up")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    app.state.service = svc
    return app


def _decode_id(data: bytes, where: str) -> str:
    """A percent-decoded id as text: UTF-8 with lone surrogates kept (JSON's ``\\ud800`` can add
    them), else 400 naming ``where``."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"{where} is not UTF-8 once percent-decoded (byte {exc.start})") from None


def http_protocol(header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT) -> type:
    """uvicorn's HTTP/1.1 protocol (httptools) with the timeouts it lacks and quiet disconnects:
    a request's headers must be complete within ``header_timeout`` of its first byte (of the
    connection, for a connection's first request; a connection that never sends a byte is closed
    then, silently), else 408 and the connection is closed; a body the application leaves unread
    must be complete within ``body_timeout`` + :data:`UNREAD_GRACE` of the headers, else the
    connection is closed (the application answers 408 first to a body it reads). A client that
    goes away before its answer is complete is one log line. Pass it as ``uvicorn.Config(http=…)``."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415 (only serving needs uvicorn)

    class Protocol(HttpToolsProtocol):
        _timer = None
        _phase = "idle"              # idle (no byte of a request yet), headers, body, done
        _quiet = False               # closed by us: its end is not a disconnect

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm(header_timeout)

        def _arm(self, delay: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(delay, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._phase = "headers"
            if self._timer is None:
                self._arm(header_timeout)

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._phase = "body"
            if self.pipeline:                   # queued behind an earlier request: its clock starts with it
                self._disarm()
            else:
                self._arm(body_timeout + UNREAD_GRACE)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._phase == "body" and self._timer is None and not self.transport.is_closing():
                self._arm(body_timeout + UNREAD_GRACE)

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._phase = "done"
            self._disarm()

        def _who(self) -> str:
            return f"{self.client[0]}:{self.client[1]}" if self.client else "(unknown)"

        def _request(self) -> str:
            return _shown_path(self.scope.get("raw_path", b""), self.scope.get("method", "?"))

        def _expired(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            self._quiet = True
            answering = self.cycle is not None and not self.cycle.response_complete
            if self._phase == "headers" and not answering:
                body = _error_body(408, f"the request's headers did not arrive within {header_timeout:g} s "
                                        "(--header-timeout)")
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                                     b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
                log.warning("client %s sent no complete request headers within %g s; answered 408 and closed",
                            self._who(), header_timeout)
            elif self._phase == "headers":
                log.warning("client %s sent no complete request headers within %g s; closed", self._who(),
                            header_timeout)
            elif self._phase == "body":
                log.warning("client %s sent no complete body within %g s for %s; closed", self._who(),
                            body_timeout, self._request())
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            self._quiet = True                  # uvicorn logs the invalid request itself
            super().send_400_response(msg)

        def shutdown(self) -> None:
            self._quiet = self._quiet or self.cycle is None or self.cycle.response_complete
            super().shutdown()

        def connection_lost(self, exc) -> None:
            self._disarm()
            if not self._quiet:
                if self.cycle is not None and not self.cycle.response_complete:
                    scope = self.cycle.scope
                    log.warning("client %s disconnected during %s", self._who(),
                                _shown_path(scope.get("raw_path", b""), scope.get("method", "?")))
                elif self._phase == "headers":
                    log.warning("client %s disconnected during a request's headers", self._who())
            super().connection_lost(exc)

    return Protocol


def _version() -> str:
    from .._version import __version__  # noqa: PLC0415

    return __version__
