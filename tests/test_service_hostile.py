"""``neardup serve`` against hostile clients, on 127.0.0.1 only, each test a bounded number of
requests with time limits: bodies nested 200 000 deep or made of millions of tiny values, more
bodies at once than the memory bound, half-sent headers and bodies, clients that disconnect
mid-request, a non-loopback address without a token, and ids that only a percent-encoded path
or a query can name."""
from __future__ import annotations

import asyncio
import http.client
import json
import random
import socket
import subprocess
import sys
import time
import tracemalloc
import urllib.parse

import pytest

pytest.importorskip("fastapi", reason="the service needs FastAPI (pip install 'neardup[serve]')")
pytest.importorskip("uvicorn", reason="the service needs uvicorn (pip install 'neardup[serve]')")

from test_service import Server, _docs, make_index

from neardup.cli.serve import exposure_warning
from neardup.index.disk import DiskIndex
from neardup.service.app import MAX_DEPTH, IndexService, RequestError, _BodyBudget, json_shape, parse_documents


@pytest.fixture
def index(tmp_path):
    return make_index(tmp_path / "idx")


def _connect(s: Server, timeout: float = 20) -> socket.socket:
    host, port = urllib.parse.urlsplit(s.url).hostname, urllib.parse.urlsplit(s.url).port
    return socket.create_connection((host, port), timeout=timeout)


def _until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    start = time.monotonic()
    sock.settimeout(limit)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open over {limit} s; sent {got[:200]!r}") from None
    return got, time.monotonic() - start


def _status_and_error(reply: bytes) -> tuple[int, dict]:
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _post_head(path: str, length: int) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


# -- 1. nesting ---------------------------------------------------------------------------------

def _depth_and_values(obj) -> tuple[int, int, int]:
    """(nesting, values with keys, empty arrays/objects) of a parsed JSON value."""
    if isinstance(obj, list):
        parts = [_depth_and_values(v) for v in obj]
        return (1 + max((p[0] for p in parts), default=0), 1 + sum(p[1] for p in parts),
                (not obj) + sum(p[2] for p in parts))
    if isinstance(obj, dict):
        parts = [_depth_and_values(v) for v in obj.values()]
        return (1 + max((p[0] for p in parts), default=0), 1 + len(obj) + sum(p[1] for p in parts),
                (not obj) + sum(p[2] for p in parts))
    return 0, 1, 0


def _random_json(rng: random.Random, depth: int = 0):
    pick = rng.random()
    if depth < 6 and pick < 0.3:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 6 and pick < 0.55:
        return {_random_text(rng): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))}
    if pick < 0.9:
        return _random_text(rng)
    return rng.choice([0, -17, 3.5, True, None])


def _random_text(rng: random.Random) -> str:
    """A string rich in what fools a scanner: quotes, runs of backslashes, brackets, commas."""
    parts = ['"', "\\", "\\" * rng.randrange(1, 40), "[", "]", "{", "}", ",", ":", "a", "é", "\n", "😀"]
    return "".join(rng.choice(parts) for _ in range(rng.randrange(8)))


def test_json_shape_is_the_parsers_on_strings_that_look_like_structure():
    """The scan's nesting and value count are those of the parsed value (values: + 1 per empty
    container), for any chunk size (escapes and strings across chunk boundaries)."""
    rng = random.Random(5)
    for _ in range(300):
        obj = _random_json(rng)
        text = json.dumps(obj, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode()
        depth, values, empty = _depth_and_values(obj)
        for chunk in (1, 2, 3, 7, 64, 1 << 19):
            assert json_shape(text, chunk) == (depth, values + empty), (text, chunk)
    long_run = json.dumps({"documents": [{"text": "\\" * 5001 + '"' + "[" * 100}]}).encode()
    assert json_shape(long_run, 4096) == json_shape(long_run) == (3, 6)


def test_deep_bodies_get_a_json_400_not_a_500(index):
    """200 000-deep bodies (before: a plain-text 500 and a RecursionError logged)."""
    s = Server(index)
    try:
        deep = 200_000
        for raw in (b"[" * deep + b"]" * deep, b'{"documents":' + b"[" * deep, b'{"documents": [{"text": "t", "x": '
                    + b'{"a":' * deep + b"1" + b"}" * deep + b"}]}"):
            for path in ("/v1/check", "/v1/add"):
                status, res = s.call("POST", path, raw=raw)
                assert status == 400 and res["error"]["status"] == 400, (path, raw[:40], status, res)
                assert f"at most {MAX_DEPTH}" in res["error"]["message"]
        status, res = s.call("POST", "/v1/check", raw=b'{"documents": [{"text": "' + b"[" * deep + b'"}]}')
        assert status == 200, res                              # brackets inside a string are text
        assert s.call("GET", "/v1/stats")[1]["documents"] == 200
    finally:
        s.stop()                                               # asserts: no traceback on stderr


def test_nesting_at_the_bound_is_parsed():
    def body(depth: int) -> bytes:     # {"documents": [{…, "meta": [[…]]}]}: depth 3 + the meta's
        meta = "[" * (depth - 3) + "]" * (depth - 3)
        return ('{"documents": [{"id": "n", "text": "t", "meta": ' + meta + "}]}").encode()

    assert parse_documents(body(MAX_DEPTH), True, 10) == (["n"], ["t"])
    with pytest.raises(RequestError) as err:
        parse_documents(body(MAX_DEPTH + 1), True, 10)
    assert err.value.status == 400 and f"{MAX_DEPTH + 1} deep" in err.value.message


# -- 2. memory ----------------------------------------------------------------------------------

def test_millions_of_tiny_values_are_refused_before_parsing():
    """8 MB of ``{}`` (before: parsed, ~150 MB): 413 naming the bound, with little memory."""
    n = 2_000_000
    for body in (b'{"documents": [' + b"{}, " * n + b"{}]}", b'{"documents": [' + b'"ab",' * n + b'"ab"]}'):
        tracemalloc.start()
        try:
            with pytest.raises(RequestError) as err:
                parse_documents(body, False, 10000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 24 << 20, f"{peak / 2**20:.0f} MB to refuse an {len(body) >> 20} MB body"
        assert err.value.status == 413 and "10000 documents" in err.value.message, err.value.message
    docs = {"documents": [{"id": i, "text": "t", "tags": list(range(20))} for i in range(10)]}
    assert parse_documents(json.dumps(docs).encode(), True, 10)[0] == list(range(10))


def test_invalid_ids_name_the_document():
    for k, words in ((2**64, "64 bits"), (1.5, "float"), (True, "bool"), ([1], "list"), ("x" * 70000, "bytes")):
        with pytest.raises(RequestError) as err:
            parse_documents(json.dumps({"documents": [{"id": "a", "text": "t"}, {"id": k, "text": "t"}]}).encode(),
                            True, 10)
        assert err.value.status == 422 and err.value.message.startswith("documents[1].id: "), err.value.message
        assert words in err.value.message


def test_body_budget_waits_in_order_then_answers_503():
    async def main():
        budget = _BodyBudget(100, max_waiting=2)
        await budget.acquire(60, 1)
        order = []

        async def want(n, name, timeout=5):
            await budget.acquire(n, timeout)
            order.append(name)

        big = asyncio.ensure_future(want(80, "big"))
        await asyncio.sleep(0)
        small = asyncio.ensure_future(want(10, "small"))           # fits, but waits behind the big one
        await asyncio.sleep(0.05)
        with pytest.raises(RequestError) as err:
            await budget.acquire(1, 1)                             # two already wait: no room in the queue
        assert err.value.status == 503 and err.value.headers == {"Retry-After": "1"}
        assert order == []
        budget.release(60)
        await asyncio.gather(big, small)
        assert order == ["big", "small"] and budget.free == 10
        with pytest.raises(RequestError) as err:
            await budget.acquire(50, 0.05)                         # no room within its time: 503
        assert err.value.status == 503 and budget.free == 10 and not budget._waiting
        budget.release(90)
        assert budget.free == budget.limit == 100

    asyncio.run(main())


def test_bodies_held_at_once_stay_within_max_inflight_bytes(index):
    """Two stalled 1000-byte bodies fill a 2000-byte budget: a third request waits (not answered)
    until their body timeout frees the room, then is served."""
    s = Server(index, "--max-body-bytes", 1000, "--max-inflight-bytes", 2000, "--body-timeout", 3)
    stalled = []
    try:
        for _ in range(2):
            sock = _connect(s)
            sock.sendall(_post_head("/v1/check", 1000) + b'{"documents": [')
            stalled.append(sock)
        time.sleep(0.5)
        third = _connect(s)
        body = json.dumps({"documents": [{"text": "a third text"}]}).encode()
        third.sendall(_post_head("/v1/check", len(body)) + body)
        third.settimeout(1.0)
        with pytest.raises(TimeoutError):
            third.recv(1)                                          # waiting for room
        for sock in stalled:
            status, res = _status_and_error(_until_closed(sock, 15)[0])
            assert status == 408 and "--body-timeout" in res["error"]["message"]
        third.settimeout(15)
        reply = third.recv(65536)
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        third.close()
    finally:
        for sock in stalled:
            sock.close()
        s.stop()


# -- 3. time ------------------------------------------------------------------------------------

def test_half_sent_requests_time_out(index):
    """Half-sent headers (before: held forever), a silent connection, a stalled body, a body left
    unread and the headers of a second request on a kept-alive connection: each closed within 3x
    its timeout, with a 408 where one can be answered, and one log line."""
    s = Server(index, "--header-timeout", 1, "--body-timeout", 1)
    try:
        headers = _connect(s)
        headers.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n")
        silent = _connect(s)
        body = _connect(s)
        body.sendall(_post_head("/v1/check", 100) + b'{"documents": [')
        unread = _connect(s)
        unread.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        reply, took = _until_closed(headers, 3)
        status, res = _status_and_error(reply)
        assert status == 408 and "--header-timeout" in res["error"]["message"]
        assert _until_closed(silent, 3)[0] == b""
        status, res = _status_and_error(_until_closed(body, 3)[0])
        assert status == 408 and "--body-timeout" in res["error"]["message"]
        reply, took = _until_closed(unread, 6)                     # answered at once, cut off after 1 + 1 s
        assert reply.startswith(b"HTTP/1.1 200")

        url = urllib.parse.urlsplit(s.url)
        again = http.client.HTTPConnection(url.hostname, url.port, timeout=20)
        again.request("GET", "/healthz")
        assert again.getresponse().read() == b'{"status":"ok"}'
        again.sock.sendall(b"GET /healthz HTTP/1.1\r\n")           # the next request, half-sent
        status, _ = _status_and_error(_until_closed(again.sock, 3)[0])
        assert status == 408
        assert s.call("GET", "/healthz")[0] == 200
    finally:
        s.stop()
    lines = s.stderr.splitlines()
    assert sum("sent no complete request headers within 1 s" in x for x in lines) == 2, s.stderr
    assert sum("sent no complete body within 1 s for POST /v1/check" in x for x in lines) == 1, s.stderr
    assert sum("sent no complete body within 1 s for GET /v1/stats" in x for x in lines) == 1, s.stderr


# -- 4. disconnects -----------------------------------------------------------------------------

def test_clients_that_disconnect_are_one_line_each(index):
    """Mid-body, while the server works on the request (here: waits for room for its body) and
    mid-headers: one line each on stderr, no traceback (before: a traceback per disconnect)."""
    s = Server(index, "--max-body-bytes", 1000, "--max-inflight-bytes", 1000)
    try:
        mid_body = _connect(s)
        mid_body.sendall(_post_head("/v1/check", 1000) + b'{"documents": [')   # holds all the room
        time.sleep(0.3)
        body = json.dumps({"documents": [{"text": "a text that waits for room"}]}).encode()
        waiting = _connect(s)
        waiting.sendall(_post_head("/v1/check", len(body)) + body)
        time.sleep(0.3)
        waiting.close()
        mid_body.close()
        mid_headers = _connect(s)
        mid_headers.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.3)
        mid_headers.close()
        time.sleep(0.5)
        assert s.call("POST", "/v1/check", {"documents": [{"text": "still serving"}]})[0] == 200
    finally:
        s.stop()                                                   # asserts: no traceback
    lines = s.stderr.splitlines()
    assert sum(x.startswith("neardup serve: client 127.0.0.1:") and x.endswith("disconnected during POST /v1/check")
               for x in lines) == 2, s.stderr
    assert sum(x.endswith("disconnected during a request's headers") for x in lines) == 1, s.stderr


# -- 5. an open address -------------------------------------------------------------------------

def test_non_loopback_address_without_token_warns(index, tmp_path):
    for host in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"):
        assert exposure_warning(host, False, 8000) is None, host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org"):
        assert "without --token-file" in exposure_warning(host, False, 8000), host
        assert exposure_warning(host, True, 8000) is None
    (tmp_path / "token").write_text("s3cret\n")
    # 192.0.2.1 (TEST-NET-1) is nobody's address here: the bind fails after the warning, nothing listens
    for extra, warned in (((), True), (("--token-file", tmp_path / "token"), False)):
        proc = subprocess.run([sys.executable, "-m", "neardup", "serve", "--index", str(index), "--host", "192.0.2.1",
                               "--port", "0", *map(str, extra)], capture_output=True, text=True, timeout=60)
        lines = [x for x in proc.stderr.splitlines() if "warning" in x]
        assert lines == ([
            "neardup serve: warning: listening on 192.0.2.1 without --token-file: anyone who can reach port 0 can add "
            "and delete documents"] if warned else []), proc.stderr
        assert proc.returncode == 1 and "cannot listen on 192.0.2.1" in proc.stderr


# -- 6. ids -------------------------------------------------------------------------------------

def test_every_id_that_can_be_added_can_be_fetched_and_deleted(index):
    """Ids with ``/``, the empty id, ``?#&+%``, non-ASCII, a lone surrogate, and "7" beside 7 (before:
    404 for any id with ``/`` and no way to name the empty one)."""
    ids = ["a/b", "", "/lead", "trail/", "a b+c", "q?x#y&id=z", "100%", "ü/ß", "..", "\ud800", "7", 7, 8]
    s = Server(index)
    try:
        status, res = s.call("POST", "/v1/add", _docs((k, f"document number {i} of the id test") for i, k in
                                                      enumerate(ids)))
        assert status == 200, res

        def enc(k) -> str:
            return urllib.parse.quote(str(k).encode("utf-8", "surrogatepass"), safe="")

        for k in ids:
            if k == 7:                                     # the text "7" names the string id while it exists
                assert s.call("GET", "/v1/docs/7")[1]["id"] == "7"
                continue
            for path in (f"/v1/docs/{enc(k)}", f"/v1/docs?id={enc(k)}"):
                status, res = s.call("GET", path)
                assert status == 200 and res["id"] == k, (k, path, status, res)
        assert s.call("GET", "/v1/docs/a/b")[1]["id"] == "a/b"     # a slash as such
        assert s.call("GET", "/v1/docs?id=a+b%2Bc")[1]["id"] == "a b+c"
        for i, k in enumerate(ids):
            path = f"/v1/docs/{enc(k)}" if i % 2 else f"/v1/docs?id={enc(k)}"
            assert s.call("DELETE", path) == (200, {"id": k, "deleted": True}), (k, path)
            if k == "7":                                       # now "7" names the integer id
                assert s.call("GET", path)[1]["id"] == 7
            else:
                assert s.call("GET", path)[0] == 404, (k, path)
        assert s.call("GET", "/v1/docs/7")[0] == 404 and s.call("GET", "/v1/stats")[1]["documents"] == 200

        for path, status, words in (("/v1/docs/%FF", 400, "the id in the path is not UTF-8"),
                                    ("/v1/docs?id=a&id=b", 400, "give the id once"),
                                    ("/v1/docs", 422, "query.id"),
                                    ("/v1/docs/%C2%B2", 404, "'²'")):
            got, res = s.call("GET", path)
            assert got == status and words in res["error"]["message"], (path, got, res)
    finally:
        s.stop()
    with DiskIndex.open(index) as idx:                    # (a URL that long is refused by uvicorn itself)
        svc = IndexService(idx)
        try:
            with pytest.raises(RequestError) as err:
                svc._key("x" * 70000)
            assert err.value.status == 422 and err.value.message.startswith("id: an id of more than")
        finally:
            svc.close()
