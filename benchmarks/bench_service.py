#!/usr/bin/env python3
"""Load on `neardup serve`, loopback only, bounded: C concurrent clients sending real documents.

Starts the server on a copy of an index (``--index``, e.g. the 1 M-document one bench_index.py
leaves with ``--work``; or a fresh one of ``--corpus``), on 127.0.0.1 and a free port, then:

1. single-document ``POST /v1/check-and-add`` requests: ``--requests`` in all from ``--clients``
   client processes (each a keep-alive connection), each request's latency measured;
2. ``POST /v1/check-and-add`` with ``--batch`` documents per request, ``--batch-requests`` in all.

Documents are those of benchmarks/data/corpus.jsonl (the real 92 MB corpus), each with a new id, so
about a third are near-duplicates of earlier ones. Every phase stops at ``--time-limit`` seconds.
Prints requests/s, documents/s and latency percentiles; writes benchmarks/out/service.json.

    python benchmarks/bench_service.py --index /tmp/work/idx_minhash [--clients 8] [--requests 8000]
"""
from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import tempfile
import time

from common import corpus, neardup_cli, write_result


def load_texts(path: str, n: int) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line)["text"][:20000])
            if len(out) >= n:
                break
    return out


def request_bytes(host: str, path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


_JOBS: list = []     # each client's requests, built before the clients are forked


def client(args) -> tuple[float, float, list[float]]:
    """One client: its requests (built before the clock starts) sent one after another on one
    keep-alive connection, raw HTTP/1.1 over a socket — so that the generator, which shares the
    server's two cores, spends little of them; (first send, last answer, each request's latency)."""
    host, port, k, deadline = args
    requests = _JOBS[k]
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rf = sock.makefile("rb")
    lat = []
    t0 = time.perf_counter()
    for req in requests:
        if time.time() > deadline:
            break
        t = time.perf_counter()
        sock.sendall(req)
        status = rf.readline()
        length = 0
        while True:
            line = rf.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        data = rf.read(length)
        lat.append(time.perf_counter() - t)
        if b" 200 " not in status:
            raise SystemExit(f"{status!r}: {data[:300]!r}")
    t1 = time.perf_counter()
    sock.close()
    return t0, t1, lat


def phase(host, port, texts, clients, requests, per, tag, limit) -> dict:
    each = requests // clients
    jobs = []
    for c in range(clients):
        reqs = []
        for i in range(each):
            start = c * each * per + i * per
            docs = [{"id": f"{tag}{c}-{i}-{j}", "text": texts[(start + j) % len(texts)]} for j in range(per)]
            reqs.append(request_bytes(host, "/v1/check-and-add", json.dumps({"documents": docs}).encode()))
        jobs.append(reqs)
    _JOBS[:] = jobs
    deadline = time.time() + limit
    with mp.get_context("fork").Pool(clients) as pool:
        got = pool.map(client, [(host, port, k, deadline) for k in range(clients)])
    wall = max(g[1] for g in got) - min(g[0] for g in got)      # perf_counter is system-wide on Linux
    lats = [g[2] for g in got]
    all_lat = sorted(x for lat in lats for x in lat)
    n = len(all_lat)

    def pct(p):
        return round(1000 * all_lat[min(n - 1, int(p * n))], 2) if n else None

    return {"clients": clients, "requests": n, "documents_per_request": per, "wall_s": round(wall, 2),
            "requests_per_s": round(n / wall, 1), "documents_per_s": round(n * per / wall, 1),
            "p50_ms": pct(0.50), "p90_ms": pct(0.90), "p99_ms": pct(0.99), "max_ms": pct(1.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", help="an index folder to copy (default: a new one of the first 20,000 documents)")
    ap.add_argument("--corpus", default=None, help="default: benchmarks/data/corpus.jsonl (built when missing)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=8000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--batch-requests", type=int, default=80)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="neardup-bench-service-")
    idx = os.path.join(work, "idx")
    neardup = neardup_cli()
    texts = load_texts(args.corpus or corpus(), 20000)
    if args.index:
        shutil.copytree(args.index, idx)
    else:
        subprocess.run([neardup, "index", "create", idx], check=True, capture_output=True)
    server = subprocess.Popen([neardup, "serve", "--index", idx, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        host, port = url.split("//")[1].rsplit(":", 1)
        port = int(port)
        for _ in range(300):
            try:
                c = http.client.HTTPConnection(host, port, timeout=5)
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                if r.status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        c.request("GET", "/v1/stats")
        before = json.loads(c.getresponse().read())["documents"]
        phase(host, port, texts, 2, 40, 1, "warm", args.time_limit)            # load the kernels (the
        phase(host, port, texts, 2, 2, args.batch, "warmb", args.time_limit)   # parallel ones for batches)
        res = {"index_documents": before,
               "single": phase(host, port, texts, args.clients, args.requests, 1, "s", args.time_limit),
               "batch": phase(host, port, texts, args.clients, args.batch_requests, args.batch, "b",
                              args.time_limit)}
        c = http.client.HTTPConnection(host, port, timeout=5)
        c.request("GET", "/v1/stats")
        res["index_documents_after"] = json.loads(c.getresponse().read())["documents"]
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(res, indent=2))
    write_result("service.json", res)


if __name__ == "__main__":
    main()
