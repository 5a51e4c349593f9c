"""The SQLite index file of neardup 0.x, read (never written) so that ``neardup index migrate``
can convert it into the folder store (:mod:`neardup.index.segments`).

Such a file is one SQLite database in WAL mode, marked by ``PRAGMA application_id`` =
:data:`APPLICATION_ID` ("NDXI") and ``user_version`` = :data:`FORMAT_VERSION`, with three tables:
``meta(name, value)`` (the index's configuration, its probe signature, the document counter),
``docs(id, key, sig, bands)`` (``id`` the insertion order, ``key`` a str, int or bytes id, ``sig``
the little-endian signature bytes) and ``bands(band, key, doc)``. A migration needs only ``meta``
and ``docs``: the band keys are computed again from the signatures. It reads the documents in
``id`` order inside one read transaction, so the new index holds them in the order they were added
(its "oldest first" tie-break unchanged) and a writer of the old neardup running meanwhile is not
seen half-way.

Nothing is made beside the file. With no log beside it, or an empty one, and no process holding it
(no shared-memory file), it is opened *immutable*: read as it is. With a shared-memory file there (a
process of neardup 0.x has it open, or left it), SQLite reads through the log (``mode=ro``). A log
that no process holds (a writer that stopped before checkpointing) is copied with the file into a
private temporary folder, where SQLite recovers it, and the copy is read (and removed at the end).
"""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import ConfigError
from .store import IndexCorruptError, IndexStoreError, NotAnIndexError

APPLICATION_ID = 0x4E445849   # "NDXI" in the SQLite header: the file is a neardup index
FORMAT_VERSION = 1            # PRAGMA user_version of the only layout neardup 0.x wrote
MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


class LegacyIndexError(NotAnIndexError):
    """An index in neardup 0.x's SQLite file format: this neardup opens it only to migrate it."""


def is_sqlite_file(path) -> bool:
    """Whether ``path`` is a regular file that starts as an SQLite database does."""
    p = Path(path)
    try:
        if not p.is_file():
            return False
        with open(p, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def legacy_refusal(path) -> NotAnIndexError:
    """The error for opening ``path`` (an SQLite file) as an index: :class:`LegacyIndexError` with the
    command that converts it, or :class:`NotAnIndexError` when it is not a neardup index at all."""
    with LegacySQLiteIndex.open(path):
        pass
    return LegacyIndexError(f"{path} is an index in neardup 0.x's SQLite format, which this neardup reads only to "
                            f"convert it: run `neardup index migrate {path} NEW` and use the folder NEW")


class LegacySQLiteIndex:
    """A read-only view of an SQLite index file: its metadata, document count and documents."""

    def __init__(self, conn: sqlite3.Connection, path: Path, tmp: Path | None = None):
        self._conn = conn
        self.path = path
        self._tmp = tmp         # the private copy read instead of a file with an unheld log

    @classmethod
    def open(cls, path) -> LegacySQLiteIndex:
        """:class:`NotAnIndexError` for a file that is not a neardup SQLite index (another database, or
        not a database); :class:`IndexStoreError` when SQLite cannot read it (naming the file)."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"no SQLite index file at {p}")
        log, shm = Path(f"{p}-wal"), Path(f"{p}-shm")
        tmp = None
        if shm.exists():        # a process has it open (or left its shared memory): read through its log
            source, mode = p, "?mode=ro"
        elif not log.exists() or log.stat().st_size == 0:
            source, mode = p, "?mode=ro&immutable=1"     # nothing pending: read as it is, nothing made beside it
        else:                   # a log no process holds: SQLite recovers it into a copy, never beside the file
            tmp = Path(tempfile.mkdtemp(prefix="neardup-migrate-"))
            source, mode = tmp / p.name, "?mode=ro"
            try:
                shutil.copyfile(p, source)
                shutil.copyfile(log, f"{source}-wal")
            except OSError as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                raise IndexStoreError(f"{p}: cannot copy it and its log {log.name} to read them "
                                      f"({exc.strerror or exc})") from None
        try:
            conn = sqlite3.connect(source.absolute().as_uri() + mode, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise IndexStoreError(f"{p}: {exc}") from None
        self = cls(conn, p, tmp)
        try:
            try:
                app = conn.execute("PRAGMA application_id").fetchone()[0]
                ver = conn.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.DatabaseError as exc:
                if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB" or "not a database" in str(exc):
                    raise NotAnIndexError(f"{p} is not a neardup index (not an SQLite database)") from None
                raise IndexStoreError(f"{p}: {exc}") from None
            if app != APPLICATION_ID:
                raise NotAnIndexError(f"{p} is not a neardup index (SQLite application_id {app:#x})")
            if ver != FORMAT_VERSION:
                raise NotAnIndexError(f"{p} is a neardup SQLite index of format {ver}; this neardup reads format "
                                      f"{FORMAT_VERSION}")
        except BaseException:
            self.close()
            raise
        return self

    def _read(self, sql: str, args=()) -> list:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise IndexStoreError(f"{self.path}: {exc}") from None

    def meta(self, name: str):
        """The metadata entry ``name`` (None when absent)."""
        rows = self._read("SELECT value FROM meta WHERE name = ?", (name,))
        return rows[0][0] if rows else None

    def documents(self, batch: int = 65536) -> Iterator[tuple[list, list[bytes]]]:
        """(keys, signature bytes) of every document, ``batch`` (≥ 1) at a time, in the order they were
        added; all of them read from one snapshot of the file (one read transaction), and as many as
        the file counts in it (else :class:`IndexCorruptError`)."""
        if not isinstance(batch, int) or batch < 1:
            raise ConfigError(f"batch must be a positive integer, got {batch!r}")
        self._read("BEGIN")
        try:
            total = int(self._read("SELECT count(*) FROM docs")[0][0])
            last, seen = -(2 ** 63), 0
            while True:
                rows = self._read("SELECT id, key, sig FROM docs WHERE id > ? ORDER BY id LIMIT ?", (last, batch))
                if not rows:
                    break
                last = rows[-1][0]
                seen += len(rows)
                yield [r[1] for r in rows], [r[2] for r in rows]
            if seen != total:
                raise IndexCorruptError(f"{self.path}: {seen} documents read of the {total} it counts")
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> LegacySQLiteIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
