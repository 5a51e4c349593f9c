"""``neardup serve`` as a deployment: docs pages served from the package (no CDN), the OpenAPI
document's models, refusals and bearer scheme, the access log (text and JSON), Prometheus metrics,
and bulk add and compaction while serving (the admin endpoints, and the CLI's pointer to them) —
each on a real server on 127.0.0.1, with hostile bodies, wrong paths and a SIGKILL mid-bulk-add."""
from __future__ import annotations

import html.parser
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs FastAPI (pip install 'neardup[serve]')")
pytest.importorskip("prometheus_client", reason="the service needs prometheus-client (pip install 'neardup[serve]')")

from prometheus_client.parser import text_string_to_metric_families
from test_service import DOCS, Server, _docs, make_index

from neardup.index.disk import DiskIndex, open_index
from neardup.service.app import RequestError, create_app

NDJSON = "application/x-ndjson"


@pytest.fixture
def index(tmp_path):
    return make_index(tmp_path / "idx")


def _raw(s: Server, method: str, path: str, data: bytes | None = None, headers: dict | None = None):
    """(status, headers, body bytes) of one request."""
    req = urllib.request.Request(s.url + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, res.headers, res.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def _bulk(s: Server, rows, query: str = "", token: str | None = None, ndjson: bool = True):
    body = ("".join(json.dumps(r) + "\n" for r in rows) if ndjson else json.dumps(rows)).encode()
    headers = {"Content-Type": NDJSON if ndjson else "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    status, _, out = _raw(s, "POST", "/v1/admin/add" + query, body, headers)
    return status, json.loads(out)


def _synthetic(n: int, start: int = 0) -> list[dict]:
    """``n`` distinct documents (ids ``s<i>``) of 40 words each."""
    return [{"id": f"s{i}", "text": f"synthetic record {i} " + " ".join(f"w{(i * 31 + j * 7) % 99991}"
                                                                        for j in range(40))}
            for i in range(start, start + n)]


def _metrics(s: Server) -> dict:
    """The scraped samples: (name, sorted label items) → value."""
    status, headers, body = _raw(s, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    return {(x.name, tuple(sorted(x.labels.items()))): x.value
            for fam in text_string_to_metric_families(body.decode()) for x in fam.samples}


class _Refs(html.parser.HTMLParser):
    """Every ``src`` and ``href`` of a page."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]


# -- 1. the docs pages, offline -------------------------------------------------------------------

def test_docs_pages_reference_only_local_assets_that_are_served(index):
    s = Server(index)
    try:
        for page in ("/docs", "/redoc"):
            status, _, body = _raw(s, "GET", page)
            text = body.decode()
            assert status == 200, page
            refs = _Refs()
            refs.feed(text)
            scripted = re.findall(r"""(?:url|spec-url)\s*[:=]\s*['"]([^'"]+)['"]""", text)
            assert refs.urls and scripted == ["/openapi.json"], (page, refs.urls, scripted)
            assert not re.search(r"https?://|//cdn|fonts\.googleapis", text), page
            for url in refs.urls + scripted:
                assert url.startswith("/") and not url.startswith("//"), (page, url)
                got, _, content = _raw(s, "GET", url)
                assert got == 200 and len(content) > 100, (page, url, got)
        status, _, js = _raw(s, "GET", "/docs-static/swagger-ui-bundle.js")
        assert status == 200 and len(js) > 500_000 and b"SwaggerUIBundle" in js
        status, _, body = _raw(s, "GET", "/docs-static/no-such-file.js")
        assert status == 404 and json.loads(body)["error"]["status"] == 404
        status, _, body = _raw(s, "GET", "/docs-static/../../etc/passwd")
        assert status == 404
    finally:
        s.stop()


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(os.environ.get("NEARDUP_SKIP_BROWSER") == "1", reason="NEARDUP_SKIP_BROWSER=1")
def test_docs_pages_render_offline_in_headless_chromium(index, tmp_path):
    """Swagger UI and ReDoc draw every operation with every host but 127.0.0.1 unresolvable (the
    CDN pages were blank offline); the browser asked the service for nothing it did not answer."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh (as root) first, "
                    "or set NEARDUP_SKIP_BROWSER=1 to skip this test")
    s = Server(index)
    try:
        doms = {}
        for page in ("docs", "redoc"):
            run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  "--disable-background-networking", "--disable-component-update",
                                  "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / page}",
                                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                                  "--virtual-time-budget=15000", "--dump-dom", f"{s.url}/{page}"],
                                 capture_output=True, timeout=90, check=False)
            doms[page] = run.stdout.decode("utf-8", errors="replace")
    finally:
        s.stop()
    paths = ("/v1/check", "/v1/check-and-add", "/v1/admin/add", "/v1/admin/compact", "/v1/admin/backup", "/metrics")
    assert all(f'data-path="{p}"' in doms["docs"] for p in paths), doms["docs"][-2000:]
    assert all(p in doms["redoc"] for p in paths) and "Bulk add" in doms["redoc"], doms["redoc"][-2000:]
    asked = re.findall(r'"GET (\S+)" (\d+)', s.stderr)
    assert {p for p, _ in asked} >= {"/docs", "/redoc", "/openapi.json", "/docs-static/swagger-ui-bundle.js",
                                      "/docs-static/redoc.standalone.js"}, asked
    assert all(code in ("200", "304") for p, code in asked if p != "/healthz"), asked


# -- 2. the OpenAPI document ----------------------------------------------------------------------

def _spec(tmp_path, token):
    with DiskIndex.create(tmp_path / f"spec-{token}") as idx:
        app = create_app(idx, token=token)
        try:
            return app.openapi()
        finally:
            app.state.service.close()


def _resolve(spec: dict, node):
    """Every ``$ref`` under ``node`` names a schema the document holds."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref is not None:
            assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in spec["components"]["schemas"], ref
        for v in node.values():
            _resolve(spec, v)
    elif isinstance(node, list):
        for v in node:
            _resolve(spec, v)


def test_openapi_has_models_refusals_and_the_bearer_scheme(tmp_path):
    spec = _spec(tmp_path, "s3cret")
    _resolve(spec, spec)
    schemas = spec["components"]["schemas"]
    assert spec["components"]["securitySchemes"]["bearer"] == {**spec["components"]["securitySchemes"]["bearer"],
                                                                "type": "http", "scheme": "bearer"}
    assert set(schemas["Documents"]["required"]) == {"documents"} and schemas["Documents"]["properties"][
        "documents"]["minItems"] == 1
    assert set(schemas["Error"]["properties"]) == {"error"} and set(schemas["ErrorDetail"]["required"]) >= {"status",
                                                                                                           "message"}
    expected = {  # path, method → (answer model, refusals, a write)
        ("/v1/check", "post"): ("Results", {400, 408, 413, 422, 503}, False),
        ("/v1/add", "post"): ("Results", {400, 401, 408, 409, 413, 422, 503}, True),
        ("/v1/check-and-add", "post"): ("Results", {400, 401, 408, 413, 422, 503}, True),
        ("/v1/admin/add", "post"): ("BulkAdded", {400, 401, 408, 409, 413, 422, 503}, True),
        ("/v1/admin/compact", "post"): ("Compacted", {401, 409}, True),
        ("/v1/admin/backup", "post"): ("BackedUp", {401, 403, 409, 422}, True),
        ("/v1/docs/{doc_id}", "get"): ("Stored", {400, 404, 422}, False),
        ("/v1/docs/{doc_id}", "delete"): ("Deleted", {400, 401, 404, 422}, True),
        ("/v1/docs", "get"): ("Stored", {400, 404, 422}, False),
        ("/v1/docs", "delete"): ("Deleted", {400, 401, 404, 422}, True),
        ("/v1/stats", "get"): ("Stats", set(), False),
        ("/healthz", "get"): ("Health", set(), False),
    }
    for (path, method), (model, refusals, write) in expected.items():
        op = spec["paths"][path][method]
        ok = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{model}"}, (path, method, ok)
        codes = {int(c) for c in op["responses"] if c != "200"}
        assert codes == refusals, (path, method, codes)
        for c in codes:
            assert op["responses"][str(c)]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"} and op["responses"][str(c)]["description"], (path, c)
        assert (op.get("security") == [{"bearer": []}]) is write, (path, method)
        if method == "post" and path not in ("/v1/admin/compact", "/v1/admin/backup"):
            assert op["requestBody"]["required"], path
            assert "$ref" in json.dumps(op["requestBody"]["content"]["application/json"]["schema"]), path
    bulk = spec["paths"]["/v1/admin/add"]["post"]
    assert bulk["requestBody"]["content"][NDJSON]["schema"] == {"$ref": "#/components/schemas/BulkDocument"}
    assert {p["name"] for p in bulk["parameters"]} == {"replace", "id_field", "text_field"}
    assert "/metrics" in spec["paths"]
    open_spec = _spec(tmp_path, None)          # no token: no operation asks for one
    assert not [p for p, ops in open_spec["paths"].items() for op in ops.values() if "security" in op]


# -- 3. the access log ----------------------------------------------------------------------------

def test_access_log_one_line_per_request_text_and_json(index):
    s = Server(index, "--log-format", "json")
    try:
        s.call("POST", "/v1/check", {"documents": [{"text": DOCS[0]["text"]}]})
        s.call("POST", "/v1/add", raw=b"{")
        s.call("GET", "/v1/docs/no%2Fsuch")
        s.call("GET", "/v1/docs?id=a%20b")
    finally:
        s.stop()
    records = [json.loads(x) for x in s.stderr.splitlines()]          # every line is one JSON object
    access = [r for r in records if "status" in r]
    assert {r["path"] for r in access} >= {"/healthz", "/v1/check", "/v1/add", "/v1/docs/no%2Fsuch",
                                           "/v1/docs?id=a%20b"}
    mine = [r for r in access if r["path"] != "/healthz"]
    assert [(r["method"], r["path"], r["status"]) for r in mine] == [
        ("POST", "/v1/check", 200), ("POST", "/v1/add", 400), ("GET", "/v1/docs/no%2Fsuch", 404),
        ("GET", "/v1/docs?id=a%20b", 404)]
    for r in mine:
        assert set(r) == {"time", "client", "method", "path", "status", "bytes", "duration_ms"}
        assert r["client"].startswith("127.0.0.1:") and r["bytes"] > 0 and r["duration_ms"] >= 0
    assert any(r.get("level") == "info" and "serving" in r["message"] for r in records)

    s = Server(index)
    try:
        s.call("GET", "/v1/stats")
    finally:
        s.stop()
    line = next(x for x in s.stderr.splitlines() if '"GET /v1/stats"' in x)
    assert re.fullmatch(r'neardup serve: 127\.0\.0\.1:\d+ "GET /v1/stats" 200 \d+ B \d+\.\d ms', line), line

    s = Server(index, "--no-access-log")
    try:
        s.call("GET", "/v1/stats")
    finally:
        s.stop()
    assert "/v1/stats" not in s.stderr and "serving" in s.stderr


def test_hostile_request_lines_leave_one_json_line_each_and_bounded_series(index):
    """Control characters in a path, an unknown method, a WebDAV one and a 3,000-character query:
    each is one JSON line (nothing raw reaches the log), and the metrics' series stay few."""
    s = Server(index, "--log-format", "json")
    host, port = s.url.removeprefix("http://").split(":")
    try:
        for line in (b"GET /a\x1b[2Jb HTTP/1.1", b"GET /x?q=\x01 HTTP/1.1", b"FOOBAR /healthz HTTP/1.1",
                     b"PROPFIND /healthz HTTP/1.1", b"GET /v1/docs?id=" + b"q" * 3000 + b" HTTP/1.1"):
            with socket.create_connection((host, int(port)), timeout=20) as sock:
                sock.sendall(line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert sock.recv(64).split(b" ")[1] in (b"400", b"404", b"405"), line[:40]
        series = [k for k in _metrics(s) if k[0] == "neardup_http_requests_total"]
    finally:
        s.stop()
    lines = s.stderr.splitlines()
    records = [json.loads(x) for x in lines]
    assert not any("\x1b" in x or "\x01" in x for x in lines)
    long = [r for r in records if r.get("path", "").startswith("/v1/docs?id=")]
    assert len(long) == 1 and len(long[0]["path"]) <= 201 and long[0]["status"] == 404
    assert [r["method"] for r in records if "method" in r and r["path"] == "/healthz"][-1:] == ["PROPFIND"]
    assert len(series) <= 4, series


def test_log_format_is_one_of_its_choices(index):
    proc = subprocess.run([sys.executable, "-m", "neardup", "serve", "--index", str(index), "--log-format", "xml"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "'xml' is not one of 'text', 'json'" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- 4. metrics -----------------------------------------------------------------------------------

def test_metrics_count_requests_documents_and_compactions(index):
    s = Server(index)
    try:
        assert s.call("POST", "/v1/check", {"documents": [{"text": d["text"]} for d in DOCS[:3]]})[0] == 200
        assert s.call("POST", "/v1/add", _docs([("m1", "a first new text"), ("m2", "a second new text")]))[0] == 200
        assert s.call("POST", "/v1/check-and-add", _docs([("m3", DOCS[0]["text"]), ("m4", "unlike any other")]))[0] \
            == 200
        assert s.call("DELETE", "/v1/docs/m1")[0] == 200
        assert s.call("POST", "/v1/check", raw=b"[")[0] == 400
        assert _bulk(s, _synthetic(5))[0] == 200
        assert s.call("POST", "/v1/admin/compact")[0] == 200
        m = _metrics(s)
    finally:
        s.stop()

    def req(endpoint, method, status):
        return m[("neardup_http_requests_total", (("endpoint", endpoint), ("method", method), ("status", status)))]

    assert req("/v1/check", "POST", "200") == 1 and req("/v1/check", "POST", "400") == 1
    assert req("/v1/docs/{doc_id}", "DELETE", "200") == 1 and req("/healthz", "GET", "200") >= 1
    assert req("/v1/admin/compact", "POST", "200") == 1
    assert m[("neardup_http_request_duration_seconds_count", (("endpoint", "/v1/check"), ("method", "POST")))] == 2
    assert m[("neardup_documents_checked_total", ())] == 3 + 2
    assert m[("neardup_documents_added_total", ())] == 2 + 1 + 5
    assert m[("neardup_documents_removed_total", ())] == 1
    assert m[("neardup_compactions_total", ())] == 1
    assert m[("neardup_compaction_duration_seconds_count", ())] == 1
    assert m[("neardup_index_documents", (("kind", "minhash"),))] == 200 + 2 + 1 - 1 + 5


# -- 5. bulk add and compaction while serving -----------------------------------------------------

def test_bulk_add_then_query(index, tmp_path):
    (tmp_path / "token").write_text("tok\n")
    s = Server(index, "--token-file", tmp_path / "token")
    try:
        rows = _synthetic(300)
        assert _bulk(s, rows)[0] == 401                                      # a write: the token
        assert _bulk(s, rows, token="tok") == (200, {"added": 300, "documents": 500})
        status, res = s.call("POST", "/v1/check", {"documents": [{"text": rows[123]["text"]}]})
        assert status == 200 and res["results"][0]["matches"][0] == {"id": "s123", "similarity": 1.0}
        arr = [{"id": d["id"] + "-copy", "text": d["text"]} for d in DOCS[300:310]]       # a JSON array
        assert _bulk(s, arr, token="tok", ndjson=False) == (200, {"added": 10, "documents": 510})
        status, res = _bulk(s, rows[:2] + _synthetic(1, 900), token="tok")                # ids taken
        assert status == 409 and "s0" in res["error"]["message"] and "replace=true" in res["error"]["message"]
        assert s.call("GET", "/v1/docs/s900")[0] == 404                                    # nothing added
        changed = [{"id": "s0", "text": "an entirely different text now"}]
        assert _bulk(s, changed, "?replace=true", token="tok") == (200, {"added": 1, "documents": 510})
        status, res = s.call("POST", "/v1/check", {"documents": [{"text": "an entirely different text now"}]})
        assert res["results"][0]["matches"][0]["id"] == "s0"
        fields = [{"url": "u/1", "body": "a page fetched by the crawler"}]
        assert _bulk(s, fields, "?id_field=url&text_field=body", token="tok")[0] == 200
        assert s.call("GET", "/v1/docs/u/1")[0] == 200
    finally:
        s.stop()
    with open_index(index, readonly=True) as idx:
        assert len(idx) == 511 and "s299" in idx and "u/1" in idx


def test_compact_while_serving_drops_deleted_documents_and_queries_still_answer(index):
    s = Server(index)
    try:
        for lo in (0, 4100):                         # two batches of over 4,096: two segments
            assert _bulk(s, _synthetic(4100, lo))[0] == 200
        gone = [d["id"] for d in DOCS[:5]] + ["s7", "s4200"]
        for k in gone:
            assert s.call("DELETE", f"/v1/docs/{k}")[0] == 200
        before = s.call("GET", "/v1/stats")[1]
        assert before["segments"] >= 2 and before["documents"] == 200 + 8200 - 7
        answers: list = []

        def query():                                 # queries meanwhile are answered (after it, or before)
            for d in DOCS[10:20]:
                answers.append(s.call("POST", "/v1/check", {"documents": [{"text": d["text"]}]}))

        t = threading.Thread(target=query)
        t.start()
        status, out = s.call("POST", "/v1/admin/compact")
        t.join(120)
        assert status == 200 and out["segments_after"] == 1 and out["documents"] == before["documents"]
        assert out["segments_before"] == before["segments"] and out["seconds"] >= 0
        assert len(answers) == 10 and all(st == 200 and r["results"][0]["duplicate"] for st, r in answers)
        for k in gone:
            assert s.call("GET", f"/v1/docs/{k}")[0] == 404
        status, res = s.call("POST", "/v1/check", {"documents": [{"text": DOCS[0]["text"]}, {"text": DOCS[30]["text"]}]})
        assert DOCS[0]["id"] not in [m["id"] for m in res["results"][0]["matches"]]
        assert {"id": DOCS[30]["id"], "similarity": 1.0} in res["results"][1]["matches"]
        assert s.call("POST", "/v1/check-and-add", _docs([("after", "written after the compaction")]))[1][
            "results"][0]["added"]
        assert s.call("GET", "/v1/stats")[1]["documents"] == before["documents"] + 1
    finally:
        s.stop()
    with DiskIndex.open(index, readonly=True) as idx:
        assert len(idx) == before["documents"] + 1 and not any(k in idx for k in gone) and "after" in idx


def test_a_second_compaction_while_one_runs_is_refused(tmp_path):
    with DiskIndex.create(tmp_path / "c") as idx:
        app = create_app(idx)
        svc = app.state.service
        try:
            svc._compacting.acquire()
            with pytest.raises(RequestError) as err:
                svc.compact()
            assert err.value.status == 409 and "already running" in err.value.message
            svc._compacting.release()
            assert svc.compact()["segments_after"] is not None
        finally:
            svc.close()


def test_cli_writers_while_serving_point_at_the_admin_endpoints(index, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "cli-1", "text": "from the command line"}) + "\n")
    s = Server(index)
    try:
        assert f"neardup serve at {s.url}" in (index / "LOCK").read_text()
        procs = [subprocess.Popen([sys.executable, "-m", "neardup", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for args in (("index", "add", str(index), str(rows), "--id-field", "id"),
                              ("index", "compact", str(index)), ("index", "backup", str(index), str(tmp_path / "bk")),
                              ("index", "remove", str(index), "x"),
                              ("dedup", str(rows), "--id-field", "id", "-o", str(tmp_path / "out"), "--index",
                               str(index), "-q"))]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (_, err) in zip(procs, outs):
            lines = err.strip().splitlines()
            assert p.returncode == 1 and len(lines) == 1 and "Traceback" not in err, err
            assert all(f"POST {s.url}/v1/admin/{x}" in err for x in ("add", "compact", "backup")), err
            assert f"DELETE {s.url}/v1/docs/ID" in err, err
        assert s.call("GET", "/v1/docs/cli-1")[0] == 404 and not (tmp_path / "bk").exists()
    finally:
        s.stop()


def test_backup_while_serving_is_the_index_at_that_moment(index, tmp_path):
    (tmp_path / "token").write_text("tok\n")
    backups = tmp_path / "backups"
    backups.mkdir()
    s = Server(index, "--token-file", tmp_path / "token", "--backup-dir", backups)
    auth = {"Authorization": "Bearer tok"}
    try:
        assert _bulk(s, _synthetic(4200), token="tok")[0] == 200                  # a segment
        assert s.call("POST", "/v1/add", _docs([("logged", "an online add, in the log")]), token="tok")[0] == 200
        assert s.call("DELETE", f"/v1/docs/{DOCS[0]['id']}", token="tok")[0] == 200
        assert _raw(s, "POST", "/v1/admin/backup")[0] == 401
        status, _, body = _raw(s, "POST", "/v1/admin/backup?name=first", headers=auth)
        out = json.loads(body)
        assert status == 200 and out["path"] == str(backups / "first") and out["documents"] == 200 + 4200 + 1 - 1
        assert out["linked"] >= 7 and out["copied"] >= 2 and out["bytes"] > 0
        assert s.call("POST", "/v1/add", _docs([("later", "added after the backup")]), token="tok")[0] == 200
        status, _, body = _raw(s, "POST", "/v1/admin/backup?name=first", headers=auth)
        assert status == 409 and "already exists" in json.loads(body)["error"]["message"]
        for bad in ("..", "../x", ".hidden", "a/b", "-x", "x" * 129, ""):
            status, _, body = _raw(s, "POST", "/v1/admin/backup?name=" + urllib.parse.quote(bad), headers=auth)
            assert status == 422 and "name must be" in json.loads(body)["error"]["message"], bad
        status, _, body = _raw(s, "POST", "/v1/admin/backup", headers=auth)           # the default name
        assert status == 200 and Path(json.loads(body)["path"]).name.startswith(index.name + "-")
        assert _metrics(s)[("neardup_backups_total", ())] == 2
        assert sorted(p.name for p in backups.iterdir()) == ["first", Path(json.loads(body)["path"]).name]
    finally:
        s.stop()
    with open_index(backups / "first", readonly=True) as bk:
        assert len(bk) == out["documents"] and "s4199" in bk and "logged" in bk
        assert DOCS[0]["id"] not in bk and "later" not in bk
    verify = subprocess.run([sys.executable, "-m", "neardup", "index", "verify", str(backups / "first"), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout + verify.stderr
    with open_index(index, readonly=True) as idx:                                      # the index goes on
        assert "later" in idx and len(idx) == out["documents"] + 1


def test_backups_are_off_without_a_backup_dir_and_a_vanished_one_is_one_line(index, tmp_path):
    s = Server(index)
    try:
        status, _, body = _raw(s, "POST", "/v1/admin/backup")
        assert status == 403 and "--backup-dir" in json.loads(body)["error"]["message"]
    finally:
        s.stop()
    gone = tmp_path / "gone"
    gone.mkdir()
    s = Server(index, "--backup-dir", gone)
    try:
        gone.rmdir()
        status, _, body = _raw(s, "POST", "/v1/admin/backup?name=b")
        message = json.loads(body)["error"]["message"]
        assert status == 500 and "cannot create the backup" in message and "\n" not in message
        assert s.call("GET", "/v1/stats")[1]["documents"] == 200                      # still serving
    finally:
        s.stop()
    assert "Traceback" not in s.stderr
    proc = subprocess.run([sys.executable, "-m", "neardup", "serve", "--index", str(index), "--backup-dir",
                           str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--backup-dir" in proc.stderr and "does not exist" in proc.stderr


def test_index_backup_on_the_command_line(index, tmp_path):
    """``neardup index backup`` with no service running: a copy that verifies and holds what the index
    holds; a DEST that exists, or under a file, is one line and exit 1, and leaves nothing behind."""
    def backup(dest):
        return subprocess.run([sys.executable, "-m", "neardup", "index", "backup", str(index), str(dest)],
                              capture_output=True, text=True, timeout=120)

    with DiskIndex.open(index) as idx:
        idx.add_batch([f"b{i}" for i in range(4200)], [f"bulk document number {i} of the backup test"
                                                        for i in range(4200)])
        idx.remove(DOCS[1]["id"])
    done = backup(tmp_path / "bk")
    assert done.returncode == 0 and done.stdout.startswith("backed up 4399 documents to "), done.stderr
    with open_index(tmp_path / "bk", readonly=True) as bk, open_index(index, readonly=True) as idx:
        assert len(bk) == len(idx) == 4399 and "b4199" in bk and DOCS[1]["id"] not in bk and DOCS[2]["id"] in bk
    verify = subprocess.run([sys.executable, "-m", "neardup", "index", "verify", str(tmp_path / "bk")],
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout
    (tmp_path / "file").write_text("x")
    for dest, words in ((tmp_path / "bk", "already exists"), (tmp_path / "file" / "bk", "cannot create the backup")):
        failed = backup(dest)
        assert failed.returncode == 1 and words in failed.stderr and len(failed.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bk", "file", "idx"]


# -- hostile bulk adds ----------------------------------------------------------------------------

def test_hostile_bulk_adds_get_4xx_and_change_nothing(index):
    s = Server(index, "--max-batch", 5, "--max-body-bytes", 20000)
    nd = {"Content-Type": NDJSON}
    cases = [
        (b'{"id": "a", "text": "t"}\n{"id": "b", "text": \n', nd, 400, "line 2 is not valid JSON"),
        (b'{"id": "a", "text": "t"}\n[1, 2]\n', nd, 422, "line 2 must be an object"),
        (b'\n{"id": "a", "text": "t"}\n\n{"text": "t"}\n', nd, 422, "line 4: id is missing"),
        (b'{"id": "a", "text": 5}\n', nd, 422, "line 1: text must be a string"),
        (b'{"id": 1.5, "text": "t"}\n', nd, 422, "line 1: id"),
        (b'{"id": "a", "text": "t"}\n{"id": "a", "text": "u"}\n', nd, 422, "twice"),
        (b"\n\n", nd, 422, "no document"),
        (b"".join(b'{"id": "k%d", "text": "t"}\n' % i for i in range(6)), nd, 413, "more than 5"),
        (b'{"id": "a", "text": "' + b"x" * 30000 + b'"}\n', nd, 413, "at most 20000"),
        (b'{"id": "a", "text": "\xff"}\n', nd, 400, "UTF-8"),
        (b"[" * 100 + b"]" * 100, nd, 400, "deep"),
        (b'{"id": "a", "text": "t"}\n{"id": "b", "text": "u"}\n', {}, 400, "application/x-ndjson"),
        (b'{"id": "a", "text": "t"}', {"Content-Type": "application/json"}, 422, "must be an array"),
        (b"[]", {"Content-Type": "application/json"}, 422, "empty"),
        (b'[{"id": "a"}]', {"Content-Type": "application/json"}, 422, "[0].text must be a string"),
    ]
    try:
        for body, headers, status, words in cases:
            got, _, out = _raw(s, "POST", "/v1/admin/add", body, headers)
            message = json.loads(out)["error"]["message"]
            assert got == status and words in message, (body[:50], got, message)
        got, _, out = _raw(s, "POST", "/v1/admin/add?replace=maybe", b'{"id": "a", "text": "t"}', nd)
        assert got == 422 and "replace" in json.loads(out)["error"]["message"]
        assert _raw(s, "GET", "/v1/admin/compact")[0] == 405
        assert _raw(s, "POST", "/v1/admin/no-such")[0] == 404
        assert _raw(s, "POST", "/v1/admin/compact/x")[0] == 404
        assert s.call("GET", "/v1/stats")[1]["documents"] == 200
    finally:
        s.stop()
    assert "Traceback" not in s.stderr


def test_sigkill_during_a_bulk_add_keeps_it_all_or_nothing(index):
    """A bulk add of 6,000 documents (one segment) killed at once: after a restart the index holds all
    of it or none of it, and serves."""
    s = Server(index)
    rows = _synthetic(6000)
    done: list = []

    def send():
        try:
            done.append(_bulk(s, rows))
        except OSError:
            done.append(None)

    t = threading.Thread(target=send)
    t.start()
    t.join(0.3)
    s.stop(signal.SIGKILL)
    t.join(60)
    s2 = Server(index)
    try:
        n = s2.call("GET", "/v1/stats")[1]["documents"]
        assert n in (200, 6200), n
        if done and done[0] is not None and done[0][0] == 200:        # acknowledged: it is there
            assert n == 6200
        status, res = s2.call("POST", "/v1/check", {"documents": [{"text": DOCS[5]["text"]}]})
        assert status == 200 and {"id": DOCS[5]["id"], "similarity": 1.0} in res["results"][0]["matches"]
        assert (s2.call("GET", "/v1/docs/s5999")[0] == 200) == (n == 6200)
    finally:
        s2.stop()
