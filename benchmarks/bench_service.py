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


def client(args) -> list[float]:
    """One client: ``count`` requests of ``per`` documents on one keep-alive connection; latencies."""
    host, port, texts, start, count, per, tag, deadline = args
    conn = http.client.HTTPConnection(host, port, timeout=30)
    lat = []
    for i in range(count):
        if time.time() > deadline:
            break
        docs = [{"id": f"{tag}-{start + i}-{j}", "text": texts[(start + i * per + j) % len(texts)]}
                for j in range(per)]
        body = json.dumps({"documents": docs})
        t = time.perf_counter()
        conn.request("POST", "/v1/check-and-add", body, {"Content-Type": "application/json"})
        res = conn.getresponse()
        data = res.read()
        lat.append(time.perf_counter() - t)
        if res.status != 200:
            raise SystemExit(f"HTTP {res.status}: {data[:300]!r}")
    conn.close()
    return lat


def phase(host, port, texts, clients, requests, per, tag, limit) -> dict:
    deadline = time.time() + limit
    each = requests // clients
    jobs = [(host, port, texts, c * each * per, each, per, f"{tag}{c}", deadline) for c in range(clients)]
    t = time.perf_counter()
    with mp.get_context("fork").Pool(clients) as pool:
        lats = pool.map(client, jobs)
    wall = time.perf_counter() - t
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
        phase(host, port, texts, 2, 40, 1, "warm", args.time_limit)            # load the kernels
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
