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

The file is opened read-only and, when it has no log beside it (no writer has it open and nothing is
pending), *immutable*: read as it is, with no shared-memory or log file made beside it. With a log
there, SQLite reads through it (``mode=ro``); in a folder this process cannot write, where SQLite
cannot make the shared-memory file that needs, the file is refused naming the log.
"""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .store import IndexStoreError, NotAnIndexError

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

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, path) -> LegacySQLiteIndex:
        """:class:`NotAnIndexError` for a file that is not a neardup SQLite index (another database, or
        not a database); :class:`IndexStoreError` when SQLite cannot read it (naming the file)."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"no SQLite index file at {p}")
        log = Path(f"{p}-wal")
        if not log.exists():
            immutable = "&immutable=1"      # no writer, nothing pending: read as it is, nothing made beside it
        elif not os.access(p.parent if str(p.parent) else ".", os.W_OK) and log.stat().st_size > 0 \
                and not Path(f"{p}-shm").exists():
            raise IndexStoreError(f"{p}: cannot read it here: the folder is not writable and the index has "
                                  f"writes not yet checkpointed in {log.name}; open it once with neardup 0.x "
                                  "with write access, or copy the file and its log to a writable folder")
        else:
            immutable = ""
        try:
            conn = sqlite3.connect(p.absolute().as_uri() + "?mode=ro" + immutable, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            raise IndexStoreError(f"{p}: {exc}") from None
        try:
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            ver = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB" or "not a database" in str(exc):
                raise NotAnIndexError(f"{p} is not a neardup index (not an SQLite database)") from None
            raise IndexStoreError(f"{p}: {exc}") from None
        if app != APPLICATION_ID:
            conn.close()
            raise NotAnIndexError(f"{p} is not a neardup index (SQLite application_id {app:#x})")
        if ver != FORMAT_VERSION:
            conn.close()
            raise NotAnIndexError(f"{p} is a neardup SQLite index of format {ver}; this neardup reads format "
                                  f"{FORMAT_VERSION}")
        return cls(conn, p)

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
        """(keys, signature bytes) of every document, ``batch`` at a time, in the order they were added;
        all of them read from one snapshot of the file (one read transaction)."""
        self._read("BEGIN")
        try:
            last = -(2 ** 63)
            while True:
                rows = self._read("SELECT id, key, sig FROM docs WHERE id > ? ORDER BY id LIMIT ?", (last, batch))
                if not rows:
                    return
                last = rows[-1][0]
                yield [r[1] for r in rows], [r[2] for r in rows]
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def count(self) -> int:
        """The documents in the file (counted, not the stored counter)."""
        return int(self._read("SELECT count(*) FROM docs")[0][0])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> LegacySQLiteIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
