"""``neardup serve --index IDX``: answer "have I seen this?" over HTTP (see :mod:`neardup.service`)."""
from __future__ import annotations

import socket
import sys

import click

from . import main


@main.command()
@click.option("--index", "index_path", required=True, type=click.Path(exists=True, file_okay=False),
              help="The index folder (made by `neardup index create` or `neardup dedup --index`).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port (0: a free one; the address is the first line printed).")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False),
              help="A file holding a bearer token that every write must carry.")
@click.option("--max-body-bytes", type=click.IntRange(1), default=16 << 20, show_default=True)
@click.option("--max-batch", type=click.IntRange(1), default=10000, show_default=True,
              help="Most documents in one request.")
@click.option("--commit-delay-ms", type=click.FloatRange(0, 1000), default=2.0, show_default=True,
              help="Group commit: how long a check-and-add round may wait for requests still on their way "
                   "(more requests per fsync; 0: none).")
def serve(index_path, host, port, token_file, max_body_bytes, max_batch, commit_delay_ms):
    """Serve an index over HTTP: POST /v1/check, /v1/add, /v1/check-and-add; GET/DELETE
    /v1/docs/{id}; GET /v1/stats, /healthz; OpenAPI at /docs. Binds 127.0.0.1 unless told."""
    try:
        import uvicorn  # noqa: PLC0415

        from ..service import create_app  # noqa: PLC0415
    except ImportError as exc:
        raise click.ClickException(f"the service needs FastAPI and uvicorn ({exc.name} is missing): "
                                   "pip install 'neardup[serve]'") from None
    from .index import _open  # noqa: PLC0415

    token = None
    if token_file:
        with open(token_file, encoding="utf-8") as fh:
            token = fh.read().strip()
        if not token:
            raise click.ClickException(f"{token_file} is empty: put the bearer token in it")
    idx = _open(index_path, readonly=False, synchronous="FULL")
    app = None
    try:
        app = create_app(idx, token=token, max_body=max_body_bytes, max_batch=max_batch,
                         commit_delay=commit_delay_ms / 1000)
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
        print(f"http://{shown}:{bound}", flush=True)
        print(f"neardup serving {index_path} ({idx.kind}, {len(idx)} documents); OpenAPI at /docs",
              file=sys.stderr, flush=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if app is not None:
            app.state.service.close()
        idx.close()
