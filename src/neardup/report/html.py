"""Render a dedup report dict (the content of report.json) as one self-contained HTML page.

Only ``counts`` and ``parameters`` are expected; every other section is drawn when present and
says "not available" otherwise. All text from the report (file names, ids, documents, reasons)
is escaped: documents may contain markup.
"""
from __future__ import annotations

import difflib
import re
from html import escape

from ..config import BY_NAME
from . import svg
from .svg import plural

MAX_SKIPPED = 50
MAX_SAMPLES = 25
MAX_TEXT_CHARS = 2000
# CJK ideographs, kana and hangul one character a token (their words are not spaced: a \w+ run is a
# whole clause, and one changed character would mark all of it); other words whole, punctuation alone
_CJK = ("\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
        "\U00020000-\U0003134f")
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]", re.UNICODE)

CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f5f6f8;color:#1f2937;font:15px/1.5 SANS}
main{max-width:1200px;margin:0 auto;padding:28px 32px 48px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 12px}
.meta{color:#6b7280;font-size:13px;margin:0 0 20px;overflow-wrap:anywhere}
.meta code{background:#eceef2;padding:1px 5px;border-radius:4px}
section{background:#fff;border:1px solid #e3e6ea;border-radius:10px;padding:18px 22px;margin:0 0 18px;
break-inside:avoid}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:18px}
.grid>section{margin:0}
.grid+section,.grid+.grid{margin-top:18px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin-bottom:14px}
.card{border-radius:8px;background:#f8f9fb;padding:10px 14px}
.card b{display:block;font-size:26px;line-height:1.2;font-variant-numeric:tabular-nums}
.card span{color:#6b7280;font-size:13px}
.kept b{color:#1f7a4d}.removed b{color:#b4432b}
.split{display:flex;height:14px;border-radius:7px;overflow:hidden;background:#e5e7eb}
.split .k{background:#2f9a64}.split .r{background:#d0603f}
.note{color:#6b7280;font-size:13px;margin:8px 0 0}
.na{color:#9ca3af;font-style:italic}
svg.chart{width:100%;height:auto;display:block}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid #eef0f3;vertical-align:top}
th{color:#6b7280;font-weight:600;background:#fff}
.scroll th{position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td code,td.mono{font-family:MONO;font-size:13px;overflow-wrap:anywhere}
.scroll{max-height:330px;overflow:auto}
.pair{border-top:1px solid #eef0f3;padding:14px 0 4px}
.pair:first-of-type{border-top:0}
.pair h3{font-size:14px;margin:0 0 8px;font-weight:600}
.sim{display:inline-block;background:#eef2fa;color:#2c5596;border-radius:10px;padding:0 8px;margin-left:6px}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.doc{background:#fafbfc;border:1px solid #eceef2;border-radius:6px;padding:10px 12px;white-space:pre-wrap;
overflow-wrap:anywhere;font:13px/1.55 MONO;max-height:340px;overflow:auto}
.doc .who{display:block;font:600 12px SANS;color:#6b7280;margin-bottom:4px}
del{background:#fde2dc;color:#8a2a17;text-decoration:line-through;text-decoration-color:#d0603f80}
ins{background:#d9f2e3;color:#14593a;text-decoration:none}
.legend del,.legend ins{padding:0 4px;border-radius:3px}
@media print{body{background:#fff}main{padding:0;max-width:none}section{border-color:#ccc}
.doc,.scroll{max-height:none;overflow:visible}}
@media (max-width:900px){.grid,.sides{grid-template-columns:1fr}}
""".replace("SANS", svg.SANS).replace("MONO", svg.MONO)


def _e(x) -> str:
    return escape(str(x), quote=True)


def _na(what: str = "Not available in this report.") -> str:
    return f'<p class="na">{_e(what)}</p>'


def _num(x) -> str:
    """A value for a table cell: numbers grouped, booleans as yes/no, nothing as a dash."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if x is None:
        return "—"
    if not isinstance(x, (int, float)):
        return _e(x)
    return f"{x:,}" if isinstance(x, int) else f"{x:,.6g}"


def _pct(x) -> str:
    return f"{x:.1%}" if isinstance(x, (int, float)) else "n/a"


# ---------------------------------------------------------------- sections
def _summary(c: dict, cards: list, kept, removed, unit: str, notes: tuple) -> str:
    """The summary section: a row of cards (class, value, label), a kept/removed bar (in ``unit``)
    and a line of the counts ``notes`` names (key, label) that the report has."""
    out = ['<section id="summary"><div class="cards">']
    for cls, val, name in cards:
        shown = _num(val) if val is not None else '<span class="na">n/a</span>'
        out.append(f'<div class="card {cls}"><b>{shown}</b><span>{_e(name)}</span></div>')
    out.append("</div>")
    if isinstance(kept, int) and isinstance(removed, int) and kept + removed > 0:
        k = kept / (kept + removed) * 100
        out.append(f'<div class="split" title="kept {kept:,}{unit} / removed {removed:,}{unit}"><div class="k" '
                   f'style="width:{k:.2f}%"></div><div class="r" style="width:{100 - k:.2f}%"></div></div>')
    extra = [f"{_num(c[k])} {label}" for k, label in notes if k in c]
    if extra:
        out.append(f'<p class="note">{" · ".join(extra)}</p>')
    out.append("</section>")
    return "".join(out)


def _headline(r: dict) -> str:
    c = r.get("counts") or {}
    docs, kept, removed = c.get("documents"), c.get("kept"), c.get("removed")
    rate = c.get("duplicate_rate")
    if rate is None and isinstance(docs, int) and docs and isinstance(removed, int):
        rate = removed / docs
    total = (r.get("timings") or {}).get("total")
    cards = [("", docs, "documents in"), ("kept", kept, "kept"), ("removed", removed, "removed"),
             ("", _pct(rate) if rate is not None else None, "duplicate rate"),
             ("", c.get("clusters"), "duplicate clusters"),
             ("", svg.fmt_seconds(total) if isinstance(total, (int, float)) else None, "total time")]
    return _summary(c, cards, kept, removed, "", (
        ("input_rows", "input rows read"), ("skipped_records", "records skipped"),
        ("empty_documents", "empty documents"), ("invalid_utf8_replaced", "records with invalid UTF-8 replaced")))


_DERIVED = {"b": "LSH bands b", "r": "rows per band r",     # report.json's parameters that are no flag
            "clusters_format": "--format (clusters file)"}


def _shown(value) -> str:
    """A parameter's value as a user writes it on the command line: yes/no, 2000, 0.8."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)


def applied(params: dict) -> list[tuple[str, str]]:
    """(label, display value) of the parameters that applied to a run: a value left unset (None) or
    one of a parameter of other methods (or of --index, --spans) is left out; labels are the
    command-line flags, values as a user writes them (yes/no, 0.8, not Python's True/None)."""
    method, spans, index = params.get("method"), params.get("spans"), params.get("index")
    out = []
    for name, value in params.items():
        p = BY_NAME.get(name)
        if value is None:
            continue
        if p is not None and p.methods is not None and method not in p.methods and spans not in p.methods:
            continue
        if (name == "spans_order" and spans is None) or (name == "replace" and index is None):
            continue
        if name == "recall" and method == "simhash" and params.get("candidate_bits") is None:
            continue                        # (SimHash's recall sets the verified rule's candidate radius)
        label = _DERIVED.get(name) or (p.option.split(" ")[-1].split("/")[0] if p is not None and p.option
                                       else str(name))
        out.append((label, _shown(value)))
    return out


def _parameters(r: dict) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td><code>{_e(v)}</code></td></tr>"
                   for k, v in applied(r.get("parameters") or {}))
    body = f"<table>{rows}</table>" if rows else _na()
    note = '<p class="note">The parameters that applied to this run.</p>' if rows else ""
    return f'<section id="parameters"><h2>Parameters</h2>{body}{note}</section>'


def _counts(r: dict) -> str:
    c = r.get("counts") or {}
    rows = "".join(f'<tr><th>{_e(k.replace("_", " "))}</th><td class="num">'
                   f'{_pct(v) if k.endswith("_rate") else _num(v)}</td></tr>' for k, v in c.items())
    return f'<section id="counts"><h2>Counts</h2>{f"<table>{rows}</table>" if rows else _na()}</section>'


def _cluster_sizes(r: dict) -> str:
    raw = r.get("cluster_sizes")
    sizes: dict[int, int] = {}
    for k, v in (raw or {}).items():
        try:
            if int(v) > 0:
                sizes[int(k)] = sizes.get(int(k), 0) + int(v)
        except (TypeError, ValueError):
            continue
    head = '<section id="cluster-sizes"><h2>Cluster sizes</h2>'
    if not sizes:
        return head + _na("Not available (no clusters with two or more documents).") + "</section>"
    if len(sizes) <= 24:
        bars = [(str(s), float(n)) for s, n in sorted(sizes.items())]
    else:  # many distinct sizes: power-of-two bins 2, 3–4, 5–8, …
        top = max(sizes)
        bins = []
        lo = 2
        while lo <= top:
            hi = 2 if lo == 2 else 2 * (lo - 1)
            bins.append((f"{lo}" if lo == hi else f"{lo}–{hi}", float(sum(n for s, n in sizes.items()
                                                                           if lo <= s <= hi))))
            lo = hi + 1
        bars = bins
    vals = [v for _, v in bars if v > 0]
    log_y = max(vals) / min(vals) >= 20
    chart = svg.bar_chart("chart-cluster-sizes", bars, log_y=log_y, x_title="documents in the cluster",
                          y_title="clusters", label="Cluster size distribution")
    n, big = sum(sizes.values()), max(sizes)
    docs = sum(s * k for s, k in sizes.items())
    note = (f"{plural(n, 'cluster')} holding {plural(docs, 'document')}"
            + (f"; the largest has {plural(big, 'document')}" if n > 1 else "")
            + f"{'; y axis in log scale' if log_y else ''}.")
    return f'{head}{chart}<p class="note">{_e(note)}</p></section>'


def _distances(r: dict) -> str:
    """SimHash: the Hamming distances (bits) of removed documents to their representatives, k marked."""
    head = '<section id="similarity"><h2>Hamming distance of removed documents</h2>'
    sh = r.get("simhash") or {}
    h = sh.get("distance_histogram") or {}
    ds, counts = list(h.get("distances") or []), list(h.get("counts") or [])
    if not ds or len(ds) != len(counts) or not any(c > 0 for c in counts):
        return head + _na("Not available (no removed documents, or no distances in the report).") + "</section>"
    k = sh.get("max_distance")
    edges = [d - 0.5 for d in ds] + [ds[-1] + 0.5]
    chart = svg.histogram("chart-similarity", edges, counts, marker=k + 0.5 if isinstance(k, int) else None,
                          marker_label=f"k = {k} bits" if isinstance(k, int) else "",
                          x_title="differing bits (of 64) to the kept representative of the cluster",
                          y_title="removed documents", label="Hamming distances of removed documents",
                          bin_names=[plural(d, "bit") for d in ds], integer_x=True)
    total = sum(counts)
    note = f"{plural(total, 'removed document')}; 0 bits: the same fingerprint."
    if isinstance(k, int):
        beyond = sum(c for d, c in zip(ds, counts) if d > k)
        note += f" Two documents are near duplicates when at most k = {k} of their 64 bits differ."
        if beyond:
            note += (f" {beyond:,.0f} {'is' if beyond == 1 else 'are'} further than k from {_their(beyond)} "
                     "representative: joined to the cluster through a chain of near duplicates.")
    return f'{head}{chart}<p class="note">{_e(note)}</p></section>'


def _tables(r: dict) -> str:
    """SimHash: the permuted tables that found every pair within k bits."""
    head = '<section id="lsh"><h2>Permuted tables (how pairs were found)</h2>'
    sh = r.get("simhash") or {}
    t = sh.get("tables") or {}
    if not t:
        return head + _na("Not available in this report.") + "</section>"
    k = sh.get("max_distance")
    rows = [("distinct fingerprints", f"{sh.get('fingerprints', 0):,}"), ("tables", f"{t.get('count', '?')}"),
            ("key bits", "–".join(str(x) for x in dict.fromkeys(t.get("key_bits") or []))),
            ("layout", str(t.get("layout", "")))]
    table = "<table>" + "".join(f"<tr><th>{_e(a)}</th><td>{_e(b)}</td></tr>" for a, b in rows) + "</table>"
    note = (f"Exact, not probabilistic: the 64 bits are cut into blocks, and two fingerprints that differ in at most "
            f"k = {k} bits agree on all the blocks of at least one table's key (Manku, Jain & Das Sarma 2007), so "
            "every such pair shares a bucket and none is missed. The layout is chosen by a cost model for the "
            "number of fingerprints.")
    return f'{head}{table}<p class="note">{_e(note)}</p></section>'


def _similarity(r: dict) -> str:
    if (r.get("parameters") or {}).get("method") == "simhash" and r.get("simhash"):
        return _distances(r)
    head = '<section id="similarity"><h2>Similarity of removed documents</h2>'
    h = r.get("similarity_histogram") or {}
    edges, counts = list(h.get("edges") or []), list(h.get("counts") or [])
    if len(edges) < 2 or len(counts) != len(edges) - 1 or not any(c > 0 for c in counts):
        return head + _na("Not available (no removed documents, or no histogram in the report).") + "</section>"
    t = (r.get("parameters") or {}).get("threshold")
    t = t if isinstance(t, (int, float)) else None
    # skip leading empty bins, but keep the threshold (and one bin before it) in view
    first = next(i for i, c in enumerate(counts) if c > 0)
    if t is not None:
        first = min(first, max(i for i, e in enumerate(edges[:-1]) if e <= t) if edges[0] <= t else 0)
    first = max(first - 1, 0)
    chart = svg.histogram("chart-similarity", edges[first:], counts[first:], marker=t,
                          marker_label=f"threshold {t:g}" if t is not None else "",
                          x_title="similarity to the kept representative of the cluster",
                          y_title="removed documents",
                          label="Similarity histogram of removed documents")
    total = sum(counts)
    note = f"{plural(total, 'removed document')}."
    if t is not None:
        below = sum(c for e, c in zip(edges[1:], counts) if e <= t + 1e-12)
        if below:
            note += (f" {below:,.0f} {'is' if below == 1 else 'are'} below the threshold to {_their(below)} "
                     "representative: joined to the cluster through a chain of near duplicates.")
    if first > 0:
        note += f" Empty bins below {edges[first]:g} are not drawn."
    return f'{head}{chart}<p class="note">{_e(note)}</p></section>'


def _their(n: float) -> str:
    return "its" if n == 1 else "their"


def _span_headline(r: dict) -> str:
    c = r.get("counts") or {}
    total = (r.get("timings") or {}).get("total")
    cards = [("", c.get("documents"), "documents in"), ("kept", c.get("kept"), "documents kept"),
             ("removed", c.get("edited_documents"), "documents edited"),
             ("", _pct(c.get("removed_byte_rate")), "of the bytes removed"),
             ("", c.get("emptied_documents"), "documents emptied"),
             ("", svg.fmt_seconds(total) if isinstance(total, (int, float)) else None, "total time")]
    kb, rb, db = c.get("kept_bytes"), c.get("removed_bytes"), c.get("dropped_bytes", 0)
    gone = rb + db if isinstance(rb, int) and isinstance(db, int) else None
    return _summary(c, cards, kb, gone, " bytes", (
        ("input_rows", "input rows read"), ("skipped_records", "records skipped"), ("dropped", "documents dropped"),
        ("removed_spans", "spans removed"), ("input_bytes", "bytes in"), ("kept_bytes", "bytes kept")))


def _top_spans(r: dict) -> str:
    sp = r.get("spans") or {}
    head = '<section id="spans"><h2>Most repeated spans</h2>'
    top = sp.get("top") or []
    if not top:
        return head + _na("No span was removed.") + "</section>"
    rows = ["<table><tr><th>bytes removed</th><th>times removed</th><th>span</th></tr>"]
    for t in top:
        text = str(t.get("text", ""))
        rows.append(f'<tr><td class="num">{_num(t.get("bytes_removed"))}</td><td class="num">'
                    f'{_num(t.get("removed"))}</td><td><pre class="doc">{_e(text)}</pre></td></tr>')
    rows.append("</table>")
    unit = sp.get("unit")
    note = (f"Spans grouped by their normalised words ({unit}s)" if sp.get("method") == "lines"
            else "Spans grouped by their exact bytes") + "; each shown as first removed."
    return head + f'<div class="scroll">{"".join(rows)}</div><p class="note">{_e(note)}</p></section>'


def _span_fraction(r: dict) -> str:
    head = '<section id="fraction"><h2>Share of each edited document removed</h2>'
    h = (r.get("spans") or {}).get("removed_fraction_histogram") or {}
    edges, counts = list(h.get("edges") or []), list(h.get("counts") or [])
    if len(edges) < 2 or len(counts) != len(edges) - 1 or not any(c > 0 for c in counts):
        return head + _na("No document was edited.") + "</section>"
    chart = svg.histogram("chart-fraction", edges, counts, marker=None, marker_label="",
                          x_title="fraction of the document's bytes removed", y_title="edited documents",
                          label="Histogram of the fraction removed per edited document")
    return f'{head}{chart}<p class="note">{_e(plural(sum(counts), "edited document"))}.</p></section>'


def _sup(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _lsh(r: dict) -> str:
    if (r.get("parameters") or {}).get("method") == "simhash" and r.get("simhash"):
        return _tables(r)
    head = '<section id="lsh"><h2>LSH candidate probability (S-curve)</h2>'
    lsh = r.get("lsh") or {}
    b, rows = lsh.get("b"), lsh.get("r")
    t = lsh.get("threshold", (r.get("parameters") or {}).get("threshold"))
    t = t if isinstance(t, (int, float)) else None
    points = [(float(s), float(p)) for s, p in (lsh.get("curve") or [])]
    have_br = isinstance(b, int) and isinstance(rows, int) and b > 0 and rows > 0
    if not points and have_br:
        points = [(i / 100, 1 - (1 - (i / 100) ** rows) ** b) for i in range(101)]
    if len(points) < 2:
        return head + _na("Not available (LSH banding applies to MinHash runs only).") + "</section>"
    points.sort()
    p_at = None
    if t is not None and have_br:
        p_at = 1 - (1 - t ** rows) ** b
    elif t is not None:
        for (s0, p0), (s1, p1) in zip(points, points[1:]):
            if s0 <= t <= s1:
                p_at = p0 if s1 == s0 else p0 + (p1 - p0) * (t - s0) / (s1 - s0)
                break
    chart = svg.s_curve("chart-lsh", points, threshold=t, p_at=p_at, label="LSH S-curve")
    parts = []
    per_ratio = isinstance(lsh.get("curve_of"), str)
    if per_ratio and have_br:
        parts.append(f"Containment: each pair is banded for the ratio of its two set sizes; shown, two documents "
                     f"of equal size (b = {b} bands × r = {rows} rows): containment C is Jaccard s = C / (2 − C), "
                     f"a candidate with probability 1 − (1 − s{_sup(rows)}){_sup(b)}.")
        p_at = 1 - (1 - (t / (2 - t)) ** rows) ** b if t is not None else None
    elif have_br:
        parts.append(f"b = {b} bands × r = {rows} rows: a pair with Jaccard similarity s becomes a candidate "
                     f"with probability 1 − (1 − s{_sup(rows)}){_sup(b)}.")
    if p_at is not None:
        parts.append(f"At the threshold {t:g} that is {p_at:.4f}; a true duplicate there is missed with "
                     f"probability {1 - p_at:.2%}.")
    if t is not None:
        parts.append("Shaded: pairs below the threshold that still become candidates (extra verification), "
                     "and pairs above it that are missed.")
    if "lsh_mode" in (r.get("parameters") or {}):
        parts.append(f"Parameter choice: {r['parameters']['lsh_mode']}.")
    note = f'<p class="note">{_e(" ".join(parts))}</p>' if parts else ""
    return f"{head}{chart}{note}</section>"


_NOT_SECONDS = ("resume_rows",)      # report.json's timings that count rows, not seconds
_DETAIL = ("borderline_sets", "borderline_pairs")    # parts of a part: report.json has them, the chart not
_STAGE_NAMES = {"read_sign": "read + sign", "index_query": "index query", "resume_load": "resume"}


def _parent(key: str, keys, params: dict) -> str | None:
    """The stage a timing is part of (its time is inside that stage's), or None for a stage."""
    if key.startswith("borderline") and "verify" in keys:
        return "verify"
    if key == "spans" and params.get("spans") is not None:     # --spans: inside the read or the write
        parent = "read_sign" if params.get("spans_order") == "before" else "write"
        return parent if parent in keys else None
    return None


def timing_rows(timings: dict, params: dict | None = None) -> tuple[list[tuple], float]:
    """(rows for :func:`~neardup.report.svg.hbars`, the run's total): each stage with its parts (kind
    ``part``) under it, the time no stage accounts for as "other", and the first run's compile
    (``apart``) last: it came before the run and is not in its total."""
    params = params or {}
    tm = {k: float(v) for k, v in (timings or {}).items()
          if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in _NOT_SECONDS + _DETAIL}
    total = tm.pop("total", None)
    compiled = tm.pop("compile", None)
    parent = {k: _parent(k, tm, params) for k in tm}
    stages = [k for k in tm if parent[k] is None]
    if total is None:
        total = sum(tm[k] for k in stages)
    rows: list[tuple] = []
    for k in stages:
        rows.append((_STAGE_NAMES.get(k, k.replace("_", " ")), tm[k]))
        rows += [(p.replace("_", " "), tm[p], "part") for p in tm if parent[p] == k]
    rest = total - sum(tm[k] for k in stages)
    if rows and rest > 0.01 * total:
        rows.append(("other", rest))
    if compiled:
        rows.append(("compile", compiled, "apart"))
    return rows, total


def _timings(r: dict) -> str:
    head = '<section id="timings"><h2>Where the time went</h2>'
    rows, total = timing_rows(r.get("timings") or {}, r.get("parameters") or {})
    if not rows:
        return head + _na() + "</section>"
    chart = svg.hbars("chart-timings", rows, total=total, label="Time per stage")
    c = r.get("counts") or {}
    note = f"Total {svg.fmt_seconds(total)}"
    if isinstance(c.get("documents"), int) and total > 0:
        note += f" — {c['documents'] / total:,.0f} documents per second"
    compiled = [row[1] for row in rows if len(row) > 2 and row[2] == "apart"]
    if compiled:
        note += (f". Before it, this machine's first run of the method compiled its kernels once "
                 f"({svg.fmt_seconds(compiled[0])}, cached for later runs; not in the total)")
    if any(len(row) > 2 and row[2] == "part" for row in rows):
        note += ". ↳ a part of the stage above it"
    return f'{head}{chart}<p class="note">{_e(note)}.</p></section>'


def _skipped(r: dict) -> str:
    head = '<section id="skipped"><h2>Skipped records</h2>'
    sk = r.get("skipped")
    n = (r.get("counts") or {}).get("skipped_records")
    if not sk:
        if n:
            return head + _na(f"{_num(n)} records were skipped; their details are not in the report.") + "</section>"
        if sk is None and n is None:
            return head + _na() + "</section>"
        return head + '<p class="note">No records were skipped.</p></section>'
    total = max(n if isinstance(n, int) else 0, len(sk))
    rows = "".join(f'<tr><td class="mono">{_e(s.get("file", ""))}</td><td class="num">{_e(s.get("line", ""))}'
                   f'</td><td>{_e(s.get("reason", ""))}</td></tr>' for s in sk[:MAX_SKIPPED] if isinstance(s, dict))
    shown = min(len(sk), MAX_SKIPPED)
    note = (f"Showing {shown:,} of {plural(total, 'skipped record')}." if total > shown
            else f"{plural(total, 'skipped record')}.")
    return (f'{head}<div class="scroll"><table><tr><th>file</th><th>line</th><th>reason</th></tr>{rows}'
            '</table></div>'
            f'<p class="note">{_e(note)}</p></section>')


def _truncate(text: str) -> tuple[str, str]:
    if len(text) <= MAX_TEXT_CHARS:
        return text, ""
    cut = text.rfind(" ", MAX_TEXT_CHARS - 200, MAX_TEXT_CHARS)
    cut = cut if cut > 0 else MAX_TEXT_CHARS
    return text[:cut], f"… truncated: showing {cut:,} of {len(text):,} characters"


def _mark(text: str, spans: list[tuple[int, int]], changed: list[bool], tag: str) -> str:
    """Escape text, wrapping runs of changed tokens (with the spaces between them) in <tag>."""
    out, pos, i = [], 0, 0
    while i < len(spans):
        if not changed[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(spans) and changed[j + 1]:
            j += 1
        a, b = spans[i][0], spans[j][1]
        out.append(escape(text[pos:a]))
        out.append(f"<{tag}>{escape(text[a:b])}</{tag}>")
        pos, i = b, j + 1
    out.append(escape(text[pos:]))
    return "".join(out)


def diff_html(kept: str, removed: str) -> tuple[str, str]:
    """Word-level diff: kept text with <del> on words only it has, removed text with <ins> likewise."""
    ta, tb = list(_TOKEN.finditer(kept)), list(_TOKEN.finditer(removed))
    sm = difflib.SequenceMatcher(None, [m.group() for m in ta], [m.group() for m in tb], autojunk=False)
    ca, cb = [True] * len(ta), [True] * len(tb)
    for i, j, n in sm.get_matching_blocks():
        ca[i:i + n] = [False] * n
        cb[j:j + n] = [False] * n
    return (_mark(kept, [m.span() for m in ta], ca, "del"), _mark(removed, [m.span() for m in tb], cb, "ins"))


def _why(s: dict) -> str:
    """The pair's compact explanation (report.json's ``explain``) and the command that gives all of it."""
    e = s.get("explain")
    if not isinstance(e, dict):
        return ""
    if "agreeing_slots" in e:
        text = f"MinHash: {e.get('agreeing_slots')} of {e.get('slots')} slots agree"
        if "colliding_bands" in e:
            bands = e["colliding_bands"]
            text += f"; LSH bands colliding: {', '.join(map(str, bands)) or 'none'}"
        if e.get("deciding_shingles"):
            text += "; shingles deciding most slots: " + " · ".join(f"“{x}”" for x in e["deciding_shingles"])
    elif "distance" in e:
        d, bits = e.get("distance"), e.get("differing_bits") or []
        text = "SimHash: " + (plural(d, "bit") + (" differs" if d == 1 else " differ") if isinstance(d, int)
                              else f"{d} bits differ")
        if bits:
            text += f" ({', '.join(map(str, bits))})"
    else:
        text = "signatures match" if e.get("match") else "signatures differ"
    cmd = f"neardup explain OUT {s.get('kept_id')!s} {s.get('removed_id')!s}"
    return f'<p class="note why">{_e(text)} — all of it: <code>{_e(cmd)}</code></p>'


def _samples(r: dict) -> str:
    head = ('<section id="samples"><h2>Sample duplicate pairs</h2><p class="note legend">Left: the document '
            'that was kept, <del>words only it has</del>. Right: the document removed as its duplicate, '
            '<ins>words only it has</ins>.</p>')
    samples = [s for s in (r.get("samples") or []) if isinstance(s, dict)]
    if not samples:
        return head + _na("No sample pairs in this report.") + "</section>"
    convert = (r.get("parameters") or {}).get("convert")
    if isinstance(convert, str):
        head += (f'<p class="note">The texts as they were compared: after --convert {_e(convert)} (the kept '
                 "rows in OUTDIR/kept/ are the inputs' own).</p>")
    out = [head]
    for s in samples[:MAX_SAMPLES]:
        (ka, na), (kb, nb) = _truncate(str(s.get("kept_text", ""))), _truncate(str(s.get("removed_text", "")))
        a, b = diff_html(ka, kb)
        sim = s.get("similarity")
        sim_html = f'<span class="sim">similarity {sim:.3f}</span>' if isinstance(sim, (int, float)) else ""
        if isinstance(sim, (int, float)) and (r.get("parameters") or {}).get("method") == "simhash":
            bits = round(64 * (1 - sim))
            sim_html = f'<span class="sim">{bits} bit{"s differ" if bits != 1 else " differs"}</span>'
        out.append(f'<div class="pair"><h3>kept <code>{_e(s.get("kept_id", "?"))}</code> · removed '
                   f'<code>{_e(s.get("removed_id", "?"))}</code>{sim_html}</h3><div class="sides">')
        for who, body, note in (("kept", a, na), ("removed", b, nb)):
            tail = f'<p class="note trunc">{_e(note)}</p>' if note else ""
            out.append(f'<div><div class="doc {who}"><span class="who">{who}</span>{body}</div>{tail}</div>')
        out.append("</div>" + _why(s) + "</div>")
    if len(samples) > MAX_SAMPLES:
        out.append(f'<p class="note">Showing {MAX_SAMPLES} of {len(samples):,} sample pairs.</p>')
    out.append("</section>")
    return "".join(out)


def render_html(report: dict) -> str:
    """The whole report as one HTML document (inline CSS and SVG, no external resources)."""
    r = report or {}
    meta = []
    if r.get("command"):
        meta.append(f"<code>{_e(r['command'])}</code>")
    if r.get("inputs"):
        ins = [str(x) for x in r["inputs"]]
        shown = ", ".join(ins[:5]) + (f" and {len(ins) - 5:,} more" if len(ins) > 5 else "")
        meta.append(f"inputs: {_e(shown)}")
    for key, label in (("created", "created"), ("neardup_version", "neardup")):
        if r.get(key):
            meta.append(f"{label} {_e(r[key])}")
    method = (r.get("parameters") or {}).get("method")
    title = "neardup report" + (f" — {method}" if method else "")
    if "spans" in r:
        body = [f"<h1>{_e(title)}</h1>", f'<p class="meta">{" · ".join(meta) or "run details not available"}</p>',
                _span_headline(r), '<div class="grid">', _span_fraction(r), _timings(r), "</div>", _top_spans(r),
                '<div class="grid">', _parameters(r), _counts(r), "</div>", _skipped(r)]
        return _page(title, body)
    body = [f"<h1>{_e(title)}</h1>", f'<p class="meta">{" · ".join(meta) or "run details not available"}</p>',
            _headline(r), '<div class="grid">', _cluster_sizes(r), _similarity(r), "</div>",
            '<div class="grid">', _lsh(r), _timings(r), "</div>",
            _samples(r), '<div class="grid">', _parameters(r), _counts(r), "</div>", _skipped(r)]
    return _page(title, body)


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>"
            + "".join(body) + "</main></body></html>\n")
