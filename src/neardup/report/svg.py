"""Small inline-SVG charts for the HTML report: no plotting library, no external resources.

Every function returns one ``<svg>`` element as a string. All text that ends up in the SVG goes
through :func:`html.escape`, so labels taken from user data are safe to embed.
"""
from __future__ import annotations

import math
from html import escape

W, H = 560, 270                      # viewBox size; the CSS scales charts to their container
M_LEFT, M_RIGHT, M_TOP, M_BOTTOM = 58, 16, 16, 50
BAR = "#3d6fb4"
MARK = "#c2410c"
GRID = "#e3e6ea"
INK = "#374151"
MUTED = "#6b7280"


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x, y, s, anchor="middle", size=11, fill=INK, extra="") -> str:
    return (f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="{fill}"{extra}>{escape(str(s))}</text>')


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """Round tick values covering [lo, hi] (about n of them); ``integer``: whole numbers only, a step
    of at least 1 (counts, bits), so a chart of 1 or 2 items reads 0, 1, 2 and never 0, 0.5, 1."""
    if hi <= lo:
        return [math.ceil(lo) if integer else lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    steps = [m * mag for m in (1, 2, 2.5, 5, 10)]
    if integer:
        steps = [max(1, round(st)) for st in steps if st >= 1 and float(st).is_integer()] or [1]
    step = next((st for st in steps if st >= raw), steps[-1])
    first = math.ceil(lo / step - 1e-9) * step
    ticks = [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]
    return [int(t) for t in ticks] if integer else ticks


def fmt_count(v: float) -> str:
    """A count for an axis: 7, 1,500, 25k, 2.5M, 10M."""
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e4:
        return f"{v / 1e3:.3g}k"
    return f"{v:,.0f}"


def plural(n: float, one: str, many: str | None = None) -> str:
    """``n`` and its noun: "1 cluster", "2 clusters", "1,500 documents" (``many``: an irregular plural)."""
    word = one if n == 1 else (many or one + "s")
    return f"{n:,.0f} {word}"


# Font stacks: Latin faces first, then the CJK faces that macOS, Windows and Linux ship or package
# (simplified Chinese, then traditional, Japanese, Korean); the browser takes each glyph from the first
# face that has it, so Chinese text in a report is drawn wherever any CJK font is installed.
CJK_FONTS = ('"PingFang SC","Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC","Source Han Sans SC",'
             '"WenQuanYi Zen Hei","WenQuanYi Micro Hei","Droid Sans Fallback","PingFang TC","Microsoft JhengHei",'
             '"Noto Sans CJK TC","Hiragino Sans","Yu Gothic","Meiryo","Noto Sans CJK JP","Apple SD Gothic Neo",'
             '"Malgun Gothic","Noto Sans CJK KR"')
SANS = f'system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",{CJK_FONTS},sans-serif'
MONO = f'ui-monospace,"DejaVu Sans Mono","Noto Sans Mono CJK SC",{CJK_FONTS},monospace'


def _open(chart_id: str, label: str, height: int = H) -> list[str]:
    return [f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {W} {height}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" '
            f'font-family="{escape(SANS)}">', f"<title>{escape(label)}</title>"]


def _y_axis(parts: list[str], ticks, to_y, label_of, title: str) -> None:
    for t in ticks:
        y = to_y(t)
        parts.append(f'<line x1="{M_LEFT}" x2="{W - M_RIGHT}" y1="{_f(y)}" y2="{_f(y)}" stroke="{GRID}"/>')
        parts.append(_text(M_LEFT - 6, y + 4, label_of(t), anchor="end", size=10, fill=MUTED))
    cy = M_TOP + (H - M_TOP - M_BOTTOM) / 2
    parts.append(_text(14, cy, title, size=11, fill=MUTED, extra=f' transform="rotate(-90 14 {_f(cy)})"'))


def bar_chart(chart_id: str, bars: list[tuple[str, float]], *, log_y: bool, x_title: str, y_title: str,
              label: str) -> str:
    """Categorical bars (label, value); log_y draws the y axis in powers of ten."""
    parts = _open(chart_id, label)
    x0, x1, y0, y1 = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    vmax = max((v for _, v in bars), default=1) or 1
    if log_y:
        lo, hi = math.log10(0.5), math.log10(vmax) * 1.08 + 0.1
        def to_y(v):
            return y0 - (math.log10(max(v, 0.5)) - lo) / (hi - lo) * (y0 - y1)
        ticks = [10 ** k for k in range(0, int(hi) + 1)]
    else:
        ticks = nice_ticks(0, vmax * 1.08, integer=True)
        top = max(ticks[-1], vmax * 1.08)
        def to_y(v):
            return y0 - v / top * (y0 - y1)
    _y_axis(parts, ticks, to_y, fmt_count, y_title + (" (log scale)" if log_y else ""))
    n = max(len(bars), 1)
    slot = (x1 - x0) / n
    every = max(1, math.ceil(n / 16))
    for i, (name, v) in enumerate(bars):
        x, y = x0 + i * slot + slot * 0.12, to_y(v)
        parts.append(f'<rect class="bar" x="{_f(x)}" y="{_f(y)}" width="{_f(slot * 0.76)}" '
                     f'height="{_f(y0 - y)}" fill="{BAR}"><title>size {escape(name)}: '
                     f'{escape(plural(v, "cluster"))}</title></rect>')
        cx = x0 + (i + 0.5) * slot
        if n <= 24:
            parts.append(_text(cx, y - 4, fmt_count(v), size=10, fill=INK))
        if i % every == 0:
            parts.append(_text(cx, y0 + 15, name, size=10, fill=MUTED))
    parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}" stroke="{INK}"/>')
    parts.append(_text((x0 + x1) / 2, H - 12, x_title, fill=MUTED))
    parts.append("</svg>")
    return "".join(parts)


def histogram(chart_id: str, edges: list[float], counts: list[float], *, marker: float | None,
              marker_label: str, x_title: str, y_title: str, label: str, bin_names: list[str] | None = None,
              integer_x: bool = False) -> str:
    """Bins on a numeric x axis with an optional vertical marker (the threshold); ``bin_names``: each
    bar's name in its tooltip (default: its range); ``integer_x``: x ticks at whole numbers only (bits)."""
    parts = _open(chart_id, label)
    x0, x1, y0, y1 = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    lo, hi = edges[0], edges[-1]
    span = (hi - lo) or 1.0
    def to_x(v):
        return x0 + (v - lo) / span * (x1 - x0)
    vmax = max(counts, default=1) or 1
    ticks = nice_ticks(0, vmax * 1.1, integer=True)
    top = max(ticks[-1], vmax * 1.1)
    def to_y(v):
        return y0 - v / top * (y0 - y1)
    _y_axis(parts, ticks, to_y, fmt_count, y_title)
    for i, (a, b, c) in enumerate(zip(edges, edges[1:], counts)):
        if c > 0:
            y = to_y(c)
            name = escape(bin_names[i]) if bin_names else f"{a:.3g}–{b:.3g}"
            parts.append(f'<rect class="bar" x="{_f(to_x(a) + 0.5)}" y="{_f(y)}" '
                         f'width="{_f(max(to_x(b) - to_x(a) - 1, 0.5))}" height="{_f(y0 - y)}" fill="{BAR}">'
                         f'<title>{name}: {c:,.0f}</title></rect>')
    for t in x_ticks(lo, hi, integer_x):
        parts.append(_text(to_x(t), y0 + 15, f"{t:g}", size=10, fill=MUTED))
    parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}" stroke="{INK}"/>')
    if marker is not None and lo <= marker <= hi:
        mx = to_x(marker)
        parts.append(f'<line class="threshold" x1="{_f(mx)}" x2="{_f(mx)}" y1="{y1}" y2="{y0}" '
                     f'stroke="{MARK}" stroke-width="1.5" stroke-dasharray="5 3"/>')
        left = mx > (x0 + x1) / 2
        parts.append(_text(mx + (-5 if left else 5), y1 + 12, marker_label, anchor="end" if left else "start",
                           fill=MARK))
    parts.append(_text((x0 + x1) / 2, H - 12, x_title, fill=MUTED))
    parts.append("</svg>")
    return "".join(parts)


def x_ticks(lo: float, hi: float, integer: bool = False) -> list[float]:
    """A histogram's x ticks over [lo, hi]: about 8 round values (whole numbers with ``integer``)."""
    return [t for t in nice_ticks(lo, hi, 8, integer) if lo <= t <= hi]


def s_curve(chart_id: str, points: list[tuple[float, float]], *, threshold: float | None, p_at: float | None,
            label: str) -> str:
    """LSH candidate probability against Jaccard similarity, threshold and P(threshold) marked."""
    parts = _open(chart_id, label)
    x0, x1, y0, y1 = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    def to_x(v):
        return x0 + v * (x1 - x0)
    def to_y(v):
        return y0 - v * (y0 - y1)
    _y_axis(parts, [0, 0.25, 0.5, 0.75, 1.0], to_y, lambda t: f"{t:g}", "P(candidate pair)")
    for t in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
        parts.append(_text(to_x(t), y0 + 15, f"{t:g}", size=10, fill=MUTED))
    pts = " ".join(f"{_f(to_x(s))},{_f(to_y(p))}" for s, p in points)
    if threshold is not None:
        tx = to_x(threshold)
        # shade: left of the threshold under the curve = false positives, right above = misses
        left = [(s, p) for s, p in points if s <= threshold]
        right = [(s, p) for s, p in points if s >= threshold]
        if len(left) > 1:
            poly = " ".join(f"{_f(to_x(s))},{_f(to_y(p))}" for s, p in left)
            parts.append(f'<polygon points="{_f(to_x(left[0][0]))},{y0} {poly} {_f(to_x(left[-1][0]))},{y0}" '
                         f'fill="{MARK}" fill-opacity="0.12"><title>false-positive region</title></polygon>')
        if len(right) > 1:
            poly = " ".join(f"{_f(to_x(s))},{_f(to_y(p))}" for s, p in right)
            parts.append(f'<polygon points="{_f(to_x(right[0][0]))},{y1} {poly} {_f(to_x(right[-1][0]))},{y1}" '
                         f'fill="{BAR}" fill-opacity="0.12"><title>missed-pair region</title></polygon>')
        parts.append(f'<line class="threshold" x1="{_f(tx)}" x2="{_f(tx)}" y1="{y1}" y2="{y0}" stroke="{MARK}" '
                     f'stroke-width="1.5" stroke-dasharray="5 3"/>')
    parts.append(f'<polyline class="curve" points="{pts}" fill="none" stroke="{BAR}" stroke-width="2.2"/>')
    if threshold is not None and p_at is not None:
        tx, py = to_x(threshold), to_y(p_at)
        parts.append(f'<line x1="{x0}" x2="{_f(tx)}" y1="{_f(py)}" y2="{_f(py)}" stroke="{MARK}" '
                     f'stroke-dasharray="2 3"/>')
        parts.append(f'<circle class="p-at-threshold" cx="{_f(tx)}" cy="{_f(py)}" r="4.5" fill="{MARK}"/>')
        txt = f"P = {p_at:.3f} at s = {threshold:g}"
        # beside the dotted line at the left, where the curve is still low (below it when P is near 1)
        parts.append(_text(x0 + 6, py + (15 if p_at > 0.8 else -6), txt, anchor="start", fill=MARK,
                           extra=' font-weight="600"'))
    parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}" stroke="{INK}"/>')
    parts.append(_text((x0 + x1) / 2, H - 12, "Jaccard similarity s of a pair", fill=MUTED))
    parts.append("</svg>")
    return "".join(parts)


def share(v: float, total: float) -> str:
    """``v``'s share of ``total`` as a label: "42%", "<1%", or "" when there is no total."""
    if total <= 0:
        return ""
    return f"{v / total:.0%}" if v / total >= 0.01 else "<1%"


def hbars(chart_id: str, rows: list[tuple], *, total: float, label: str) -> str:
    """Horizontal bars of seconds per stage, with the share of the total run time. A row is (name,
    seconds) or (name, seconds, kind): kind ``part`` is a part of the stage above it (indented, its
    share of the total), ``apart`` is time outside the total (the first run's compile: grey, no share,
    so 4.7 s of compiling is never drawn as 422 % of a 1.1 s run)."""
    row_h = 30
    height = 14 + row_h * len(rows)
    parts = _open(chart_id, label, height)
    name_w, x1 = 130, W - 150
    vmax = max((r[1] for r in rows), default=1) or 1
    for i, row in enumerate(rows):
        name, v = row[0], row[1]
        kind = row[2] if len(row) > 2 else "stage"
        y = 8 + i * row_h
        w = max(v / vmax * (x1 - name_w), 1.5)
        indent = 12 if kind == "part" else 0
        fill = {"apart": GRID, "part": "#8fa9d6"}.get(kind, BAR)
        parts.append(_text(name_w - 8, y + 17, ("↳ " if kind == "part" else "") + name, anchor="end",
                           size=11 if kind == "part" else 12, fill=MUTED if kind != "stage" else INK))
        parts.append(f'<rect class="bar {kind}" x="{name_w + indent}" y="{y + 4}" width="{_f(max(w - indent, 1.5))}" '
                     f'height="{row_h - 10}" rx="2" fill="{fill}"><title>{escape(name)}: {v:.3f} s</title></rect>')
        tail = " · not in the total" if kind == "apart" else (f" · {share(v, total)}" if share(v, total) else "")
        parts.append(_text(name_w + w + 6, y + 17, f"{fmt_seconds(v)}{tail}", anchor="start", size=11,
                           fill=MUTED))
    parts.append("</svg>")
    return "".join(parts)


def fmt_seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"
