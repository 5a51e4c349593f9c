"""dedup --resume: pass 1 checkpointed beside OUTDIR, a run killed after it continues from it with
the outputs of an uninterrupted run; a changed input or parameter, a pipe, the span methods and a
corrupt checkpoint are refused with the reason; the checkpoint goes when the outputs are in place."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hostile import cli

from neardup import ConfigError, DedupConfig, run_dedup
from neardup.dedup.resume import checkpoint_dir

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"


def _cfg(**kw) -> DedupConfig:
    return DedupConfig(**{"workers": 1, "quiet": True, "html": False, "id_field": "id", **kw})


def _outputs(out: Path) -> dict:
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
             if p.is_file() and p.name not in ("report.json", "report.html") and not p.name.startswith(".neardup")}
    return {"files": files, "counts": rep["counts"], "clusters": rep["cluster_sizes"]}


KILL = textwrap.dedent("""
    import os, signal, sys
    from neardup.config import DedupConfig
    from neardup.dedup import resume
    from neardup.engines.local import run as dedup

    point = sys.argv[1]
    def die(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)
    if point == "sign":                       # part-way through pass 1: nothing to resume from
        orig = dedup._read
        dedup._read = lambda *a, **k: die()
    elif point == "after-checkpoint":         # pass 1 saved, nothing else done
        orig = resume.save
        resume.save = lambda *a, **k: (orig(*a, **k), die())
    elif point == "write":                    # the outputs being written
        dedup.write_clusters = die
    cfg = DedupConfig(workers=1, quiet=True, html=False, id_field="id", resume=True,
                      verify=sys.argv[4])
    dedup.run_dedup([sys.argv[2]], sys.argv[3], cfg)
    print("finished")
""")


@pytest.mark.parametrize("point, verify", [("sign", "borderline"), ("after-checkpoint", "borderline"),
                                           ("after-checkpoint", "exact"), ("write", "borderline")])
def test_killed_run_resumes_to_the_uninterrupted_outputs(tmp_path, point, verify):
    ref = tmp_path / "ref"
    run_dedup([str(DEMO)], str(ref), _cfg(verify=verify))
    script = tmp_path / "kill.py"
    script.write_text(KILL)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(script), point, str(DEMO), str(out), verify], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    ck = Path(checkpoint_dir(str(out)))
    assert ck.is_dir() == (point != "sign")
    assert not (out / "report.json").exists()
    rep = run_dedup([str(DEMO)], str(out), _cfg(verify=verify, resume=True))
    assert ("resume_load" in rep["timings"]) == (point != "sign")
    assert _outputs(out) == _outputs(ref)
    assert not ck.exists()                                       # removed once the outputs are in place
    assert not any(p.name.startswith(".out.neardup-resume") for p in tmp_path.iterdir())


def _checkpointed(tmp_path, src: Path, cfg: DedupConfig | None = None) -> Path:
    """A run with --resume stopped right after its checkpoint (in-process: save, then an exception)."""
    import neardup.dedup.resume as resume

    out = tmp_path / "out"
    orig = resume.save

    def save_then_fail(*a, **k):
        assert orig(*a, **k)
        raise KeyboardInterrupt

    resume.save = save_then_fail
    try:
        with pytest.raises(KeyboardInterrupt):
            run_dedup([str(src)], str(out), cfg or _cfg(resume=True))
    finally:
        resume.save = orig
    assert Path(checkpoint_dir(str(out))).is_dir()
    return out


def test_a_checkpoint_of_another_run_is_refused_naming_why(tmp_path):
    src = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": i, "text": f"document number {i} " * 20}) for i in range(50)]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = _checkpointed(tmp_path, src)
    with pytest.raises(ConfigError, match=r"made with threshold=0\.8, this run has threshold=0\.7"):
        run_dedup([str(src)], str(out), _cfg(resume=True, threshold=0.7))
    st = os.stat(src)
    src.write_text("\n".join(lines[:-1] + [lines[-1].replace("document", "Document")]) + "\n", encoding="utf-8")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))          # same size and time: the content tells
    with pytest.raises(ConfigError, match=r"input .*in\.jsonl changed since \(its content differs\)"):
        run_dedup([str(src)], str(out), _cfg(resume=True))
    assert not (out / "report.json").exists()
    rep = run_dedup([str(src)], str(out), _cfg())                # without --resume: a fresh run, as always
    assert rep["counts"]["documents"] == 50


def test_a_corrupt_checkpoint_is_refused(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": f"text {i} " * 9}) + "\n" for i in range(20)), encoding="utf-8")
    out = _checkpointed(tmp_path, src)
    (Path(checkpoint_dir(str(out))) / "arrays.npz").write_bytes(b"not an npz")
    with pytest.raises(ConfigError, match="cannot be read"):
        run_dedup([str(src)], str(out), _cfg(resume=True))


def test_resume_refusals(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, "text": "a b c d e f"}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="-o - has none"):
        run_dedup([str(src)], "-", _cfg(resume=True))
    with pytest.raises(ConfigError, match="resume"):
        run_dedup([str(src)], str(tmp_path / "o"), _cfg(resume=True, method="lines"))
    with pytest.raises(ConfigError, match="not resumable"):
        run_dedup([str(src)], str(tmp_path / "o"), _cfg(resume=True, spans="lines"))
    code, _, err = cli("dedup", "-", "-o", tmp_path / "p", "--resume", input=b'{"text": "x y z"}\n')
    assert code != 0 and "is a pipe" in err
    code, _, err = cli("dedup", src, "-o", tmp_path / "q", "--resume", "-q")      # the flag, end to end
    assert code == 0, err
    assert not Path(checkpoint_dir(str(tmp_path / "q"))).exists()


def test_resume_with_unreadable_folder_entries_list_ids_and_a_stale_checkpoint(tmp_path):
    """A folder holding a dangling link and a FIFO (skipped rows with --on-error skip) checkpoints
    without opening them; ids that are JSON lists come back as lists; a later successful run without
    --resume removes a checkpoint it did not use."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha beta gamma delta epsilon zeta\nalpha beta gamma delta epsilon zeta\n")
    os.symlink(tmp_path / "nowhere", folder / "b.txt")
    os.mkfifo(folder / "c.txt")
    kw = dict(workers=1, quiet=True, html=False, on_error="skip")
    ref = run_dedup([str(folder)], str(tmp_path / "ref"), DedupConfig(**kw))
    out = _checkpointed(tmp_path, folder, DedupConfig(resume=True, **kw))
    rep = run_dedup([str(folder)], str(out), DedupConfig(resume=True, **kw))
    assert "resume_load" in rep["timings"] and rep["counts"] == ref["counts"]
    assert (out / "clusters.jsonl").read_bytes() == (tmp_path / "ref" / "clusters.jsonl").read_bytes()
    # list ids survive the checkpoint; a run without --resume removes a stale checkpoint
    src = tmp_path / "ids.jsonl"
    src.write_text("".join(json.dumps({"id": [i, "x"], "text": f"row {i % 3} " * 12}) + "\n" for i in range(9)),
                   encoding="utf-8")
    (tmp_path / "ids").mkdir()
    out2 = _checkpointed(tmp_path / "ids", src)
    rep = run_dedup([str(src)], str(out2), _cfg(resume=True))
    assert "resume_load" in rep["timings"]
    ref2 = run_dedup([str(src)], str(tmp_path / "ref2"), _cfg())
    assert (out2 / "clusters.jsonl").read_bytes() == (tmp_path / "ref2" / "clusters.jsonl").read_bytes()
    assert ref2["counts"]["removed"] == 6
    (tmp_path / "stale").mkdir()
    out3 = _checkpointed(tmp_path / "stale", src)
    run_dedup([str(src)], str(out3), _cfg())
    assert not Path(checkpoint_dir(str(out3))).exists()


PART_KILL = textwrap.dedent("""
    import os, signal, sys
    from neardup.config import DedupConfig
    from neardup.dedup import resume
    from neardup.engines.local import run as dedup

    inputs, out, part_bytes, after, n_workers, batch = sys.argv[1:7]
    os.environ["NEARDUP_RESUME_PART_MB"] = str(int(part_bytes) / 2**20)
    orig = resume.Parts._write
    def write(self, number, *a, **k):         # killed once `after` parts of pass 1 are on disk
        done = orig(self, number, *a, **k)
        if number >= int(after):
            os.kill(os.getpid(), signal.SIGKILL)
        return done
    resume.Parts._write = write
    cfg = DedupConfig(workers=int(n_workers), quiet=True, html=False, id_field="id", resume=True,
                      batch_size=int(batch))
    dedup.run_dedup(inputs.split(","), out, cfg)
    print("finished")
""")


def _inputs(tmp_path: Path, kind: str) -> list[str]:
    """The demo corpus as uncompressed JSON lines with integer ids (a file the workers read by byte
    offsets), gzip (read in blocks by this process), CSV (parsed row by row here) or two files (ids
    of two types)."""
    import csv
    import gzip

    rows = [json.loads(line) for line in gzip.open(DEMO, "rt", encoding="utf-8")]
    plain = tmp_path / "in.jsonl"
    plain.write_text("".join(json.dumps(dict(r, id=k)) + "\n" for k, r in enumerate(rows)), encoding="utf-8")
    if kind == "plain":
        return [str(plain)]
    if kind == "gz":
        return [str(DEMO)]
    if kind == "csv":
        path = tmp_path / "in.csv"
        with open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "text"])
            w.writerows([r["id"], r["text"]] for r in rows)
        return [str(path)]
    second = tmp_path / "second.jsonl"
    second.write_text("".join(json.dumps(dict(r, id="second-" + str(r["id"]))) + "\n" for r in rows), encoding="utf-8")
    return [str(plain), str(second)]


@pytest.mark.parametrize("kind, part_bytes, after, n_workers, batch", [
    ("plain", 300_000, 3, 2, 16), ("plain", 300_000, 1, 1, 7), ("gz", 250_000, 4, 2, 16),
    ("csv", 250_000, 2, 1, 16), ("two", 400_000, 9, 2, 32)])
def test_a_run_killed_while_signing_goes_on_from_its_parts(tmp_path, kind, part_bytes, after, n_workers, batch):
    """Killed with SIGKILL part-way through pass 1 (after some checkpoint parts are on disk, batches
    in flight): the resumed run takes the parts, reads on from where they end — at a byte offset,
    inside a block of other bounds (another --batch-size), past the rows of a parsed file, in the
    second input — and gives the outputs of an uninterrupted run."""
    inputs = _inputs(tmp_path, kind)
    ref = tmp_path / "ref"
    run_dedup(inputs, str(ref), _cfg())
    script = tmp_path / "kill.py"
    script.write_text(PART_KILL)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(script), ",".join(inputs), str(out), str(part_bytes), str(after),
                          str(n_workers), str(batch)], capture_output=True, text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    ck = Path(checkpoint_dir(str(out)))
    parts = sorted(p.name for p in ck.iterdir() if p.name != ".neardup-checkpoint")
    assert parts == [f"part-{k:06d}" for k in range(1, after + 1)]
    rep = run_dedup(inputs, str(out), _cfg(resume=True, batch_size=5, workers=n_workers))
    assert 0 < rep["timings"]["resume_rows"] < rep["counts"]["input_rows"]
    assert "resume_load" not in rep["timings"]
    assert _outputs(out) == _outputs(ref)
    assert not ck.exists()


def _parted(tmp_path: Path, after: int = 3) -> tuple[list[str], Path]:
    inputs = _inputs(tmp_path, "plain")
    script = tmp_path / "kill.py"
    script.write_text(PART_KILL)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(script), inputs[0], str(out), "300000", str(after), "1", "16"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    return inputs, out


def test_parts_of_a_changed_input_or_with_a_gap_are_refused(tmp_path):
    inputs, out = _parted(tmp_path)
    ck = Path(checkpoint_dir(str(out)))
    with pytest.raises(ConfigError, match=r"made with threshold=0\.8, this run has threshold=0\.7"):
        run_dedup(inputs, str(out), _cfg(resume=True, threshold=0.7))
    (ck / "part-000002").rename(ck / "gone")
    with pytest.raises(ConfigError, match="misses a part before part-000003"):
        run_dedup(inputs, str(out), _cfg(resume=True))
    (ck / "gone" / "values.npy").write_bytes(b"not an npy")
    (ck / "gone").rename(ck / "part-000002")
    with pytest.raises(ConfigError, match="part-000002 cannot be read"):
        run_dedup(inputs, str(out), _cfg(resume=True))
    with open(inputs[0], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": 99999, "text": "one more line"}) + "\n")
    with pytest.raises(ConfigError, match=r"in\.jsonl changed since \(its size differs\)"):
        run_dedup(inputs, str(out), _cfg(resume=True))
    assert not (out / "report.json").exists()


def test_a_bad_part_size_is_refused(tmp_path, monkeypatch):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, "text": "a b c d e f"}) + "\n", encoding="utf-8")
    for bad in ("zero", "0", "-1", "nan"):
        monkeypatch.setenv("NEARDUP_RESUME_PART_MB", bad)
        with pytest.raises(ConfigError, match="NEARDUP_RESUME_PART_MB must be a positive number of MiB"):
            run_dedup([str(src)], str(tmp_path / "o"), _cfg(resume=True))
    monkeypatch.setenv("NEARDUP_RESUME_PART_MB", "0.001")
    rep = run_dedup([str(src)], str(tmp_path / "o"), _cfg(resume=True))
    assert rep["counts"]["documents"] == 1


def test_a_change_past_the_first_mib_at_the_same_size_and_time_is_refused(tmp_path):
    """The checkpoint is bound to every byte of the input, not to its first MiB (a change at the end
    of a 2 MiB input, same size and modification time, was accepted and changed the results)."""
    src = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": i, "text": f"document number {i} about topic {i % 97} " * 12}) for i in range(6000)]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert src.stat().st_size > 2 << 20
    out = _checkpointed(tmp_path, src)
    st = os.stat(src)
    data = bytearray(src.read_bytes())
    at = len(data) - 100
    data[at] = ord("X") if data[at] != ord("X") else ord("Y")
    src.write_bytes(bytes(data))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(src).st_size == st.st_size and os.stat(src).st_mtime_ns == st.st_mtime_ns
    with pytest.raises(ConfigError, match=r"in\.jsonl changed since \(its content differs\)"):
        run_dedup([str(src)], str(out), _cfg(resume=True))


def test_a_users_folder_with_the_checkpoints_name_is_never_replaced_or_removed(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": f"text {i} " * 9}) + "\n" for i in range(20)), encoding="utf-8")
    out = tmp_path / "out"
    mine = Path(checkpoint_dir(str(out)))
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(ConfigError, match="is not a neardup checkpoint"):
        run_dedup([str(src)], str(out), _cfg(resume=True))
    code, _, err = cli("dedup", src, "-o", out, "--resume", "-q")
    assert code != 0 and "not a neardup checkpoint" in err and "Traceback" not in err
    rep = run_dedup([str(src)], str(out), _cfg())          # a run without --resume leaves it too
    assert rep["counts"]["documents"] == 20
    assert (mine / "notes.txt").read_text() == "my notes"
    (mine / "notes.txt").unlink()
    mine.rmdir()
    mine.symlink_to(tmp_path)                               # a link of that name: not followed, not removed
    with pytest.raises(ConfigError, match="is not a neardup checkpoint"):
        run_dedup([str(src)], str(out), _cfg(resume=True))
    run_dedup([str(src)], str(out), _cfg())
    assert mine.is_symlink() and src.exists()
