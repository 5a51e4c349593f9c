"""``neardup serve --index IDX``: answer "have I seen this?" over HTTP (see :mod:`neardup.service`)."""
from __future__ import annotations

import ipaddress
import json
import logging
import socket
import sys

import click

from ..text.dictionaries import read_limited
from .group import index_folder, main
from .index import _open

LOG_FORMATS = ("text", "json")        # --log-format

@main.command()
@click.option("--index", "index_path", required=True, type=click.Path(exists=True), callback=index_folder,
              help="The index folder (made by `neardup index create` or `neardup dedup --index`).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port (0: a free one; the address is the first line printed).")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False),
              help="A file holding a bearer token that every write must carry.")
@click.option("--max-body-bytes", type=click.IntRange(1), default=16 << 20, show_default=True,
              help="Largest request body (413 beyond).")
@click.option("--max-batch", type=click.IntRange(1), default=10000, show_default=True,
              help="Most documents in one request; a body may hold 32 JSON values a document and nest "
                   "64 deep (413 / 400 beyond, refused before parsing).")
@click.option("--max-inflight-bytes", type=click.IntRange(1), default=None,
              help="Bytes of request bodies held at once, all requests together (default and least: "
                   "4 x / 1 x --max-body-bytes); 64 more requests may wait for room, up to --body-timeout, then "
                   "get 503 with Retry-After. Requests then hold at most about 5 x this + 10 x --max-body-bytes "
                   "of memory (see neardup.service).")
@click.option("--header-timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds for a request's headers to arrive (from its first byte, or from the connection "
                   "for its first request); 408 and closed beyond.")
@click.option("--body-timeout", type=click.FloatRange(0.1, 3600), default=60.0, show_default=True,
              help="Seconds for a request's body to arrive once its headers have (waiting for room included); "
                   "408 and closed beyond.")
@click.option("--commit-delay-ms", type=click.FloatRange(0, 1000), default=2.0, show_default=True,
              help="Group commit: how long a check-and-add round may wait for requests still on their way "
                   "(more requests per fsync; 0: none).")
@click.option("--backup-dir", type=click.Path(exists=True, file_okay=False, writable=True), default=None,
              help="Where POST /v1/admin/backup makes consistent copies of the index (each a new folder; hard links "
                   "to its segments on the same file system). Without it, backups through the service are off.")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="The lines on stderr: text, or json (one JSON object a line): the access log and the "
                   "service's own lines (start, warnings, clients that disconnect or time out).")
@click.option("--access-log/--no-access-log", default=True, show_default=True,
              help="One line per request once answered: client, method, path, status, bytes, duration.")
def serve(index_path, host, port, token_file, max_body_bytes, max_batch, max_inflight_bytes, header_timeout,
          body_timeout, commit_delay_ms, backup_dir, log_format, access_log):
    """Serve an index over HTTP: POST /v1/check, /v1/add, /v1/check-and-add; GET/DELETE
    /v1/docs/{id} and /v1/docs?id=ID; GET /v1/stats, /healthz, /metrics (Prometheus); bulk add,
    compaction and backups while serving: POST /v1/admin/add, /v1/admin/compact, /v1/admin/backup;
    OpenAPI at /docs (served from the package: works offline). Binds 127.0.0.1 unless told; on any
    other address without --token-file it warns: anyone who reaches the port may write. One
    access-log line per request, and one line for a client that disconnects or times out, on stderr.

    \b
    Examples:
      neardup serve --index idx --port 8000
      neardup serve --index idx --host 0.0.0.0 --token-file /etc/neardup/token --log-format json \\
        --backup-dir /srv/neardup-backups
    """
    try:
        import uvicorn  # noqa: PLC0415  (the serve extra)

        from ..service import create_app, http_protocol  # noqa: PLC0415  (the serve extra: FastAPI)

        protocol = http_protocol(header_timeout, body_timeout)      # (imports uvicorn's httptools protocol)
    except ImportError as exc:
        raise click.ClickException(f"the service needs FastAPI and uvicorn ({exc.name} is missing): "
                                   "pip install 'neardup[serve]'") from None

    token = None
    if token_file:
        token = read_token(token_file)
    log = _log_lines(log_format, access_log)
    warning = exposure_warning(host, token is not None, port)
    if warning:
        log.warning(warning.removeprefix("neardup serve: "))
    idx = _open(index_path, readonly=False, synchronous="FULL")
    app = None
    try:
        app = create_app(idx, token=token, max_body=max_body_bytes, max_batch=max_batch,
                         commit_delay=commit_delay_ms / 1000, max_inflight=max_inflight_bytes,
                         body_timeout=body_timeout, log_format=log_format, backup_dir=backup_dir)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
        sock.listen(2048)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        url = f"http://{shown}:{bound}"
        idx.note_writer(f"(neardup serve at {url})")      # named to a second writer (`neardup index add`)
        print(url, flush=True)
        log.info(f"serving {index_path} ({idx.kind}, {len(idx)} documents) at {url}; OpenAPI at /docs, "
                 "metrics at /metrics")
        config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5,
                                http=protocol, log_config=None)          # uvicorn's lines: _log_lines's
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if app is not None:
            app.state.service.close()
        idx.close()


MAX_TOKEN_BYTES = 64 << 10       # a bearer token is a line; the file is read no further (/dev/zero stops here)


def read_token(path: str) -> str:
    """The bearer token of ``--token-file``: its UTF-8 text, white space around it removed; a file
    that is empty, not UTF-8 or over :data:`MAX_TOKEN_BYTES` is one error naming it."""
    data = read_limited(path, MAX_TOKEN_BYTES, "token file (--token-file)", "; a bearer token is one short line")
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{path}: the token file (--token-file) is not UTF-8 (byte {exc.start + 1})") \
            from None
    if not token:
        raise click.ClickException(f"{path} is empty: put the bearer token in it")
    return token


def exposure_warning(host: str, has_token: bool, port: int) -> str | None:
    """The warning line for a service that anyone on the network may write to: ``host`` is not a
    loopback address (``localhost`` and 127.0.0.0/8, ``::1`` are) and no token guards the writes."""
    if has_token or host.strip("[]").lower() == "localhost":
        return None
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return None
    except ValueError:
        pass
    return (f"neardup serve: warning: listening on {host} without --token-file: anyone who can reach port {port} "
            "can add and delete documents")


class _JsonLines(logging.Formatter):
    """One JSON object a line: ``{"time", "level", "message"}``; an access-log record is JSON already."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == "neardup.service.access":
            return record.getMessage()
        return json.dumps({"time": round(record.created, 3), "level": record.levelname.lower(),
                           "message": record.getMessage()}, separators=(",", ":"))


def _log_lines(log_format: str, access_log: bool) -> logging.Logger:
    """The service's lines (its start, warnings, clients that disconnect or time out, uvicorn's own)
    and the access log go to stderr, one line each, in ``log_format``; returns the service's logger."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines() if log_format == "json" else logging.Formatter("neardup serve: %(message)s"))
    for name in ("neardup.service", "uvicorn", "neardup.compile"):      # (a first request may compile a kernel)
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO if name == "neardup.service" else logging.WARNING)
        logger.propagate = False
    logging.getLogger("neardup.service.access").setLevel(logging.INFO if access_log else logging.WARNING)
    return logging.getLogger("neardup.service")
