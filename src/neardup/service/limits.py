"""The service's bounds (see :mod:`neardup.service.app` for what each one answers): body and batch
sizes, nesting, timeouts, :class:`RequestError` (a refused request) and :class:`_BodyBudget`, the
bytes of request bodies all requests may hold at once."""
import asyncio
import collections
import logging

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
