"""report.html: structure and escaping of the rendered page, and a real headless-browser render.

The browser test needs Debian's chromium at /usr/bin/chromium (``scripts/ensure_chromium.sh``
installs it). It fails when chromium is missing unless NEARDUP_SKIP_BROWSER=1.
"""
from __future__ import annotations

import html
import json
import os
import re
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from neardup.report import render_html, write_html
from neardup.report.html import diff_html

CHROMIUM = "/usr/bin/chromium"
XSS = "<script>alert(1)</script>"


def s_curve(b: int, r: int) -> list[list[float]]:
    return [[i / 100, 1 - (1 - (i / 100) ** r) ** b] for i in range(101)]


def make_report(**overrides) -> dict:
    kept_text = ("The quick brown fox jumps over the lazy dog near the river bank. " * 3
                 + f"Contact us at the office {XSS} for details.")
    removed_text = ("The quick brown fox leaped over the lazy dog near the river bank. " * 3
                    + "Contact us at our office for more details & prices.")
    rng = np.random.default_rng(7)
    sims = np.clip(rng.normal(0.9, 0.05, 290), 0.7, 1.0)
    counts, edges = np.histogram(sims, bins=20, range=(0.0, 1.0))
    report = {
        "neardup_version": "0.1.0",
        "command": "neardup dedup corpus/*.jsonl -o out --threshold 0.8",
        "inputs": ["corpus/a.jsonl", "corpus/<b>.jsonl"],
        "created": "2026-12-02T18:00:00Z",
        "parameters": {"method": "minhash", "threshold": 0.8, "num_perm": 128, "scheme": "oph", "seed": 1,
                       "tokenizer": "word", "ngram": 5, "b": 16, "r": 6, "lsh_mode": "recall≥0.99",
                       "keep": "first"},
        "counts": {"input_rows": 1000, "documents": 990, "kept": 700, "removed": 290, "duplicate_rate": 0.29,
                   "clusters": 120, "empty_documents": 3, "skipped_records": 60, "invalid_utf8_replaced": 2},
        "skipped": [{"file": "corpus/a.jsonl", "line": 17 + i, "reason": f"malformed JSON {XSS}"}
                    for i in range(60)],
        "timings": {"read_sign": 1.2, "candidates": 0.3, "verify": 0.05, "clusters": 0.01, "write": 0.4,
                    "total": 2.0},
        "cluster_sizes": {"2": 80, "3": 25, "4": 9, "5": 3, "6": 1, "17": 1, "2406": 1},
        "similarity_histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
        "lsh": {"b": 16, "r": 6, "threshold": 0.8, "curve": s_curve(16, 6)},
        "samples": [
            {"kept_id": "d1", "removed_id": "d7<i>", "similarity": 0.91, "kept_text": kept_text,
             "removed_text": removed_text},
            {"kept_id": "d2", "removed_id": "d9", "similarity": 0.86,
             "kept_text": "Terms and conditions apply. " * 200,
             "removed_text": "Terms and conditions may apply. " * 200},
        ],
    }
    # unbroken long strings must wrap instead of widening the page
    long = "x" * 400
    report["parameters"]["text_field"] = long
    report["skipped"][0] = {"file": f"corpus/{long}.jsonl", "line": 17, "reason": f"bad field {long}"}
    report["samples"][0]["removed_text"] += " " + long
    report.update(overrides)
    return report


def section(page: str, sid: str) -> str:
    m = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert m, f"section {sid} missing"
    return m.group(1)


# ------------------------------------------------------------------ structure
def test_sections_charts_and_escaping():
    page = render_html(make_report())
    assert page.startswith("<!DOCTYPE html>")
    for sid in ("summary", "parameters", "counts", "cluster-sizes", "similarity", "lsh", "timings",
                "skipped", "samples"):
        section(page, sid)
    for chart in ("chart-cluster-sizes", "chart-similarity", "chart-lsh", "chart-timings"):
        assert page.count(f'id="{chart}"') == 1
    assert page.count("<svg") == 4 and "<rect" in page and "<polyline" in page
    # nothing a document, file name or id contains may become markup
    assert "<script" not in page.lower()
    assert html.escape(XSS) in page
    assert "corpus/&lt;b&gt;.jsonl" in page and "d7&lt;i&gt;" in page
    assert "&amp; prices" in page
    # self-contained: no external resources
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page) and "@import" not in page and "url(" not in page


def test_headline_and_tables():
    page = render_html(make_report())
    head = section(page, "summary")
    assert ">990<" in head and ">700<" in head and ">290<" in head and "29.0%" in head and "2.0 s" in head
    params = section(page, "parameters")
    assert "--num-perm" in params and "recall≥0.99" in params
    sk = section(page, "skipped")
    assert sk.count("<tr>") == 51 and "Showing 50 of 60" in sk


def test_cluster_chart_log_scale_for_big_cluster():
    page = render_html(make_report())
    sizes = section(page, "cluster-sizes")
    assert "log scale" in sizes and "2,406" in sizes
    flat = section(render_html(make_report(cluster_sizes={"2": 5, "3": 4})), "cluster-sizes")
    assert "log scale" not in flat and flat.count('class="bar"') == 2
    # many distinct sizes are grouped into power-of-two bins
    many = {str(s): 1 for s in range(2, 300)}
    binned = section(render_html(make_report(cluster_sizes=many)), "cluster-sizes")
    assert binned.count('class="bar"') == 9 and "257–512" in binned


def test_threshold_and_s_curve_marks():
    page = render_html(make_report())
    sim = section(page, "similarity")
    assert 'class="threshold"' in sim and "threshold 0.8" in sim
    lsh = section(page, "lsh")
    p = 1 - (1 - 0.8 ** 6) ** 16
    assert 'class="p-at-threshold"' in lsh and f"{p:.3f}" in lsh and 'class="threshold"' in lsh


def test_missing_sections_say_not_available():
    bare = {"counts": {"documents": 10, "kept": 10, "removed": 0}, "parameters": {"method": "simhash"}}
    page = render_html(bare)
    for sid in ("cluster-sizes", "similarity", "lsh", "timings", "skipped", "samples"):
        assert 'class="na"' in section(page, sid), sid
    assert "<svg" not in page
    # an all-zero histogram and an empty one are "not available", not an empty chart
    for hist in ({"edges": [0, 0.5, 1], "counts": [0, 0]}, {"edges": [], "counts": []}):
        assert "<svg" not in section(render_html(make_report(similarity_histogram=hist)), "similarity")
    no_lsh = make_report()
    del no_lsh["lsh"]
    page = render_html(no_lsh)
    assert "chart-lsh" not in page and "Not available" in section(page, "lsh")


def test_word_diff_and_truncation():
    a, b = diff_html("the cat sat on the mat", "the cat sat upon a mat <b>")
    assert a == "the cat sat <del>on the</del> mat"
    assert b == "the cat sat <ins>upon a</ins> mat <ins>&lt;b&gt;</ins>"
    samples = section(render_html(make_report()), "samples")
    assert "<del>jumps</del>" in samples and "<ins>leaped</ins>" in samples
    assert "truncated: showing" in samples


def test_write_html_is_atomic(tmp_path):
    out = tmp_path / "report.html"
    out.write_text("old")
    write_html(make_report(), out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


# ------------------------------------------------------------------ real browser
def decode_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit non-interlaced grey/RGB/RGBA PNG with zlib and struct (no Pillow)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", data[pos + 8:pos + 8 + n])
        elif kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + n])
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and interlace == 0 and ctype in (0, 2, 4, 6), hdr
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    stride = w * bpp
    raw = zlib.decompress(b"".join(idat))
    out = np.zeros((h, stride), np.uint8)
    prev = bytes(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 0:  # None
            cur = line
        elif f == 1:  # Sub: running sum along the row, per channel (uint8 wraps mod 256)
            cur = np.cumsum(np.frombuffer(line, np.uint8).reshape(w, bpp), axis=0, dtype=np.uint8).tobytes()
        elif f == 2:  # Up
            cur = (np.frombuffer(line, np.uint8) + np.frombuffer(prev, np.uint8)).tobytes()
        else:  # Average / Paeth: sequential along the row
            c = bytearray(line)
            for x in range(stride):
                a, b = (c[x - bpp] if x >= bpp else 0), prev[x]
                if f == 3:
                    c[x] = (c[x] + ((a + b) >> 1)) & 255
                else:
                    d = prev[x - bpp] if x >= bpp else 0
                    pa, pb, pc = abs(b - d), abs(a - d), abs(a + b - 2 * d)
                    c[x] = (c[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else d)) & 255
            cur = bytes(c)
        out[y] = np.frombuffer(cur, np.uint8)
        prev = cur
    return out.reshape(h, w, bpp)


PROBE = """<script>
document.body.setAttribute("data-probe", JSON.stringify({
  scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
  charts: Array.from(document.querySelectorAll("svg.chart"), s => {
    const b = s.getBoundingClientRect(); return [s.id, Math.round(b.width), Math.round(b.height)]; })}));
</script>"""


def chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, timeout=60, check=False)


@pytest.mark.skipif(os.environ.get("NEARDUP_SKIP_BROWSER") == "1", reason="NEARDUP_SKIP_BROWSER=1")
def test_headless_chromium_renders_page(tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh (as root) first, "
                    "or set NEARDUP_SKIP_BROWSER=1 to skip this test")
    page = tmp_path / "report.html"
    write_html(make_report(), page)
    url = page.as_uri()

    png = tmp_path / "report.png"
    shot = chromium([f"--screenshot={png}", "--window-size=1280,2000", "--hide-scrollbars", url], tmp_path)
    assert png.is_file() and png.stat().st_size > 10_000, shot.stderr.decode(errors="replace")[-2000:]
    img = decode_png(png.read_bytes())
    assert img.shape[:2] == (2000, 1280)
    grey = img[..., :3].mean(axis=2) if img.shape[2] >= 3 else img[..., 0].astype(float)
    assert abs(grey[:, :40].mean() - grey[5, 5]) < 1, "page background is not uniform at the left margin"
    assert grey.std() > 10, "screenshot looks blank"
    dark = (grey < 128).mean()
    assert 0.005 < dark < 0.5, f"unexpected share of dark pixels {dark:.3f}"
    if os.environ.get("NEARDUP_KEEP_SCREENSHOT"):
        Path(os.environ["NEARDUP_KEEP_SCREENSHOT"]).write_bytes(png.read_bytes())

    # the DOM as the browser built it, from a copy with a probe script that measures the layout
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(["--dump-dom", "--window-size=1280,2000", probed.as_uri()], tmp_path)
    text = dom.stdout.decode("utf-8", errors="replace")
    assert dom.returncode == 0 and "</html>" in text, dom.stderr.decode(errors="replace")[-2000:]
    m = re.search(r'data-probe="([^"]*)"', text)
    assert m, "probe script did not run"
    probe = json.loads(html.unescape(m.group(1)))
    assert probe["scrollWidth"] <= probe["innerWidth"] == 1280, f"page overflows horizontally at 1280px: {probe}"
    assert len(probe["charts"]) == 4
    for chart_id, w, h in probe["charts"]:
        assert w >= 400 and h >= 100, f"chart {chart_id} drawn at {w}x{h}"
    for chart in ("chart-cluster-sizes", "chart-similarity", "chart-lsh", "chart-timings"):
        assert re.search(rf'<svg[^>]*id="{chart}"', text), chart
    assert "<del>jumps</del>" in text and "<ins>leaped</ins>" in text
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


# -- SimHash runs: distances in bits and the table layout --------------------------------------------
def simhash_report() -> dict:
    from neardup.dedup.report import simhash_report as section

    r = make_report()
    r["parameters"] = {"method": "simhash", "bits": 3, "tokenizer": "word", "ngram": 3, "keep": "first"}
    del r["lsh"]
    r["simhash"] = section(3, [5, 2, 7, 4, 0, 1], 950)
    r["samples"][0]["similarity"] = 1 - 3 / 64
    r["samples"][1]["similarity"] = 1 - 1 / 64
    r["samples"][0]["kept_text"] = "这是一个关于中文文本去重的报告，" * 6
    r["samples"][0]["removed_text"] = "这是一份关于中文文本去重的报告，" * 6
    return r


def test_simhash_report_speaks_bits():
    from neardup.dedup.report import simhash_report as section

    s = section(3, [5, 2, 7, 4, 0, 1], 950)
    assert s["distance_histogram"] == {"distances": [0, 1, 2, 3, 4, 5], "counts": [5, 2, 7, 4, 0, 1]}
    assert s["tables"]["count"] == 4 and s["tables"]["levels"] == [4] and s["tables"]["key_bits"] == [16, 16]
    assert section(3, [1], 10)["distance_histogram"]["distances"] == [0, 1, 2, 3]    # k always in view
    page = render_html(simhash_report())
    assert "Hamming distance of removed documents" in page and "k = 3 bits" in page
    assert "Permuted tables" in page and "C(4, 3) = 4 tables" in page
    assert "3 bits differ" in page and "1 bit differs" in page
    assert "S-curve" not in page and "1 − d/64" not in page and "similarity 0.953" not in page
    assert "1 is further than k from its representative" in page and "1 are" not in page
    assert re.search(r"<title>3 bits: 4</title>", page)


def test_simhash_runs_report_their_distances(tmp_path):
    from neardup import run_dedup
    from neardup.config import DedupConfig

    base = " ".join(f"word{i}" for i in range(60))
    texts = [base, base.replace("word7", "other7"), base.replace("word7 word8", "x y"), "unrelated text " * 9]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    rep = run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(method="simhash", bits=8, quiet=True, workers=1))
    sh = rep["simhash"]
    removed = rep["counts"]["removed"]
    assert removed >= 1 and sum(sh["distance_histogram"]["counts"]) == removed
    assert sh["fingerprints"] == 4 and sh["max_distance"] == 8 and sh["tables"]["count"] >= 9
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "Hamming distance of removed documents" in page and "k = 8 bits" in page


# -- Chinese text is drawn: the report's font stacks reach a CJK font ------------------------------
GLYPHS = """<script>
const out = {};
for (const [name, sel] of [["sans", "body"], ["mono", ".doc"]]) {
  const el = document.querySelector(sel);
  const family = getComputedStyle(el).fontFamily;
  out[name] = Array.from("中文報告한글か", ch => {
    const c = document.createElement("canvas"); c.width = 64; c.height = 64;
    const g = c.getContext("2d"); g.fillStyle = "#fff"; g.fillRect(0, 0, 64, 64);
    g.fillStyle = "#000"; g.font = "48px " + family; g.textBaseline = "top"; g.fillText(ch, 4, 4);
    const d = g.getImageData(0, 0, 64, 64).data; let ink = 0, h = 0;
    for (let i = 0; i < d.length; i += 4) { if (d[i] < 128) { ink++; h = (h * 31 + i) % 1000000007; } }
    return [ink, h];
  });
}
document.body.setAttribute("data-glyphs", JSON.stringify(out));
</script>"""


def _glyphs(page: Path, tmp_path: Path, env: dict | None = None) -> dict:
    probed = page.with_name("glyphs.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", GLYPHS + "</body>"), encoding="utf-8")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
           "--disable-background-networking", "--disable-component-update",
           f"--user-data-dir={tmp_path / ('profile-' + str(bool(env)))}", "--dump-dom", probed.as_uri()]
    dom = subprocess.run(cmd, capture_output=True, timeout=60, check=False, env={**os.environ, **(env or {})})
    m = re.search(r'data-glyphs="([^"]*)"', dom.stdout.decode("utf-8", errors="replace"))
    assert m, dom.stderr.decode(errors="replace")[-2000:]
    return json.loads(html.unescape(m.group(1)))


def _drawn(glyphs: list) -> bool:
    """Seven different characters drawn as seven different shapes (missing glyphs are blank or one box)."""
    return all(ink > 40 for ink, _ in glyphs) and len({h for _, h in glyphs}) == len(glyphs)


@pytest.mark.skipif(os.environ.get("NEARDUP_SKIP_BROWSER") == "1", reason="NEARDUP_SKIP_BROWSER=1")
def test_chinese_report_glyphs_are_drawn(tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh (as root) first")
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout.strip()
    if not fonts:
        pytest.fail("no Chinese font: run scripts/ensure_cjk_font.sh (as root) first")
    page = tmp_path / "report.html"
    write_html(simhash_report(), page)
    got = _glyphs(page, tmp_path)
    assert _drawn(got["sans"]) and _drawn(got["mono"]), got
    # the control: with fontconfig limited to one Latin font, the same page draws no distinct CJK glyphs
    dejavu = [d for d in ("/usr/share/fonts/truetype/dejavu",) if os.path.isdir(d)]
    if dejavu:
        conf = tmp_path / "fonts.conf"
        conf.write_text(f'<?xml version="1.0"?><fontconfig><dir>{dejavu[0]}</dir>'
                        f'<cachedir>{tmp_path / "fc-cache"}</cachedir></fontconfig>', encoding="utf-8")
        bare = _glyphs(page, tmp_path, {"FONTCONFIG_FILE": str(conf)})
        assert not _drawn(bare["sans"]), bare


# -- three corpus sizes in the browser: the charts' rendered facts at 2 documents, a few dozen, 10⁷ ----------
FACTS = """<script>
const texts = s => Array.from(s.querySelectorAll("text"), t => [t.getAttribute("text-anchor"),
  +t.getAttribute("font-size"), t.textContent]);
document.body.setAttribute("data-facts", JSON.stringify({
  width: [document.documentElement.scrollWidth, window.innerWidth],
  charts: Object.fromEntries(Array.from(document.querySelectorAll("svg.chart"), s => { const b = s.getBoundingClientRect();
    return [s.id, {box: [Math.round(b.width), Math.round(b.height)], texts: texts(s),
                   bars: s.querySelectorAll("rect.bar").length}]; })),
  sections: Object.fromEntries(Array.from(document.querySelectorAll("section[id]"), s => [s.id, s.innerText])),
  params: Array.from(document.querySelectorAll("#parameters td"), td => td.innerText)}));
</script>"""


def _corpus_report(tmp_path: Path, n: int) -> dict:
    """A real run's report: ``n`` = 2 (SimHash, one pair, as a first run: 4.7 s of compiling before a
    short run), a few dozen (MinHash); 10⁷: that run's report with the counts of ten million documents
    (the numbers a 10 M run reports; running one here is out of reach)."""
    from neardup import DedupConfig, run_dedup

    base = " ".join(f"word{i}" for i in range(60))
    if n == 2:
        texts, cfg = [base, base.replace("word7", "other7")], DedupConfig(method="simhash", bits=8)
    else:
        texts = [f"{base} doc{d} " + " ".join(f"w{d}x{i}" for i in range(40)) for d in range(24)]
        texts += [t.replace(" w", " v", 1 + k % 3) for k, t in enumerate(texts[:12])] + texts[:6]
        cfg = DedupConfig()
    src = tmp_path / f"in{n}.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    from dataclasses import replace
    rep = run_dedup([str(src)], str(tmp_path / f"o{n}"), replace(cfg, quiet=True, workers=1, id_field="id"))
    if n == 2:
        rep["timings"]["compile"] = 4.7
    if n == 10**7:
        c = rep["counts"]
        c.update(input_rows=n, documents=n, kept=7_654_321, removed=n - 7_654_321, clusters=1_234_567,
                 duplicate_rate=(n - 7_654_321) / n, candidate_pairs=4_321_000, verified_pairs=3_210_000)
        rep["cluster_sizes"] = {"2": 1_000_000, "3": 150_000, "4": 50_000, "5": 20_000, "8": 10_000,
                                "40": 4_000, "1000": 560, "250000": 7}
        hist = rep["similarity_histogram"]
        hist["counts"] = [0] * 15 + [12_345, 98_765, 345_678, 654_321, 1_234_570]
        rep["timings"] = {"read_sign": 610.0, "identical": 12.0, "candidates": 95.0, "verify": 240.0,
                          "borderline": 180.0, "clusters": 70.0, "write": 120.0, "total": 1200.0}
    return rep


def _facts(page: Path, tmp_path: Path, size: int) -> dict:
    png = tmp_path / f"shot{size}.png"
    shot = chromium([f"--screenshot={png}", "--window-size=1280,2400", "--hide-scrollbars", page.as_uri()], tmp_path)
    assert png.is_file(), shot.stderr.decode(errors="replace")[-2000:]
    grey = decode_png(png.read_bytes())[..., :3].mean(axis=2)
    assert grey.std() > 10 and 0.005 < (grey < 128).mean() < 0.5, "screenshot looks blank or wrong"
    if os.environ.get("NEARDUP_KEEP_SCREENSHOT"):
        Path(f"{os.environ['NEARDUP_KEEP_SCREENSHOT']}.{size}.png").write_bytes(png.read_bytes())
    probed = tmp_path / f"facts{size}.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", FACTS + "</body>"), encoding="utf-8")
    dom = chromium(["--dump-dom", "--window-size=1280,2400", probed.as_uri()], tmp_path)
    m = re.search(r'data-facts="([^"]*)"', dom.stdout.decode("utf-8", errors="replace"))
    assert m, dom.stderr.decode(errors="replace")[-2000:]
    return json.loads(html.unescape(m.group(1)))


def _number(label: str) -> float:
    m = re.fullmatch(r"([\d,.]+)([kM]?)", label)
    assert m, f"not a count: {label!r}"
    return float(m.group(1).replace(",", "")) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]


@pytest.mark.skipif(os.environ.get("NEARDUP_SKIP_BROWSER") == "1", reason="NEARDUP_SKIP_BROWSER=1")
@pytest.mark.parametrize("size", [2, 42, 10**7])
def test_charts_rendered_at_three_corpus_sizes(tmp_path, size):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh (as root) first, "
                    "or set NEARDUP_SKIP_BROWSER=1 to skip this test")
    rep = _corpus_report(tmp_path, size)
    page = tmp_path / f"report{size}.html"
    write_html(rep, page)
    facts = _facts(page, tmp_path, size)
    assert facts["width"][0] <= facts["width"][1] == 1280, facts["width"]
    charts, sections = facts["charts"], facts["sections"]
    for chart_id, chart in charts.items():
        assert chart["box"][0] >= 400 and chart["box"][1] >= 100, (chart_id, chart["box"])
    # count axes: whole numbers, each label once, from 0 (log-scale axes: powers of ten)
    for chart_id in ("chart-cluster-sizes", "chart-similarity"):
        ys = [t for a, f, t in charts[chart_id]["texts"] if a == "end" and f == 10]
        values = [_number(t) for t in ys]
        assert len(ys) >= 2 and len(set(ys)) == len(ys) and all(v == int(v) for v in values), (chart_id, ys)
        assert charts[chart_id]["bars"] >= 1
    words = " ".join(sections.values())
    assert not re.search(r"\b1 (clusters|documents|records|bits)\b", words) and "()" not in words
    assert "None" not in facts["params"] and "True" not in facts["params"] and "False" not in facts["params"]
    timing_labels = [t for a, f, t in charts["chart-timings"]["texts"] if a == "start"]
    shares = [int(x) for t in timing_labels for x in re.findall(r"(\d+)%", t)]
    assert shares and max(shares) <= 100, timing_labels
    if size == 2:       # SimHash: the Hamming axis in whole bits, one cluster, the compile apart
        xs = [t for a, f, t in charts["chart-similarity"]["texts"] if a == "middle" and f == 10]
        assert xs and all(re.fullmatch(r"\d+", t) for t in xs), xs
        assert "1 cluster holding 2 documents" in sections["cluster-sizes"]
        assert "1 removed document;" in sections["similarity"]
        assert any("not in the total" in t for t in timing_labels) and "compiled its kernels once" in sections["timings"]
        assert "simhash" in facts["params"] and "8" in facts["params"]      # --bits 8
    if size == 42:
        assert rep["counts"]["clusters"] > 1 and f"{rep['counts']['clusters']} clusters" in sections["cluster-sizes"]
    if size == 10**7:
        ys = [t for a, f, t in charts["chart-similarity"]["texts"] if a == "end" and f == 10]
        assert ys[-1].endswith("M") and "1,234,567" in sections["summary"] and "10,000,000" in sections["summary"]
        assert "log scale" in sections["cluster-sizes"]
