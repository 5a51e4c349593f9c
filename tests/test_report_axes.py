"""The report's charts and words at 1, 2 and 10⁷ items (issue 40, item 4): whole-number ticks for counts,
a Hamming axis in whole bits, the first run's compile apart from the run's shares, plurals, display
values of what applied, and sample pairs diffed on the text that was compared."""
import json
import re

import pytest

from neardup.report import render_html
from neardup.report.html import _why, applied, diff_html, timing_rows
from neardup.report.svg import bar_chart, fmt_count, hbars, histogram, nice_ticks, plural, x_ticks

SIZES = (1, 2, 10**7)


def _y_labels(svg: str) -> list[str]:
    """The y axis's tick labels of a bar chart or histogram (right-aligned, 10 px, left of the plot)."""
    return re.findall(r'<text x="52" y="[^"]*" text-anchor="end" font-size="10" fill="[^"]*">([^<]*)</text>', svg)


def _x_labels(svg: str) -> list[str]:
    return re.findall(r'<text x="[^"]*" y="235" text-anchor="middle" font-size="10" fill="[^"]*">([^<]*)</text>',
                      svg)


def _value(label: str) -> float:
    m = re.fullmatch(r"([\d,.]+)([kM]?)", label)
    assert m, label
    return float(m.group(1).replace(",", "")) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]


@pytest.mark.parametrize("n", SIZES)
def test_count_ticks_are_whole_distinct_and_cover(n):
    ticks = nice_ticks(0, n * 1.1, integer=True)
    assert all(isinstance(t, int) for t in ticks) and ticks[0] == 0 and ticks == sorted(set(ticks))
    assert ticks[-1] <= n * 1.1 and ticks[-1] >= n / 2 and 2 <= len(ticks) <= 8
    labels = [fmt_count(t) for t in ticks]
    assert len(set(labels)) == len(labels)        # never "0, 0, 0, 1, 1"


@pytest.mark.parametrize("n", SIZES)
def test_chart_y_axes_in_whole_counts(n):
    for svg in (bar_chart("c", [("2", float(n))], log_y=False, x_title="x", y_title="clusters", label="l"),
                histogram("h", [0.0, 0.5, 1.0], [0, n], marker=0.8, marker_label="t", x_title="x",
                          y_title="removed documents", label="l")):
        labels = _y_labels(svg)
        values = [_value(s) for s in labels]
        assert labels and len(set(labels)) == len(labels) and all(v == int(v) for v in values), labels
        assert values[0] == 0 and max(values) >= n / 2
    assert "<title>size 2: 1 cluster</title>" in bar_chart("c", [("2", 1.0)], log_y=False, x_title="x",
                                                           y_title="y", label="l")


@pytest.mark.parametrize("k", [0, 1, 2, 3, 8, 32])
def test_hamming_axis_in_whole_bits(k):
    ds = list(range(k + 1))
    edges = [d - 0.5 for d in ds] + [ds[-1] + 0.5]
    svg = histogram("h", edges, [1] * len(ds), marker=k + 0.5, marker_label="k", x_title="bits", y_title="docs",
                    label="l", integer_x=True)
    labels = _x_labels(svg)
    assert labels and all(re.fullmatch(r"\d+", s) for s in labels), labels     # no 0.5, 1.5, …
    assert set(int(s) for s in labels) <= set(ds) and "0" in labels
    assert x_ticks(-0.5, 1.5, integer=True) == [0, 1]


def test_plurals():
    assert [plural(n, "cluster") for n in SIZES] == ["1 cluster", "2 clusters", "10,000,000 clusters"]
    assert plural(0, "bit") == "0 bits" and plural(1, "bit") == "1 bit"


def _page_with(counts: int) -> str:
    sizes = {"2": counts}
    r = {"parameters": {"method": "minhash", "threshold": 0.8}, "counts": {"documents": 2 * counts,
         "kept": counts, "removed": counts, "clusters": counts}, "cluster_sizes": sizes,
         "similarity_histogram": {"edges": [i / 20 for i in range(21)], "counts": [0] * 19 + [counts]},
         "timings": {"read_sign": 0.6, "clusters": 0.2, "total": 1.1, "compile": 4.7},
         "skipped": [{"file": "a", "line": 1, "reason": "r"}] if counts == 1 else [],
         "samples": [{"kept_id": 0, "removed_id": 1, "similarity": 1.0, "kept_text": "a b", "removed_text": "a b",
                      "explain": {"distance": 0, "differing_bits": []}}]}
    r["counts"]["skipped_records"] = len(r["skipped"])
    return render_html(r)


@pytest.mark.parametrize("n", SIZES)
def test_page_words_at_each_size(n):
    page = _page_with(n)
    text = re.sub(r"<[^>]+>", "", page)
    if n == 1:
        assert "1 cluster holding 2 documents." in text and "1 removed document." in text
        assert "1 skipped record." in text
    else:
        assert f"{n:,} clusters holding {2 * n:,} documents" in text and f"{n:,} removed documents." in text
    assert "1 clusters" not in text and "1 documents" not in text and " 1 records" not in text
    assert "0 bits differ —" in text and "()" not in text


def test_compile_apart_from_the_run():
    rows, total = timing_rows({"read_sign": 0.6, "verify": 0.3, "borderline": 0.25, "borderline_sets": 0.2,
                               "clusters": 0.1, "total": 1.1, "compile": 4.7, "resume_rows": 5000})
    assert total == 1.1
    assert rows == [("read + sign", 0.6), ("verify", 0.3), ("borderline", 0.25, "part"), ("clusters", 0.1),
                    ("other", pytest.approx(0.1)), ("compile", 4.7, "apart")]
    svg = hbars("t", rows, total=total, label="l")
    shares = [int(s) for s in re.findall(r"(\d+)%", svg)]
    assert shares and max(shares) <= 100 and "427%" not in svg and "not in the total" in svg
    page = _page_with(2)
    assert "compiled its kernels once (4.7 s, cached for later runs; not in the total)" in page
    timings = page[page.index('<section id="timings">'):]
    timings = timings[:timings.index("</section>")]
    assert "Total 1.1 s" in timings and max(int(x) for x in re.findall(r"(\d+)%", timings)) <= 100


def test_why_without_empty_brackets():
    assert "0 bits differ —" in _why({"explain": {"distance": 0, "differing_bits": []}})
    assert "1 bit differs (5)" in _why({"explain": {"distance": 1, "differing_bits": [5]}})
    assert "3 bits differ (1, 2, 3)" in _why({"explain": {"distance": 3, "differing_bits": [1, 2, 3]}})


def test_parameters_show_what_applied_as_written():
    shown = dict(applied({"method": "minhash", "threshold": 0.8, "convert": None, "bits": None, "sentences": 3,
                          "unit": "line", "spans": None, "spans_order": "after", "pairs": False, "replace": False,
                          "batch_size": 2000, "max_drift": 0.05, "b": 16, "r": 6, "clusters_format": "jsonl"}))
    assert shown == {"--method": "minhash", "--threshold": "0.8", "--pairs": "no", "--batch-size": "2000",
                     "--max-drift": "0.05", "LSH bands b": "16", "rows per band r": "6",
                     "--format (clusters file)": "jsonl"}
    simhash = dict(applied({"method": "simhash", "bits": 3, "num_perm": 128, "index": "/idx", "replace": True,
                            "spans": "lines", "unit": "paragraph", "spans_order": "before"}))
    assert simhash == {"--method": "simhash", "--bits": "3", "--index": "/idx", "--replace": "yes",
                       "--spans": "lines", "--unit": "paragraph", "--spans-order": "before"}
    page = render_html({"parameters": {"method": "exact", "threshold": None, "pairs": True, "html": True},
                        "counts": {"accounted": True}})
    assert ">None<" not in page and ">True<" not in page and "threshold" not in page


def test_cjk_diffed_a_character_at_a_time():
    a, b = diff_html("这是一个关于中文文本去重的报告，hello world", "这是一份关于中文文本去重的报告，hello there")
    assert a == "这是一<del>个</del>关于中文文本去重的报告，hello <del>world</del>"
    assert b == "这是一<ins>份</ins>关于中文文本去重的报告，hello <ins>there</ins>"
    assert diff_html("同じ文章です", "同じ文章です") == ("同じ文章です", "同じ文章です")


def test_converted_pairs_are_diffed_as_compared(tmp_path):
    pytest.importorskip("opencc")
    from neardup import DedupConfig, run_dedup

    trad = "這是一個關於中文文本去重的報告，我們在這裡測試繁體與簡體的轉換是否正確。" * 3
    simp = "这是一个关于中文文本去重的报告，我们在这里测试繁体与简体的转换是否正确。" * 3
    src = tmp_path / "zh.jsonl"
    src.write_text(json.dumps({"text": trad}, ensure_ascii=False) + "\n" + json.dumps({"text": simp},
                   ensure_ascii=False) + "\n", encoding="utf-8")
    rep = run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(convert="t2s", tokenizer="char", quiet=True,
                                                                 workers=1))
    s = rep["samples"][0]
    assert s["similarity"] == 1.0 and s["kept_text"] == s["removed_text"] == simp
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    pair = page[page.index('<div class="pair">'):]
    assert "<del>" not in pair and "<ins>" not in pair and "after --convert t2s" in page
    # the kept rows are the inputs' own
    assert trad in (tmp_path / "o" / "kept" / "zh.jsonl").read_text(encoding="utf-8")


def test_hostile_report_values_render_escaped():
    r = {"parameters": {"method": ["<x>"], "threshold": "nan", "bits": {"a": 1}, "<unknown>": True, "spans": 5},
         "counts": {"documents": "many", "kept": None, "duplicate_rate": "x"},
         "timings": {"total": 0, "compile": 3.0, "read_sign": True, "x": "y", "resume_rows": 7},
         "samples": [{"kept_text": 1, "removed_text": None, "similarity": "a",
                      "explain": {"distance": "3", "differing_bits": "ab"}}],
         "cluster_sizes": {"2": "x", "a": 1},
         "simhash": {"distance_histogram": {"distances": [0, 1], "counts": [1, 2]}, "max_distance": 1}}
    page = render_html(r)
    assert "<x>" not in page and "&lt;unknown&gt;" in page and "not in the total" in page
    assert timing_rows({"total": -1, "a": 1}) == ([("a", 1.0)], -1.0)
