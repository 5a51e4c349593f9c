"""Progress, stage by stage (issue 40, item 4): ``--progress json`` writes one JSON event per line on
stderr for every stage of ``dedup``, ``sign`` and ``index add``, in order, whose counts add up to the
input's rows; bars only where asked or on a terminal; never a byte of it in the outputs."""
import json

import pytest
from click.testing import CliRunner

from neardup import DedupConfig, run_dedup
from neardup.cli import main
from neardup.dedup.progress import begin, mode_of, reporting

TEXTS = ["the quick brown fox jumps over the lazy dog and runs into the green forest",
         "the quick brown fox jumps over the lazy dog and runs into the green forest",
         "a completely different sentence about cats sleeping on a warm sunny windowsill",
         "the quick brown fox jumps over the lazy dog and runs into the green forest today",
         "yet another line of text that has nothing in common with the others at all"]


def _corpus(tmp_path, bad: bool = True):
    """Five documents, a blank line and (``bad``) a line that is not JSON: 7 input rows."""
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(TEXTS)]
    lines.insert(2, "")
    if bad:
        lines.insert(4, "{not json")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return src, len(lines)


def _events(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.strip()]


def _stages(events) -> list[str]:
    """The stages in order, each checked to start, advance and end once, in that order."""
    order, open_ = [], None
    for e in events:
        assert set(e) >= {"event", "stage", "unit", "elapsed"}
        if e["event"] == "start":
            assert open_ is None, f"{e['stage']} starts inside {open_}"
            open_ = e["stage"]
            order.append(open_)
        else:
            assert e["stage"] == open_ and e["done"] >= 0
            if e["event"] == "end":
                open_ = None
    assert open_ is None
    elapsed = [e["elapsed"] for e in events]
    assert elapsed == sorted(elapsed)
    return order


def _end(events, name: str) -> dict:
    return next(e for e in events if e["stage"] == name and e["event"] == "end")


@pytest.mark.parametrize("method, stages", [
    ("minhash", ["read+sign", "identical", "candidates", "verify", "borderline", "clusters", "write", "report"]),
    ("simhash", ["read+sign", "candidates", "verify", "clusters", "write", "report"]),
    ("exact", ["read+sign", "clusters", "write", "report"]),
])
def test_dedup_json_events_cover_every_stage(tmp_path, method, stages):
    src, rows = _corpus(tmp_path)
    args = ["dedup", str(src), "--method", method, "--on-error", "skip", "--workers", "1"]
    got = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "j"), "--progress", "json", "-q"])
    assert got.exit_code == 0, got.output
    assert got.stdout == ""
    events = _events(got.stderr)
    assert _stages(events) == stages
    read = _end(events, "read+sign")
    assert read["rows"] == rows and read["documents"] + read["skipped"] == rows and read["skipped"] == 2
    assert read["done"] == read["total"] == src.stat().st_size
    assert _end(events, "write")["done"] == _end(events, "write")["total"] == rows
    assert _end(events, "clusters")["done"] == len(TEXTS)
    report = json.loads((tmp_path / "j" / "report.json").read_text())
    assert _end(events, "write")["kept"] == report["counts"]["kept"]
    if method == "minhash":
        cand = _end(events, "candidates")
        assert cand["pairs"] == report["counts"]["candidate_pairs"] == _end(events, "verify")["total"]
        assert _end(events, "borderline")["accepted"] == report["counts"]["verified_pairs"] - 1    # (+ the copy)
        assert _end(events, "identical")["copies"] == 1
        # candidates advance band by band (rows: the distinct documents bucketed); verify and borderline
        # advance by pairs, and their advances add up to the candidates
        bands = report["lsh"]["b"]
        assert cand["unit"] == "band" and cand["total"] == cand["done"] == bands and cand["rows"] == 4
        steps = [e for e in events if e["stage"] == "candidates" and e["event"] == "advance"]
        assert [e["done"] for e in steps] == list(range(1, bands + 1))
        for name in ("verify", "borderline"):
            ups = [e for e in events if e["stage"] == name and e["event"] == "advance"]
            assert ups and ups[-1]["done"] == cand["pairs"] and ups[-1]["eta"] == 0
    # the same run without progress: the same outputs, byte for byte
    plain = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "p"), "--progress", "none", "-q"])
    assert plain.exit_code == 0 and plain.stderr == ""
    for name in ("clusters.jsonl", "kept/in.jsonl"):
        assert (tmp_path / "j" / name).read_bytes() == (tmp_path / "p" / name).read_bytes()


@pytest.mark.parametrize("args, stages", [
    (["dedup", "--method", "lines"], ["read+sign", "spans", "write"]),
    (["dedup", "--spans", "lines"], ["read+sign", "identical", "candidates", "verify", "borderline", "clusters",
                                     "spans", "write", "report"]),
    (["dedup", "--spans", "lines", "--spans-order", "before"],
     ["read+sign", "spans", "read+sign", "identical", "candidates", "verify", "borderline", "clusters", "write",
      "report"]),
    (["pairs"], ["read+sign", "identical", "candidates", "verify", "borderline", "clusters", "join", "write"]),
    (["dedup", "--verify", "minhash"], ["read+sign", "identical", "candidates", "verify", "clusters", "write",
                                        "report"]),
])
def test_span_runs_and_joins_report_one_stage_at_a_time(tmp_path, args, stages):
    src, rows = _corpus(tmp_path)
    got = CliRunner().invoke(main, [args[0], str(src), *args[1:], "-o", str(tmp_path / "o"), "--on-error", "skip",
                                    "--workers", "1", "--progress", "json", "-q"])
    assert got.exit_code == 0, got.output
    events = _events(got.stderr)
    assert _stages(events) == stages
    assert all(e["rows"] == rows for e in events if e["stage"] == "read+sign" and e["event"] == "end")


def test_json_events_with_the_summary_and_to_stdout(tmp_path):
    src, rows = _corpus(tmp_path, bad=False)
    got = CliRunner().invoke(main, ["dedup", str(src), "-o", "-", "--progress", "json", "--workers", "1"])
    assert got.exit_code == 0, got.output
    assert [json.loads(line)["id"] for line in got.stdout.splitlines()] == ["d0", "d2", "d4"]   # the kept rows alone
    lines = got.stderr.splitlines()
    assert lines[-1].startswith("neardup dedup --method minhash: 6 rows")    # the summary, after the events
    events = _events("\n".join(lines[:-1]))
    assert _stages(events)[0] == "read+sign" and _end(events, "read+sign")["rows"] == rows


def test_piped_runs_show_nothing_and_quiet_wins_over_bars(tmp_path):
    src, _ = _corpus(tmp_path, bad=False)
    auto = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "a"), "-q"])
    assert auto.exit_code == 0 and auto.stderr == ""          # stderr is no terminal: no bars (today's rule)
    quiet_bar = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "b"), "-q", "--progress", "bar"])
    assert quiet_bar.exit_code == 0 and quiet_bar.stderr == ""
    bar = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "c"), "--progress", "bar"])
    assert bar.exit_code == 0
    for name in ("read+sign", "identical", "candidates", "verify", "borderline", "clusters", "write"):
        assert f"{name}:" in bar.stderr
    writes = [part for part in bar.stderr.split("\r") if part.startswith("write:")]
    assert writes and all("row/s" in w and "0.00/1.00" not in w for w in writes)      # the write bar counts rows
    assert any(" 0/6 [" in w for w in writes)        # (its later updates are drawn at most 10 times a second)


def test_progress_refuses_other_values(tmp_path):
    src, _ = _corpus(tmp_path, bad=False)
    for cmd in (["dedup", str(src), "-o", str(tmp_path / "o")], ["sign", str(src)],
                ["index", "add", str(tmp_path), str(src), "--id-field", "id"]):
        got = CliRunner().invoke(main, [*cmd, "--progress", "xml"])
        assert got.exit_code == 2 and "'xml' is not one of 'auto', 'bar', 'json', 'none'" in got.output
    with pytest.raises(Exception, match=r"progress \(--progress\) must be one of auto, bar, json, none; got True"):
        run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(progress=True))
    # (--engine spark takes --progress too: tests/test_spark_engine.py::test_progress_json_on_spark)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_sign_json_events(tmp_path, fmt):
    src, rows = _corpus(tmp_path)
    out = "-" if fmt == "jsonl" else str(tmp_path / "s.parquet")
    got = CliRunner().invoke(main, ["sign", str(src), "--format", fmt, "-o", out, "--on-error", "skip",
                                    "--workers", "1", "--progress", "json"])
    assert got.exit_code == 0, got.output
    events = _events("\n".join(line for line in got.stderr.splitlines() if line.startswith("{")))
    assert _stages(events) == (["read+sign"] if fmt == "jsonl" else ["read+sign", "write"])
    read = _end(events, "read+sign")
    assert read["rows"] == rows and read["documents"] == len(TEXTS) and read["done"] == read["total"]
    if fmt == "jsonl":
        assert len(got.stdout.splitlines()) == len(TEXTS) and all(line.startswith("{") for line in got.stdout.splitlines())


def test_index_add_json_events(tmp_path):
    src, rows = _corpus(tmp_path)
    idx = tmp_path / "idx"
    assert CliRunner().invoke(main, ["index", "create", str(idx)]).exit_code == 0
    got = CliRunner().invoke(main, ["index", "add", str(idx), str(src), "--id-field", "id", "--on-error", "skip",
                                    "--progress", "json"])
    assert got.exit_code == 0, got.output
    events = _events(got.stderr)
    assert _stages(events) == ["read+sign+add"]
    end = _end(events, "read+sign+add")
    assert end["rows"] == rows and end["documents"] == len(TEXTS) and end["skipped"] == 2
    assert got.stdout.startswith(f"added {len(TEXTS)} documents")


def test_modes_and_library_calls_stay_silent(capsys):
    assert mode_of("json", quiet=True) == "json" and mode_of("bar", quiet=True) == "none"
    assert mode_of("auto") == "none" and mode_of("none") == "none" and mode_of("bar") == "bar"
    step = begin("alone", 3)           # outside a command: nothing
    step.update(3)
    step.end()
    with reporting("json"):
        step = begin("counted", 2, unit="pair")
        step.update(1)
        step.update(1)
        step.end(extra=7)
        step.end()                     # a second end is ignored
    events = _events(capsys.readouterr().err)
    assert [e["event"] for e in events] == ["start", "advance", "advance", "end"]
    assert events[1]["eta"] >= 0 and events[2]["eta"] == 0 and events[-1]["extra"] == 7 and events[-1]["done"] == 2
