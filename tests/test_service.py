"""``neardup serve``: the real server (uvicorn) on 127.0.0.1, a free port, a bounded number of
requests each with a time limit. Endpoints, every bad-request case, the token, concurrent
check-and-add, and SIGKILL under load followed by a restart."""
from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs FastAPI (pip install 'neardup[serve]')")
pytest.importorskip("uvicorn", reason="the service needs uvicorn (pip install 'neardup[serve]')")

from neardup.index.disk import DiskIndex

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"
DOCS = [json.loads(x) for x in gzip.open(DEMO, "rt", encoding="utf-8")]


class Server:
    """``neardup serve`` on a free loopback port; its stderr (one access-log line per request) is read
    as it comes, so a long test never fills the pipe, and is ``self.stderr`` once stopped."""

    def __init__(self, index: Path, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "neardup", "serve", "--index", str(index), "--port", "0",
                                      *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._err: list[str] = []
        self._drain = threading.Thread(target=lambda: self._err.extend(self.proc.stderr), daemon=True)
        self._drain.start()
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.proc.wait(30)
            self._drain.join(30)
        assert line.startswith("http://127.0.0.1:"), (line, "".join(self._err))
        self.url = line
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the server did not answer /healthz in 30 s")

    def call(self, method: str, path: str, body=None, raw: bytes | None = None, token: str | None = None):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=20) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def stop(self, sig=signal.SIGTERM) -> int:
        """Stop the server; after SIGTERM it shuts down cleanly: exit status 128 + 15, no traceback."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=30)
            self._drain.join(30)
            err = self.stderr = "".join(self._err)
            if sig == signal.SIGTERM:
                assert rc == 128 + signal.SIGTERM and "Traceback" not in err, (rc, err[-2000:])
            return rc
        finally:
            self.proc.kill()
            self.proc.stdout.close()
            self.proc.stderr.close()


def _docs(ids_texts):
    return {"documents": [{"id": k, "text": t} for k, t in ids_texts]}


def make_index(path: Path) -> Path:
    """An index of the demo corpus's first 200 documents at ``path``."""
    with DiskIndex.create(path) as idx:
        idx.add_batch([d["id"] for d in DOCS[:200]], [d["text"] for d in DOCS[:200]])
    return path


@pytest.fixture
def index(tmp_path) -> Path:
    return make_index(tmp_path / "idx")


def test_endpoints_on_real_documents(index):
    s = Server(index)
    try:
        status, res = s.call("POST", "/v1/check", {"documents": [{"text": DOCS[3]["text"]},
                                                                 {"id": 7, "text": "nothing like it at all"}]})
        assert status == 200 and res["results"][0]["duplicate"] and res["results"][0]["added"] is False
        assert {"id": DOCS[3]["id"], "similarity": 1.0} in res["results"][0]["matches"]
        assert res["results"][1] == {"id": 7, "duplicate": False, "added": False, "matches": []}
        new = DOCS[200:260]
        status, res = s.call("POST", "/v1/check-and-add", _docs((d["id"], d["text"]) for d in new))
        assert status == 200 and [r["id"] for r in res["results"]] == [d["id"] for d in new]
        added = [r["id"] for r in res["results"] if r["added"]]
        dups = [r for r in res["results"] if r["duplicate"]]
        assert added and dups and all(not r["added"] and r["matches"] for r in dups)
        assert s.call("GET", "/v1/stats")[1]["documents"] == 200 + len(added)
        status, res = s.call("POST", "/v1/add", _docs([("x1", "a fresh text"), (5, "another fresh text")]))
        assert status == 200 and all(r["added"] for r in res["results"])
        status, res = s.call("POST", "/v1/add", _docs([("x2", "more"), ("x1", "taken id")]))
        assert status == 409 and "x1" in res["error"]["message"]
        assert s.call("GET", "/v1/docs/x2")[0] == 404                   # nothing of the batch added
        status, res = s.call("GET", "/v1/docs/5")
        assert status == 200 and res["id"] == 5 and len(res["signature"]) == 128
        assert s.call("DELETE", "/v1/docs/x1") == (200, {"id": "x1", "deleted": True})
        assert s.call("GET", "/v1/docs/x1")[0] == 404 and s.call("DELETE", "/v1/docs/x1")[0] == 404
        stats = s.call("GET", "/v1/stats")[1]
        assert stats["documents"] == 200 + len(added) + 1 and stats["parameters"]["kind"] == "minhash"
        status, spec = s.call("GET", "/openapi.json")
        assert status == 200 and {"/v1/check", "/v1/add", "/v1/check-and-add", "/v1/docs/{doc_id}", "/v1/stats",
                                  "/healthz"} <= set(spec["paths"])
    finally:
        s.stop()
    with DiskIndex.open(index, readonly=True) as idx:             # the adds are in the index
        assert len(idx) == stats["documents"] and 5 in idx and "x1" not in idx


def test_bad_requests_get_4xx_and_change_nothing(index):
    s = Server(index, "--max-body-bytes", 4000, "--max-batch", 5)
    try:
        cases = [
            (b'{"documents": [', 400, "not valid JSON"),
            (b'{"documents": [{"id": "a", "text": "\xff\xfe"}]}', 400, "UTF-8"),
            (json.dumps(_docs([("big", "word " * 2000)])).encode(), 413, "bytes"),
            (json.dumps(_docs([(f"m{i}", "t") for i in range(6)])).encode(), 413, "at most 5"),
            (b'{"documents": []}', 422, "empty"),
            (b'{"documents": "text"}', 422, "must be a list"),
            (b'[1, 2]', 422, "documents"),
            (b'{"documents": [{"id": "a"}]}', 422, "text must be a string (missing)"),
            (b'{"documents": [{"id": "a", "text": 5}]}', 422, "text must be a string"),
            (b'{"documents": [{"id": 1.5, "text": "t"}]}', 422, "documents[0].id: "),
            (b'{"documents": [{"id": true, "text": "t"}]}', 422, "documents[0].id: "),
            (b'{"documents": [{"text": "t"}]}', 422, "id is missing"),
            (b'{"documents": [{"id": "d", "text": "t"}, {"id": "d", "text": "u"}]}', 422, "twice"),
            (b'{"documents": [7]}', 422, "must be an object"),
        ]
        for path in ("/v1/add", "/v1/check-and-add"):
            for raw, status, words in cases:
                got, res = s.call("POST", path, raw=raw)
                assert got == status and words in res["error"]["message"], (path, raw[:60], got, res)
        assert s.call("POST", "/v1/check", raw=b"{")[0] == 400
        assert s.call("GET", "/v1/stats")[1]["documents"] == 200
        assert s.call("GET", "/no/such/path")[0] == 404
        assert s.call("GET", "/v1/check")[0] == 405
    finally:
        s.stop()


def test_token_guards_every_write(index, tmp_path):
    (tmp_path / "token").write_text("s3cret\n")
    s = Server(index, "--token-file", tmp_path / "token")
    try:
        body = _docs([("t1", "a text about tokens")])
        for path in ("/v1/add", "/v1/check-and-add"):
            assert s.call("POST", path, body)[0] == 401
            assert s.call("POST", path, body, token="wrong")[0] == 401
        assert s.call("DELETE", f"/v1/docs/{DOCS[0]['id']}")[0] == 401
        assert s.call("POST", "/v1/check", body)[0] == 200            # reads need no token
        assert s.call("POST", "/v1/add", body, token="s3cret")[0] == 200
        assert s.call("DELETE", "/v1/docs/t1", token="s3cret")[0] == 200
    finally:
        s.stop()


def test_concurrent_near_identical_documents_are_added_once(index):
    s = Server(index)
    try:
        for round_ in range(4):
            base = " ".join(f"round{round_}word{j}" for j in range(120))   # new to the index, per round
            barrier = threading.Barrier(8)

            def send(i, barrier=barrier, base=base, round_=round_):
                barrier.wait(timeout=20)
                return s.call("POST", "/v1/check-and-add", _docs([(f"r{round_}-c{i}", base + f" client {i}")]))

            with ThreadPoolExecutor(8) as pool:
                results = [r[1]["results"][0] for r in pool.map(send, range(8))]
            assert sum(r["added"] for r in results) == 1, results
            winner = next(r["id"] for r in results if r["added"])
            assert all(r["duplicate"] and r["matches"][0]["id"] == winner for r in results if not r["added"])
    finally:
        s.stop()


def test_sigkill_under_load_keeps_every_acknowledged_add(index):
    s = Server(index)
    acked, sent = [], []
    stop = threading.Event()

    def client(c):
        for i in range(60):
            if stop.is_set():
                return
            key = f"k{c}-{i}"
            sent.append(key)
            try:
                status, res = s.call("POST", "/v1/add", _docs([(key, f"client {c} document {i} " + "x " * (i % 7))]))
            except (OSError, http.client.HTTPException):   # the server was killed mid-reply
                return
            if status == 200:
                acked.append(key)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(s.proc.pid, signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join(30)
    s.stop(signal.SIGKILL)
    assert len(acked) >= 40
    s2 = Server(index)                                             # opens without any repair step
    try:
        for key in acked:
            assert s2.call("GET", f"/v1/docs/{key}")[0] == 200, key
        n = s2.call("GET", "/v1/stats")[1]["documents"]
        assert 200 + len(acked) <= n <= 200 + len(sent)
    finally:
        s2.stop()


def test_simhash_index_check_and_add_batches(tmp_path):
    """A SimHash index's check-and-add with several documents per round (a batch request, or
    concurrent single requests grouped into one round): a near copy within the batch is a duplicate
    of the batch's earlier document, a copy of an indexed one names it; through the Python API and
    the service alike (the in-batch pairs crashed with AttributeError before)."""
    from neardup.index.disk import SimHashDiskIndex

    texts = [d["text"] for d in DOCS[:6]]
    near = texts[1] + " one more line at the end"
    path = tmp_path / "sidx"
    with SimHashDiskIndex.create(path) as idx:
        idx.add_batch(["d0"], texts[:1])
        got = idx.check_and_add(["a", "b", "b2", "c"], [texts[0], texts[1], near, texts[2]])
        assert [(r["id"], r["duplicate"], r["added"]) for r in got] == [
            ("a", True, False), ("b", False, True), ("b2", True, False), ("c", False, True)]
        assert got[0]["matches"][0][0] == "d0" and got[2]["matches"][0][0] == "b"
    s = Server(path)
    try:
        status, body = s.call("POST", "/v1/check-and-add",
                              _docs([("e", texts[3]), ("e2", texts[3] + " and a trailing word"), ("f", texts[4])]))
        assert status == 200, body
        res = body["results"]
        assert [(r["id"], r["duplicate"], r["added"]) for r in res] == [
            ("e", False, True), ("e2", True, False), ("f", False, True)]
        assert res[1]["matches"][0]["id"] == "e"
    finally:
        s.stop()


def test_containment_index_served(tmp_path):
    """A containment index behind the service: a passage of an indexed document is a duplicate of it; a
    document holding an indexed one is not (it is never a copy of what it holds: the directed rule of
    ``dedup --metric containment``), so it is added."""
    from neardup.index.disk import ContainmentDiskIndex

    long = [d["text"] for d in DOCS if len(d["text"].split()) > 400][:3]
    words = long[0].split()
    path = tmp_path / "cidx"
    with ContainmentDiskIndex.create(path) as idx:
        idx.add_batch(["host"], long[:1])
        idx.add_batch(["small"], [" ".join(long[1].split()[:120])])
    s = Server(path)
    try:
        status, body = s.call("POST", "/v1/check", {"documents": [{"text": " ".join(words[100:260])}]})
        assert status == 200 and body["results"][0]["matches"][0]["id"] == "host", body
        status, body = s.call("POST", "/v1/check-and-add", _docs([("big", long[1]), ("other", long[2])]))
        assert status == 200, body
        res = body["results"]
        assert not res[0]["duplicate"] and res[0]["matches"] == [] and res[0]["added"]
        assert res[1]["added"]
        status, body = s.call("POST", "/v1/check", {"documents": [{"text": " ".join(long[1].split()[:100])}]})
        assert [m["id"] for m in body["results"][0]["matches"]][:1] in (["big"], ["small"])
        assert body["results"][0]["duplicate"]
        status, body = s.call("GET", "/v1/docs/host")
        from neardup import MinHasher

        shingles = MinHasher(num_perm=128).shingler.features(long[:1]).unique().sizes()
        assert status == 200 and len(body["signature"]) == 128 and body["size"] == int(shingles[0]) > 0
    finally:
        s.stop()
