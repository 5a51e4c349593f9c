"""The output folder neardup owns: nothing it did not write is ever deleted or overwritten, a previous
result is replaced as one unit only by a successful run, and bad -o paths are one-line errors.

Each test names the finding of issue 13 it pins (findings 3, 4, 5 and "Output state")."""
from __future__ import annotations

import errno
import json
import os
import threading

import pytest
from hostile import accounted, cli, docs, one_line_error, report, snapshot, without_root, write_jsonl

from neardup import DedupConfig, run_dedup
from neardup.errors import OutputError
from neardup.io.outdir import MANIFEST, StagedOutput


def cfg(**kw):
    return DedupConfig(workers=1, quiet=True, **kw)


def test_a_project_folder_is_never_used_as_outdir(tmp_path):
    proj = tmp_path / "proj"
    (proj / "kept").mkdir(parents=True)
    (proj / "kept" / "notes.md").write_text("my notes", encoding="utf-8")
    (proj / "report.json").write_text('{"mine": true}', encoding="utf-8")
    src = write_jsonl(tmp_path / "in.jsonl")
    before = snapshot(proj)
    code, _, err = cli("dedup", src, "-o", proj)
    assert code == 1 and "not a neardup run's output" in one_line_error(err)
    assert snapshot(proj) == before


def test_input_inside_outdir_is_refused(tmp_path):
    o = tmp_path / "o"
    run_dedup([str(write_jsonl(tmp_path / "data.jsonl", docs(6000)[:60]))], str(o), cfg())
    kept = o / "kept" / "data.jsonl"
    before = snapshot(o)
    code, _, err = cli("dedup", kept, "-o", o)          # would replace the input by its own kept rows
    assert code == 1 and "contains the input" in one_line_error(err)
    assert snapshot(o) == before


def test_input_named_report_json_in_outdir(tmp_path):
    o = tmp_path / "o"
    o.mkdir()
    (o / "report.json").write_text('{"text": "a document that happens to be called report.json"}\n')
    code, _, err = cli("dedup", o / "report.json", "--input-format", "jsonl", "-o", o)
    assert code == 1 and "contains the input" in one_line_error(err)
    assert "happens to be called" in (o / "report.json").read_text()


def test_dot_dot_input_names_stay_inside_kept(tmp_path):
    d = tmp_path / "data" / "inner"
    d.mkdir(parents=True)
    for i, t in enumerate(docs(6)):
        (d / f"f{i}.txt").write_text(t, encoding="utf-8")
    important = tmp_path / "out2" / "sub" / "important.txt"
    important.parent.mkdir(parents=True)
    important.write_text("keep me", encoding="utf-8")
    out = tmp_path / "out2" / "sub" / "o"
    run_dedup([str(tmp_path / "data" / "inner" / "..")], str(out), cfg())
    rep = accounted(out, 6)
    assert rep["outputs"][0]["output"] == "kept/data"
    assert important.read_text() == "keep me"
    assert sorted(p.name for p in (out / "kept").iterdir()) == ["data"]


@pytest.mark.parametrize("target", ["file", "under_file", "empty", "devnull"])
def test_bad_outdir_paths_are_one_line_errors(tmp_path, target):
    src = write_jsonl(tmp_path / "in.jsonl")
    f = tmp_path / "afile"
    f.write_text("x")
    path = {"file": f, "under_file": f / "sub", "empty": "", "devnull": "/dev/null"}[target]
    code, _, err = cli("dedup", src, "-o", path)
    line = one_line_error(err)
    assert code == 1 and ("a file" in line or "not a folder" in line or "empty" in line)
    assert f.read_text() == "x"


def test_read_only_outdir_parent_is_named(open_tmp):
    src = write_jsonl(open_tmp / "in.jsonl")
    ro = open_tmp / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    status, value = without_root(lambda: cli("dedup", str(src), "-o", str(ro / "out")))
    assert status == "ok", value
    code, _, err = value
    assert code == 1 and "cannot create the output folder (Permission denied)" in one_line_error(err)
    os.chmod(ro, 0o755)
    (ro / "out").mkdir()
    os.chmod(ro / "out", 0o555)
    status, value = without_root(lambda: cli("dedup", str(src), "-o", str(ro / "out")))
    code, _, err = value
    assert code == 1 and "Permission denied" in one_line_error(err)


def test_rerun_replaces_the_previous_result_as_one_unit(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", docs(30))
    o = tmp_path / "o"
    run_dedup([str(src)], str(o), cfg())
    assert (o / "clusters.jsonl").exists() and (o / MANIFEST).exists()
    run_dedup([str(src)], str(o), cfg(clusters_format="parquet"))
    names = sorted(p.name for p in o.iterdir())
    assert names == sorted([MANIFEST, "clusters.parquet", "kept", "report.html", "report.json"])
    assert report(o)["parameters"]["clusters_format"] == "parquet"
    other = write_jsonl(tmp_path / "other.jsonl", docs(9))
    run_dedup([str(other)], str(o), cfg())
    assert sorted(p.name for p in (o / "kept").iterdir()) == ["other.jsonl"]
    manifest = json.loads((o / MANIFEST).read_text())
    assert sorted(manifest["files"]) == ["clusters.jsonl", "kept/other.jsonl", "report.html", "report.json"]


def test_a_failed_rerun_leaves_the_previous_result_whole(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", docs(30))
    o = tmp_path / "o"
    run_dedup([str(src)], str(o), cfg())
    before = snapshot(o)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{broken\n', encoding="utf-8")
    code, _, err = cli("dedup", bad, "-o", o)
    assert code == 1 and "malformed JSON" in err
    assert snapshot(o) == before
    import neardup.engines.local.run as local_run

    def disk_full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(local_run, "write_clusters", disk_full)
    with pytest.raises(OutputError, match="No space left on device"):
        run_dedup([str(src)], str(o), cfg(clusters_format="parquet"))
    assert snapshot(o) == before
    assert not [p for p in os.listdir(o) if p.startswith((".neardup-tmp", ".neardup-old"))]


def test_a_file_edited_since_neardup_wrote_it_is_not_clobbered(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    o = tmp_path / "o"
    run_dedup([str(src)], str(o), cfg())
    with open(o / "kept" / "in.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"text": "a row I added by hand"}\n')
    code, _, err = cli("dedup", src, "-o", o)
    assert code == 1 and "kept/in.jsonl" in one_line_error(err)
    assert "by hand" in (o / "kept" / "in.jsonl").read_text()


def test_stale_work_folders_of_a_dead_run_are_removed(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    o = tmp_path / "o"
    run_dedup([str(src)], str(o), cfg())
    stale = o / ".neardup-tmp-dead1234"          # as a killed run leaves it: marked as a work folder
    (stale / "out").mkdir(parents=True)
    (stale / ".neardup-work").write_text("work folder")
    (stale / "out" / "report.json").write_text("{}")
    (o / ".neardup-old-dead5678").mkdir()        # empty: killed between making and marking it
    run_dedup([str(src)], str(o), cfg())
    assert not [p for p in os.listdir(o) if p.startswith((".neardup-tmp", ".neardup-old"))]


def test_a_second_run_into_the_same_folder_is_refused_while_the_first_works(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    o = tmp_path / "o"
    with StagedOutput(str(o)) as first:
        assert os.path.isdir(first.out)
        code, _, err = cli("dedup", src, "-o", o)
        assert code == 1 and "another neardup run is writing" in one_line_error(err)
        assert os.path.isdir(first.tmp)       # the live run's work folder is not cleaned as stale
    run_dedup([str(src)], str(o), cfg())
    accounted(o, 12)


def test_concurrent_runs_leave_one_whole_result(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", docs(300))
    o = tmp_path / "o"
    errors: list = []

    def go():
        try:
            run_dedup([str(src)], str(o), cfg())
        except OutputError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all("another neardup run" in e for e in errors)
    accounted(o, 300)


def test_a_kill_inside_the_commit_never_leaves_a_finished_looking_mix(tmp_path, monkeypatch):
    """Simulate death at every rename of the commit: the folder is then either the old result, the
    new one, or has no report.json; and the next run accepts it (every file is in the manifest)."""
    src = write_jsonl(tmp_path / "in.jsonl", docs(30))
    real_replace = os.replace
    for k in range(8):
        o = tmp_path / f"o{k}"
        run_dedup([str(src)], str(o), cfg())
        old = snapshot(o)
        calls = {"n": 0}

        def dying_replace(a, b, k=k, calls=calls):
            calls["n"] += 1
            if calls["n"] > k + 1:          # the first replace writes the union manifest
                raise KeyboardInterrupt
            return real_replace(a, b)

        monkeypatch.setattr(os, "replace", dying_replace)
        try:
            run_dedup([str(src)], str(o), cfg(keep="longest"))
        except KeyboardInterrupt:
            pass
        monkeypatch.setattr(os, "replace", real_replace)
        now = snapshot(o)
        finished = "report.json" in now
        if finished:
            rep = json.loads(now["report.json"])
            assert rep["parameters"]["keep"] in ("first", "longest")
            if rep["parameters"]["keep"] == "first":
                assert all(now[p] == old[p] for p in old if p != MANIFEST and p in now)
        run_dedup([str(src)], str(o), cfg())       # the next run accepts the folder and cleans it
        accounted(o, 30)
        assert not [p for p in os.listdir(o) if p.startswith((".neardup-tmp", ".neardup-old"))]


def test_outputs_appear_only_after_success(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl")
    o = tmp_path / "o"
    seen = {}
    import neardup.engines.local.run as local_run

    real = local_run.write_report

    def spy(rep, folder, html):
        seen["listing"] = sorted(os.listdir(o))
        return real(rep, folder, html)

    monkeypatch.setattr(local_run, "write_report", spy)
    run_dedup([str(src)], str(o), cfg())
    assert [n for n in seen["listing"] if not n.startswith(".neardup-tmp")] == []
    assert (o / "report.json").exists()


@pytest.mark.parametrize("name", [".neardup-tmp-mybackup", ".neardup-old-photos"])
def test_user_folders_named_like_work_folders_are_never_deleted(tmp_path, name):
    src = write_jsonl(tmp_path / "in.jsonl")
    o = tmp_path / "o"
    (o / name).mkdir(parents=True)
    (o / name / "precious.txt").write_text("keep", encoding="utf-8")
    before = snapshot(o)
    code, _, err = cli("dedup", src, "-o", o)
    assert code == 1 and name in one_line_error(err)
    assert snapshot(o) == before


def test_an_input_folder_reaching_outdir_through_a_link_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for i, t in enumerate(docs(4)):
        (data / f"f{i}.txt").write_text(t, encoding="utf-8")
    o = tmp_path / "out"
    run_dedup([str(data)], str(o), cfg())
    before = snapshot(o)
    os.symlink("../out", data / "outlink")
    code, _, err = cli("dedup", data, "-o", o)
    assert code == 1 and "through a symbolic link" in one_line_error(err)
    assert snapshot(o) == before
    os.remove(data / "outlink")
    os.symlink(tmp_path, data / "up")            # a link to a folder above OUTDIR reaches it too
    code, _, err = cli("dedup", data, "-o", o)
    assert code == 1 and "through a symbolic link" in one_line_error(err)


def test_write_behind_writes_in_order_and_raises_a_failed_write_once():
    """WriteBehind: chunks land in order; a write that fails is raised by a later write or by close
    (once), and no chunk after it is written."""
    import io

    from neardup.io.compression import WriteBehind

    sink = io.BytesIO()
    with WriteBehind(sink) as w:
        for i in range(100):
            w.write(b"%d," % i)
        w.write(b"")
    assert sink.getvalue() == b"".join(b"%d," % i for i in range(100))

    class Full:
        def __init__(self):
            self.got = []

        def write(self, data):
            if len(self.got) == 3:
                raise OSError(28, "No space left on device")
            self.got.append(bytes(data))

    fh = Full()
    w = WriteBehind(fh, depth=1)
    with pytest.raises(OSError, match="No space"):
        for i in range(1000):
            w.write(b"x%d" % i)
        w.close()
    w.close()                                    # raised already: not again
    assert fh.got == [b"x0", b"x1", b"x2"]


def test_write_behind_lets_the_bodys_own_error_through_after_its_writes():
    """An error raised in the body of ``with WriteBehind(...)`` goes on unchanged (a failed write does
    not replace it), and the writing thread has ended before the file under it is closed."""
    import io

    from neardup.io.compression import WriteBehind

    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(28, "No space left on device")

    fh = Full()
    with pytest.raises(KeyError):
        with WriteBehind(fh) as w:
            w.write(b"x")
            raise KeyError("the body's own")
    assert not w._thread.is_alive()
