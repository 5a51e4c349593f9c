"""What the service tells its operators: :class:`Metrics` (Prometheus, ``GET /metrics``) and
:func:`observed`, the ASGI middleware that counts, times and logs every request (one access-log
line each, on the ``neardup.service.access`` logger: text, or one JSON object with ``--log-format
json``)."""
from __future__ import annotations

import json
import logging
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from .protocol import _shown_path

access = logging.getLogger("neardup.service.access")
LOG_FORMATS = ("text", "json")
#: request latencies' histogram buckets, seconds: 0.5 ms (a check of one document) to 60 s (a compaction)
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The service's Prometheus metrics, in a registry of its own (one per application): requests by
    endpoint (the route's template, so ids do not multiply the series), method and status; their
    latencies; documents checked, added and removed; compactions; and the index's documents, read at
    each scrape through ``size`` (a callable)."""

    def __init__(self, size, kind: str) -> None:
        self.registry = r = CollectorRegistry()
        self._series: dict = {}
        self.requests = Counter("neardup_http_requests", "HTTP requests answered, by endpoint, method and status.",
                                ("endpoint", "method", "status"), registry=r)
        self.latency = Histogram("neardup_http_request_duration_seconds",
                                 "Seconds from a request's headers to the end of its answer.",
                                 ("endpoint", "method"), buckets=BUCKETS, registry=r)
        self.checked = Counter("neardup_documents_checked", "Documents looked up (check and check-and-add).",
                               registry=r)
        self.added = Counter("neardup_documents_added", "Documents added (add, check-and-add, bulk add).",
                             registry=r)
        self.removed = Counter("neardup_documents_removed", "Documents deleted.", registry=r)
        self.compactions = Counter("neardup_compactions", "Compactions run by POST /v1/admin/compact.", registry=r)
        self.compaction_seconds = Histogram("neardup_compaction_duration_seconds", "Seconds a compaction took.",
                                            buckets=BUCKETS, registry=r)
        self.backups = Counter("neardup_backups", "Backups taken by POST /v1/admin/backup.", registry=r)
        self.last_backup = Gauge("neardup_last_backup_timestamp_seconds",
                                 "When the last backup was completed (Unix time; 0: none yet).", registry=r)
        docs = Gauge("neardup_index_documents", "Documents in the index.", ("kind",), registry=r)
        docs.labels(kind).set_function(size)

    def request(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        """Count and time one answered request (the labelled series kept, not looked up each time)."""
        key = (endpoint, method, status)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = (self.requests.labels(endpoint, method, str(status)),
                                          self.latency.labels(endpoint, method))
        series[0].inc()
        series[1].observe(seconds)

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)


def _endpoint(scope) -> str:
    """The route a request matched (its path template; a mounted app's prefix + ``/{path}``), or
    ``(unmatched)``."""
    route = scope.get("route")
    if route is not None:
        return getattr(route, "path_format", None) or getattr(route, "path", None) or "(unmatched)"
    if scope.get("endpoint") is not None:          # a mount (the docs' static files)
        root, top = scope.get("root_path", ""), scope.get("app_root_path", "")
        if root.startswith(top) and len(root) > len(top):
            return root[len(top):] + "/{path}"
    return "(unmatched)"


def log_line(record: dict, fmt: str) -> str:
    """An access-log line: ``client "METHOD /path" status bytes B ms``, or the record as JSON."""
    if fmt == "json":
        return json.dumps(record, separators=(",", ":"))
    return (f'{record["client"]} "{record["method"]} {record["path"]}" {record["status"]} '
            f'{record["bytes"]} B {record["duration_ms"]:.1f} ms')


def observed(app, metrics: Metrics, log_format: str = "text"):
    """``app`` wrapped (pure ASGI, so streaming and disconnects are untouched): each HTTP request is
    counted and timed in ``metrics`` and logged as one line on the access logger once answered (status
    500 when the application failed before answering)."""

    async def wrapper(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        start = time.perf_counter()
        state = {"status": 500, "bytes": 0}

        async def sending(message):
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
            elif message["type"] == "http.response.body":
                state["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await app(scope, receive, sending)
        finally:
            took = time.perf_counter() - start
            endpoint, method = _endpoint(scope), scope.get("method", "?")
            metrics.request(endpoint, method, state["status"], took)
            if access.isEnabledFor(logging.INFO):
                client = scope.get("client")
                raw = scope.get("raw_path") or scope.get("path", "").encode()
                query = scope.get("query_string") or b""
                path = _shown_path(raw + (b"?" + query if query else b""), method).split(" ", 1)[1]
                access.info(log_line({"time": round(time.time(), 3),
                                      "client": f"{client[0]}:{client[1]}" if client else "(unknown)",
                                      "method": method, "path": path, "status": state["status"],
                                      "bytes": state["bytes"], "duration_ms": round(took * 1000, 3)}, log_format))

    return wrapper
