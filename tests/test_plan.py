"""The plan of a run (neardup.dedup.plan, `neardup dedup --plan`): its steps are declared from the
resolved configuration before any input is read; a run times exactly those steps, in that order, and
writes exactly the outputs its write step names."""
from __future__ import annotations

import json
import os

import pytest
from hostile import cli, docs, write_jsonl

from neardup import DedupConfig, run_dedup
from neardup.dedup.plan import describe, outputs, plan

SETTINGS = [{}, {"verify": "minhash"}, {"verify": "exact"}, {"verify": "none"}, {"metric": "containment"},
            {"linkage": "components"}, {"method": "simhash"}, {"method": "simhash", "bits": 4},
            {"method": "sentences"}, {"method": "exact"}, {"method": "lines"}, {"method": "substrings", "min_length": 20},
            {"spans": "lines"}, {"spans": "substrings", "spans_order": "before", "min_length": 20},
            {"pairs": True, "html": False}, {"clusters_format": "parquet"}, {"index": "IDX"}, {"resume": True}]
#: timings that are not steps: the warm-up's compile, the whole run, and the parts of verify's borderline band
NOT_STEPS = ("compile", "total", "borderline", "borderline_sets", "borderline_pairs")


@pytest.mark.parametrize("opts", SETTINGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_a_run_times_its_plans_steps_and_writes_its_outputs(tmp_path, opts):
    texts = docs(30) + ["", "a line that repeats\na line that repeats\nand another one"]
    src = write_jsonl(tmp_path / "in.jsonl", texts, ids=list(range(len(texts))))
    opts = {**opts, "index": str(tmp_path / "idx")} if "index" in opts else opts
    cfg = DedupConfig(workers=1, quiet=True, id_field="id", **opts).resolved()
    steps = plan(cfg)
    assert len({s.name for s in steps}) == len(steps) and steps[-1].name == "write"
    rep = run_dedup([str(src)], str(tmp_path / "out"), cfg)
    timed = [k for k in rep["timings"] if k not in NOT_STEPS]
    if "checkpoint" in timed:       # (recorded inside pass 1's time, before read_sign's total is)
        timed.remove("checkpoint")
        timed.insert(timed.index("read_sign") + 1, "checkpoint")
    assert timed == [s.name for s in steps]
    written = sorted(n + "/" if (tmp_path / "out" / n).is_dir() else n for n in os.listdir(tmp_path / "out")
                     if not n.startswith("."))     # (.neardup-manifest.json: what neardup wrote there)
    assert written == sorted(outputs(cfg))
    text = describe(steps)
    assert len(text.splitlines()) == len(steps) and all(s.name in text for s in steps)


def test_plan_prints_the_steps_and_touches_nothing(tmp_path):
    """--plan reads no input (a missing one is not looked at) and leaves OUTDIR as it is."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("not neardup's", encoding="utf-8")
    code, text, err = cli("dedup", tmp_path / "missing.jsonl", "-o", out, "--plan", "--metric", "containment")
    assert code == 0, err
    lines = text.splitlines()
    assert "5 steps" not in lines[0] and "6 steps" in lines[0] and "containment" in text
    assert [ln.split()[1] for ln in lines[1:7]] == ["read_sign", "identical", "candidates", "verify", "clusters",
                                                    "write"]
    assert lines[-1].startswith("local engine:")
    assert os.listdir(out) == ["mine.txt"] and (out / "mine.txt").read_text(encoding="utf-8") == "not neardup's"
    code, text, err = cli("dedup", tmp_path / "missing.jsonl", "-o", tmp_path / "new", "--plan", "--engine", "spark")
    assert code == 0 and text.splitlines()[-1].startswith("spark engine:") and not (tmp_path / "new").exists()
    code, text, err = cli("dedup", tmp_path / "missing.jsonl", "-o", "-", "--plan")
    assert code == 0 and "write" in text and "the kept rows to standard output" in text and "clusters.jsonl" not in text


@pytest.mark.parametrize("args,msg", [(["--bits", "3"], "bits (--bits; applies to --method simhash)"),
                                      (["--spans", "lines", "--resume"], "is not resumable"),
                                      (["--pairs", "-o", "-"], "-o - writes nothing but the kept rows"),
                                      (["--resume", "-o", "-"], "-o - has none"),
                                      (["--spark-conf", "a=b"], "must be given only with --engine spark"),
                                      (["--scheme", "bottomk"], "to find duplicates"),
                                      (["--method", "simhash", "--bits", "3", "--threshold", "0.9"],
                                       "threshold (--threshold) must be left unset with --bits"),
                                      (["--keep", "key"], "keep_field (--keep-field) must be a field name")])
def test_plan_checks_the_parameters_as_a_run_does(tmp_path, args, msg):
    """What a run refuses before it reads an input, --plan refuses too (and prints no plan)."""
    out = [] if "-o" in args else ["-o", tmp_path / "out"]
    code, text, err = cli("dedup", tmp_path / "in.jsonl", *out, "--plan", *args)
    assert code != 0 and msg in err and "Traceback" not in err and text == ""


def test_the_plan_of_every_method_and_its_report_agree_on_the_bands(tmp_path):
    """The candidates step names the LSH bands the run then reports (one choice, made once)."""
    src = write_jsonl(tmp_path / "in.jsonl", docs(12))
    for kw in ({}, {"threshold": 0.6, "num_perm": 64}, {"lsh_mode": "datasketch"}):
        cfg = DedupConfig(workers=1, quiet=True, **kw).resolved()
        rep = run_dedup([str(src)], str(tmp_path / f"o{len(kw)}"), cfg)
        step = {s.name: s for s in plan(cfg)}["candidates"]
        assert f"{rep['lsh']['b']} bands of {rep['lsh']['r']} rows" in step.does, (kw, rep["lsh"], step.does)
    assert json.dumps([s.__dict__ for s in plan(DedupConfig(method="exact").resolved())])
