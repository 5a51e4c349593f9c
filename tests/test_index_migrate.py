"""``neardup index migrate``: the SQLite index files of neardup 0.x (tests/data/legacy_sqlite, written
by that store before it became read-only; make.py.txt there) converted into index folders that answer
as those files did, and every way a migration can be pointed at the wrong thing or stopped."""
import gzip
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.errors import ConfigError
from neardup.index.disk import DiskIndex, IndexConfigError, open_index, open_index_class
from neardup.index.migrate import migrate_sqlite
from neardup.index.sqlite_legacy import LegacyIndexError
from neardup.index.store import IndexCorruptError, IndexStoreError, NotAnIndexError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "legacy_sqlite"
EXPECTED = json.loads((DATA / "expected.json").read_text())
KINDS = sorted(EXPECTED["indexes"])


@pytest.fixture(scope="module")
def texts():
    with gzip.open(ROOT / "examples" / "data" / "debian_copyright.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    return rows


def _queries(rows):
    texts = [r["text"] for r in rows]
    return texts[100:200] + [t[: len(t) // 2] for t in texts[:20]] + ["", "short text"]


def _key(k):
    return bytes.fromhex(k["bytes"]) if isinstance(k, dict) else k


def _keys_and_docs(rows):
    """The ids and texts the fixtures were built from (make.py.txt)."""
    docs = [r["text"] for r in rows[:150]]
    keys = [r["id"] for r in rows[:150]]
    keys[10], keys[11], keys[12] = 7, -(2**62), b"\x00raw\xffkey"
    docs[20] = ""
    return keys, docs


def _copy(tmp_path, kind) -> Path:
    old = tmp_path / f"{kind}.ndx"
    shutil.copyfile(DATA / f"{kind}.ndx", old)
    return old


def _beside(path: Path) -> list:
    return sorted(p.name for p in path.parent.iterdir())


@pytest.mark.parametrize("kind", KINDS)
def test_a_migrated_index_answers_as_the_sqlite_file_did(tmp_path, texts, kind):
    """Every fixture: the folder index holds the file's documents and configuration, answers the
    recorded queries exactly as neardup 0.x answered them from the SQLite file (ids of every type,
    scores, order), gives the recorded signatures, and answers as an index built today from the same
    texts by the same operations. The SQLite file is only read: its bytes unchanged, nothing made beside it."""
    want = EXPECTED["indexes"][kind]
    old = _copy(tmp_path, kind)
    before = old.read_bytes()
    res = CliRunner().invoke(main, ["index", "migrate", str(old), str(tmp_path / "new"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"documents": want["documents"], "kind": want["config"]["kind"],
                                      "new": str(tmp_path / "new"), "path": str(old)}
    assert old.read_bytes() == before and _beside(old) == sorted(["new", old.name])
    keys, docs = _keys_and_docs(texts)
    queries = _queries(texts)
    with open_index(tmp_path / "new", readonly=True) as idx:
        assert type(idx).__name__ == want["class"] and len(idx) == want["documents"]
        assert idx.config == want["config"]
        got = idx.query_batch(queries)
        if want["answers"] is not None:
            assert got == [[(_key(k), s) for k, s in a] for a in want["answers"]]
        for i, sig in want["signatures"].items():
            assert idx.get(keys[int(i)]).tolist() == sig
        assert keys[120] not in idx and keys[5] in idx
    cls = open_index_class(want["config"]["kind"])
    with cls._create(tmp_path / "rebuilt", want["config"], exist_ok=False, store=None, options={}) as fresh:
        fresh.add_batch(keys[:100], docs[:100])
        fresh.add_batch(keys[100:], docs[100:])
        fresh.remove(keys[5])
        fresh.remove(keys[120])
        fresh.add(keys[5], docs[5] + " changed at the end")
        rebuilt = fresh.query_batch(queries)
    assert rebuilt == got and sum(map(len, got)) > 100


def test_the_sqlite_file_is_refused_everywhere_else_naming_migrate(tmp_path):
    """Opening the file as an index — the library, `index query`, `dedup --index`, `serve` — is one
    line naming `neardup index migrate`, and nothing is written beside the file."""
    old = _copy(tmp_path, "minhash")
    for opener in (DiskIndex.open, open_index):
        with pytest.raises(LegacyIndexError, match="neardup index migrate"):
            opener(old)
    assert isinstance(LegacyIndexError("x"), NotAnIndexError)
    r = CliRunner().invoke(main, ["index", "query", str(old), "--text", "some text"])
    assert r.exit_code == 1 and "neardup index migrate" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["dedup", str(ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"),
                                  "--id-field", "id", "-o", str(tmp_path / "out"), "--index", str(old), "-q"])
    assert r.exit_code != 0 and "neardup index migrate" in r.output, r.output
    assert not (tmp_path / "out").exists()
    assert _beside(old) == [old.name]


def test_migrate_refuses_wrong_targets_and_writes_nothing(tmp_path):
    old = _copy(tmp_path, "simhash")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("the user's file")
    runner = CliRunner()
    r = runner.invoke(main, ["index", "migrate", str(old), str(taken)])
    assert r.exit_code == 1 and "already exists" in r.output
    assert [p.name for p in taken.iterdir()] == ["mine.txt"]
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        migrate_sqlite(old, link)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(FileExistsError):
        migrate_sqlite(old, afile)
    assert afile.read_text() == "x"
    empty = tmp_path / "empty"                    # an empty folder is taken, as index create takes one
    empty.mkdir()
    assert migrate_sqlite(old, empty)["documents"] == EXPECTED["indexes"]["simhash"]["documents"]
    # what migrate cannot read
    with pytest.raises(NotAnIndexError, match="needs no migration"):
        migrate_sqlite(empty, tmp_path / "n1")
    r = runner.invoke(main, ["index", "migrate", str(empty), str(tmp_path / "n1")])
    assert r.exit_code == 2 and "is a directory" in r.output
    text = tmp_path / "t.ndx"
    text.write_text("not a database\n" * 50)
    with pytest.raises(NotAnIndexError, match="not an SQLite database"):
        migrate_sqlite(text, tmp_path / "n2")
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(NotAnIndexError, match="application_id"):
        migrate_sqlite(other, tmp_path / "n3")
    with pytest.raises(FileNotFoundError):
        migrate_sqlite(tmp_path / "absent.ndx", tmp_path / "n4")
    assert not any((tmp_path / f"n{i}").exists() for i in range(1, 5))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".building")]


def _edit(path: Path, *sql):
    con = sqlite3.connect(path)
    for stmt in sql:
        con.execute(*stmt) if isinstance(stmt, tuple) else con.execute(stmt)
    con.commit()
    con.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


DAMAGES = {   # one SQL statement each: (statement, error, what its message says)
    "no-probe": ("DELETE FROM meta WHERE name = 'probe'", NotAnIndexError, "no probe signature"),
    "signature": ("UPDATE docs SET sig = x'0102' WHERE id = (SELECT max(id) FROM docs)", IndexCorruptError,
                  "signature of 2 bytes"),
    "config": ("UPDATE meta SET value = '{not json' WHERE name = 'config'", NotAnIndexError, "not JSON"),
    "config-number": ("UPDATE meta SET value = '1' WHERE name = 'config'", NotAnIndexError, "not a JSON object"),
    "config-integer": ("UPDATE meta SET value = 7 WHERE name = 'config'", NotAnIndexError, "not JSON"),
    "format": ("PRAGMA user_version = 7", NotAnIndexError, "format 7"),
    "id": ("UPDATE docs SET key = 1.5 WHERE id = (SELECT min(id) FROM docs) + 3", IndexCorruptError,
           "document 4: index keys"),
}


@pytest.mark.parametrize("damage", ["truncated", "probe", "config-lacks", "config-value", *DAMAGES])
def test_a_damaged_or_foreign_file_is_refused_and_leaves_no_new_index(tmp_path, damage):
    """Each damage stops the migration with one error naming the file, before the new index appears."""
    old = _copy(tmp_path, "minhash")
    if damage in DAMAGES:
        sql, err, match = DAMAGES[damage]
        _edit(old, sql)
    elif damage == "truncated":
        data = old.read_bytes()
        old.write_bytes(data[: len(data) // 2])
        err, match = (IndexStoreError, NotAnIndexError), str(old)
    elif damage == "probe":
        con = sqlite3.connect(old)
        probe = json.loads(con.execute("SELECT value FROM meta WHERE name = 'probe'").fetchone()[0])
        con.close()
        probe["signature"] = "00" * (len(probe["signature"]) // 2)
        _edit(old, ("UPDATE meta SET value = ? WHERE name = 'probe'", (json.dumps(probe),)))
        err, match = IndexConfigError, "probe signature mismatch"
    else:
        con = sqlite3.connect(old)
        config = json.loads(con.execute("SELECT value FROM meta WHERE name = 'config'").fetchone()[0])
        con.close()
        if damage == "config-lacks":
            del config["num_perm"]
        else:
            config["num_perm"] = -3
        _edit(old, ("UPDATE meta SET value = ? WHERE name = 'config'", (json.dumps(config),)))
        err, match = (NotAnIndexError, IndexConfigError), "num_perm"
    with pytest.raises(err, match=match) as exc:
        migrate_sqlite(old, tmp_path / "new")
    assert str(old) in str(exc.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == [old.name]      # no NEW, no temporary folder, no log
    r = CliRunner().invoke(main, ["index", "migrate", str(old), str(tmp_path / "new")])
    assert r.exit_code == 1 and r.output.startswith("Error: ") and len(r.output.strip().splitlines()) == 1, r.output
    assert str(old) in r.output and not (tmp_path / "new").exists()


def test_a_failure_midway_leaves_no_new_index_and_a_rerun_completes(tmp_path, monkeypatch):
    old = _copy(tmp_path, "minhash")
    calls = []
    real = DiskIndex._put_stored

    def failing(self, keys, raw, bulk=True):
        calls.append(len(keys))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, keys, raw, bulk)

    monkeypatch.setattr(DiskIndex, "_put_stored", failing)
    with pytest.raises(OSError, match="No space left"):
        migrate_sqlite(old, tmp_path / "new", batch=40)
    assert calls == [40, 40]
    assert sorted(p.name for p in tmp_path.iterdir()) == [old.name]
    monkeypatch.undo()
    assert migrate_sqlite(old, tmp_path / "new", batch=40)["documents"] == 149
    with open_index(tmp_path / "new", readonly=True) as idx:
        assert len(idx) == 149


KILLED = textwrap.dedent("""
    import sys, time
    from neardup.index.disk import BaseDiskIndex
    from neardup.index.migrate import migrate_sqlite
    real = BaseDiskIndex._put_stored
    def slow(self, keys, raw, bulk=True):
        real(self, keys, raw, bulk)
        print("batch", flush=True)
        time.sleep(60)
    BaseDiskIndex._put_stored = slow
    migrate_sqlite(sys.argv[1], sys.argv[2], batch=40)
""")


def test_a_killed_migration_leaves_no_new_index(tmp_path):
    """kill -9 after the first batch is written: NEW does not exist (only the temporary folder the
    migration built, under its own name), the file is unchanged, and migrating again completes."""
    old = _copy(tmp_path, "simhash")
    before = old.read_bytes()
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    proc = subprocess.Popen([sys.executable, str(script), str(old), str(tmp_path / "new")], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "batch"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert not (tmp_path / "new").exists() and old.read_bytes() == before
    assert migrate_sqlite(old, tmp_path / "new")["documents"] == 149


def _remove_newest_in_the_log(old: Path):
    """Remove the newest document of ``old`` as neardup 0.x's writer would, its write left in the
    SQLite log (no checkpoint): (the open connection, which holds the log, and the removed id)."""
    con = sqlite3.connect(old)
    con.execute("PRAGMA wal_autocheckpoint=0")
    gone = con.execute("SELECT key FROM docs ORDER BY id DESC LIMIT 1").fetchone()[0]
    con.execute("DELETE FROM bands WHERE doc = (SELECT max(id) FROM docs)")
    con.execute("DELETE FROM docs WHERE id = (SELECT max(id) FROM docs)")
    con.commit()
    return con, gone


def test_pending_writes_in_the_files_log_are_migrated(tmp_path):
    """A file with writes still in its SQLite log (a neardup 0.x writer that has not checkpointed):
    the migration reads through the log, in one snapshot."""
    old = _copy(tmp_path, "minhash")
    con, gone = _remove_newest_in_the_log(old)
    try:
        assert Path(f"{old}-wal").stat().st_size > 0
        assert migrate_sqlite(old, tmp_path / "new")["documents"] == 148
    finally:
        con.close()
    with open_index(tmp_path / "new", readonly=True) as idx:
        assert len(idx) == 148 and gone not in idx


def test_a_log_no_process_holds_is_read_from_a_private_copy(tmp_path):
    """A writer of neardup 0.x that stopped before checkpointing leaves the file and its log but no
    shared-memory file: the migration reads the log's writes (recovered in a private copy) and makes
    nothing beside the file; an empty log is read past (immutable)."""
    live = tmp_path / "live"
    live.mkdir()
    old = _copy(live, "minhash")
    con, gone = _remove_newest_in_the_log(old)
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    shutil.copyfile(old, stopped / old.name)                       # what a killed writer leaves: file and log
    shutil.copyfile(f"{old}-wal", stopped / f"{old.name}-wal")
    con.close()
    before = sorted((p.name, p.read_bytes()) for p in stopped.iterdir())
    assert migrate_sqlite(stopped / old.name, tmp_path / "new")["documents"] == 148
    assert sorted((p.name, p.read_bytes()) for p in stopped.iterdir()) == before
    with open_index(tmp_path / "new", readonly=True) as idx:
        assert len(idx) == 148 and gone not in idx
    empty_log = tmp_path / "empty-log"
    empty_log.mkdir()
    other = _copy(empty_log, "simhash")
    Path(f"{other}-wal").write_bytes(b"")
    assert migrate_sqlite(other, tmp_path / "new2")["documents"] == 149
    assert sorted(p.name for p in empty_log.iterdir()) == [other.name, f"{other.name}-wal"]


def test_commands_that_read_index_folders_refuse_the_file_naming_migrate(tmp_path):
    old = _copy(tmp_path, "minhash")
    for args in (["index", "verify", str(old)], ["index", "backup", str(old), str(tmp_path / "copy")],
                 ["index", "stats", str(old)], ["index", "compact", str(old)],
                 ["index", "export", str(old), "-o", str(tmp_path / "x.parquet")], ["serve", "--index", str(old)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 1 and "neardup index migrate" in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, (args, r.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == [old.name]
    with pytest.raises(ConfigError, match="batch"):
        migrate_sqlite(old, tmp_path / "n", batch=0)
    r = CliRunner().invoke(main, ["index", "migrate", str(old), ""])
    assert r.exit_code == 2 and "empty" in r.output


def test_batches_keep_the_order_documents_were_added(tmp_path, texts):
    """Migrated in batches of 7 (22 segments): the same answers as in one batch — the document ids
    follow the file's, so ties still go to the older document."""
    old = _copy(tmp_path, "minhash")
    migrate_sqlite(old, tmp_path / "one")
    migrate_sqlite(old, tmp_path / "many", batch=7)
    queries = _queries(texts)
    with open_index(tmp_path / "one", readonly=True) as a, open_index(tmp_path / "many", readonly=True) as b:
        assert b.stats()["segments"] == 22
        assert a.query_batch(queries) == b.query_batch(queries)
        ids = a.store.live_ids()
        ka, ra = a.store.fetch_arrays(ids)
        kb, rb = b.store.fetch_arrays(b.store.live_ids())
        assert ka == kb and np.array_equal(ra, rb)
