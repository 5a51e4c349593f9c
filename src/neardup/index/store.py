"""Storage behind :class:`neardup.index.disk.DiskIndex`: the interface, and SQLite as the default.

A store holds, per document, a user key (``str``, ``int`` or ``bytes``; unique), its signature as
opaque bytes, and its b band keys (uint64). It answers "which documents have band i equal to key
x". The index does hashing and verification; the store only has to keep these three things
consistent with each other. What any store must guarantee:

* :meth:`IndexStore.put_batch` and :meth:`IndexStore.delete` are atomic: after a crash a batch is
  there entirely (document row and all its band rows) or not at all;
* reads inside :meth:`IndexStore.snapshot` see one committed state, never half of a write.

To add another backend (LMDB, RocksDB, Postgres, ...) subclass :class:`IndexStore` and pass the
class as ``store=`` to ``DiskIndex.create`` / ``DiskIndex.open``.
"""
from __future__ import annotations

import abc
import errno
import functools
import os
import re
import secrets
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import ConfigError, NeardupError

APPLICATION_ID = 0x4E445849   # "NDXI" in the SQLite header: marks the file as a neardup index
FORMAT_VERSION = 1            # PRAGMA user_version: the layout below
SYNCHRONOUS = ("NORMAL", "FULL")


class NotAnIndexError(NeardupError, ValueError):
    """The file exists but is not a neardup index (or is one of an unknown format)."""


class IndexStoreError(NeardupError, sqlite3.OperationalError):
    """SQLite failed on an index file (locked too long, disk full, read-only, corrupt page); the
    message names the file. Still a ``sqlite3.OperationalError`` for code that catches those."""


def _named(method):
    """SQLite's errors of a store method, raised again naming the index file."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (IndexStoreError, NotAnIndexError):
            raise
        except sqlite3.Error as exc:
            raise IndexStoreError(f"{self.path}: {exc}") from exc
    return wrapper


class IndexCorruptError(IndexStoreError):
    """An index file whose bytes do not verify (a checksum, a size, a record's structure): the
    message names the file and, in a log, the record and its byte offset. Nothing is repaired or
    dropped silently; ``neardup index verify IDX --repair NEW`` salvages what verifies."""


class DuplicateKeyError(NeardupError, ValueError):
    """A key being added is already in the index (or twice in the batch)."""


class ReadOnlyError(NeardupError, PermissionError):
    """A write on an index opened with ``readonly=True``."""


class InvalidKeyError(NeardupError, TypeError, ValueError):
    """A document id the index cannot hold (the one rule, :func:`check_key`): still a ``TypeError``
    (wrong type) and a ``ValueError`` (out of range) for code that catches those."""


MAX_KEY_BYTES = 4096          # a key's UTF-8 (or raw) bytes at most: ids are names, not documents (and one,
                              # percent-encoded, still fits in a URL the service reads: /v1/docs/{id})


def check_key(key, where: str = ""):
    """The one rule for document ids, shared by the library, every command and the service: an id is
    a ``str`` (any characters, the empty string and ``/`` included; lone surrogates kept), ``bytes``,
    or an ``int`` in the signed 64-bit range (not ``bool``), of at most :data:`MAX_KEY_BYTES` bytes;
    ``1`` and ``"1"`` are different ids. Anything else is :class:`InvalidKeyError` naming ``where``
    (e.g. ``"rows.jsonl:7"``) and the value."""
    at = f"{where}: " if where else ""
    if isinstance(key, bool) or not isinstance(key, (str, bytes, int, np.integer)):
        shown = repr(key)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InvalidKeyError(f"{at}index keys (ids) must be str, bytes or int, got {type(key).__name__} {shown}")
    if isinstance(key, (int, np.integer)):
        key = int(key)
        if not -2**63 <= key < 2**63:
            shown = str(key) if key.bit_length() < 200 else f"an integer of {key.bit_length()} bits"
            raise InvalidKeyError(f"{at}integer keys (ids) must fit in 64 bits (signed), got {shown}")
    elif len(key) > MAX_KEY_BYTES // 4 and len(key.encode("utf-8", "surrogatepass") if isinstance(key, str)
                                              else key) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"{at}an id of more than {MAX_KEY_BYTES} bytes: ids are names, not texts")
    return key


def key_candidates(raw: str) -> list:
    """The ids a user may mean by the text ``raw`` (a command-line argument, a URL's path or query):
    the string itself, then — when it spells a decimal integer in the signed 64-bit range (ASCII
    digits, an optional minus) — that integer. Never raises: any text is a string id."""
    out = [raw]
    if re.fullmatch(r"-?[0-9]{1,19}", raw) and -2**63 <= int(raw) < 2**63:
        out.append(int(raw))
    return out


def check_batch(keys, signatures, band_keys, banded):
    """A batch for :meth:`IndexStore.put_batch`, checked: (keys, (n, b) uint64 band keys, banded);
    :class:`DuplicateKeyError` for a key given twice."""
    keys = [check_key(k) for k in keys]
    n = len(keys)
    band_keys = np.asarray(band_keys, dtype=np.uint64)
    if len(signatures) != n or band_keys.ndim != 2 or band_keys.shape[0] != n:
        raise ConfigError(f"put_batch: {n} keys, {len(signatures)} signatures, band keys "
                          f"{band_keys.shape} — need one of each per document")
    banded = np.ones(n, dtype=bool) if banded is None else np.asarray(banded, dtype=bool)
    if len(set(keys)) != n:
        seen, twice = set(), []
        for k in keys:
            if k in seen:
                twice.append(k)
            seen.add(k)
        raise DuplicateKeyError(f"keys repeated within the batch: {twice[:5]!r}")
    return keys, band_keys, banded


class IndexStore(abc.ABC):
    """What the disk index needs from storage. Document ids are store-assigned positive ints;
    ``path`` and ``readonly`` are attributes; ``**options`` of ``create``/``open`` are the
    store's own (the index passes ``synchronous=``, which a store may map or ignore)."""

    readonly: bool = False

    @classmethod
    @abc.abstractmethod
    def create(cls, path, meta: Mapping[str, object], **options) -> IndexStore:
        """A new, empty store at ``path`` holding ``meta``, created atomically."""

    @classmethod
    @abc.abstractmethod
    def open(cls, path, readonly: bool = False, **options) -> IndexStore:
        """An existing store; :class:`NotAnIndexError` if ``path`` is not one."""

    @abc.abstractmethod
    def put_batch(self, keys: Sequence, signatures: Sequence[bytes], band_keys: np.ndarray,
                  banded: np.ndarray | None = None, replace: bool = False) -> None:
        """Add documents in one transaction. ``band_keys`` is (n, b) uint64; rows where ``banded``
        is False get no band rows (empty documents). Raises :class:`DuplicateKeyError` (and adds
        nothing) when a key exists, unless ``replace`` — then the old document goes first."""

    @abc.abstractmethod
    def delete(self, keys: Sequence) -> int:
        """Remove documents and their band rows in one transaction; returns how many existed."""

    @abc.abstractmethod
    def candidates(self, band_keys: np.ndarray) -> list[np.ndarray]:
        """For each row of (q, b) uint64 band keys: the sorted ids of documents sharing any band."""

    @abc.abstractmethod
    def fetch(self, ids: Sequence[int]) -> tuple[list, list[bytes]]:
        """Keys and signatures of documents ``ids``, in that order."""

    @abc.abstractmethod
    def contains(self, key) -> bool: ...

    @abc.abstractmethod
    def get_meta(self, name: str): ...

    @abc.abstractmethod
    def set_meta(self, items: Mapping[str, object]) -> None:
        """Set several metadata entries atomically."""

    @abc.abstractmethod
    def count(self) -> int:
        """Number of documents."""

    @abc.abstractmethod
    def snapshot(self):
        """Context manager: every read inside sees the same committed state."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def check(self) -> dict:
        """Consistency report (optional): counts, orphan band rows, documents missing band rows."""
        raise NotImplementedError


# meta: configuration and the document counter.
# docs.key has no declared type, so SQLite keeps ints as ints and strings as strings.
# docs.bands: the document's band keys (b little-endian int64), so a delete finds its band rows
# without an index on bands(doc); NULL for an empty document, which has no band rows.
# bands: the (band, key) index is the table itself, a WITHOUT ROWID B-tree clustered on
# (band, key, doc): a lookup reads one contiguous run, and no second copy of the keys is kept.
_SCHEMA = (
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID",
    "CREATE TABLE docs (id INTEGER PRIMARY KEY, key NOT NULL UNIQUE, sig BLOB NOT NULL, bands BLOB)",
    "CREATE TABLE bands (band INTEGER NOT NULL, key INTEGER NOT NULL, doc INTEGER NOT NULL, "
    "PRIMARY KEY (band, key, doc)) WITHOUT ROWID",
)


def _publish(tmp: str, path: Path) -> None:
    """Give the finished file ``tmp`` its name ``path``, never replacing an index that appeared
    meanwhile (an empty placeholder file at ``path`` is replaced)."""
    try:
        os.link(tmp, path)
        return
    except FileExistsError:
        if path.is_file() and path.stat().st_size == 0:
            os.replace(tmp, path)
            return
        raise FileExistsError(f"{path} already exists (created meanwhile by another process); open it") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
    if path.exists() and path.stat().st_size > 0:  # no hard links here: check, then rename
        raise FileExistsError(f"{path} already exists; open it")
    os.replace(tmp, path)


def _not_a_database(path, exc: sqlite3.DatabaseError) -> Exception:
    """SQLITE_NOTADB ("file is not a database") means a foreign file; other errors stay as they are."""
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB" or "not a database" in str(exc):
        return NotAnIndexError(f"{path} is not a neardup index (not an SQLite database)")
    return exc


def _uri(path, mode: str) -> str:
    return Path(path).absolute().as_uri() + f"?mode={mode}"


class SQLiteStore(IndexStore):
    """The embedded default: one SQLite file in WAL mode.

    Guarantees (from SQLite's WAL semantics):

    * atomic batches — each :meth:`put_batch` / :meth:`delete` is one ``BEGIN IMMEDIATE`` …
      ``COMMIT``. A commit is a single WAL frame carrying the commit flag; frames after the last
      such frame are ignored on recovery, so a process killed mid-batch leaves none of it;
    * snapshot reads — a read transaction sees the database as of its first read, whatever
      writers commit meanwhile; readers never block the writer and the writer never blocks
      readers (one writer at a time; others wait up to ``timeout`` seconds);
    * band keys are stored as signed 64-bit INTEGERs (the uint64 bits reinterpreted), in a
      WITHOUT ROWID table whose primary key (band, key, doc) is the (band, key) index;
      signatures are BLOBs, little-endian;
    * ``synchronous="NORMAL"`` (default): the WAL is fsynced at checkpoints, not at each commit.
      Nothing committed is lost when the *process* dies (the data is in the OS page cache) and
      the file is never corrupted, but an OS crash or power cut may undo the last few commits
      (whole batches — still never part of one). ``"FULL"`` fsyncs every commit: durable
      against power loss, at one fsync per batch.
    """

    def __init__(self, conn: sqlite3.Connection, path, readonly: bool):
        self._conn = conn
        self.path = Path(path)
        self.readonly = readonly
        try:
            self._max_vars = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except AttributeError:  # Python < 3.11
            self._max_vars = 999

    # -- opening --------------------------------------------------------------------------------
    @staticmethod
    def _connect(path, mode: str, synchronous: str, timeout: float, immutable: bool = False) -> sqlite3.Connection:
        synchronous = str(synchronous).upper()
        if synchronous not in SYNCHRONOUS:
            raise ConfigError(f"synchronous must be one of {SYNCHRONOUS}, got {synchronous!r}")
        uri = _uri(path, mode) + ("&immutable=1" if immutable else "")
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("PRAGMA cache_size=-32768")  # 32 MiB
        except BaseException:
            conn.close()
            raise
        return conn

    @classmethod
    def create(cls, path, meta: Mapping[str, object], synchronous: str = "NORMAL",
               timeout: float = 10.0) -> SQLiteStore:
        """Built whole in a temporary file beside ``path``, then published with ``os.link``, which
        fails if ``path`` exists: two processes creating one index at once get one index and one
        ``FileExistsError`` (never a half-built file or a "table already exists")."""
        p = Path(path)
        if p.exists() and (not p.is_file() or p.stat().st_size > 0):
            raise FileExistsError(f"{p} already exists; open it, or remove it to start over")
        tmp = str(p.parent / f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.building")
        try:   # mode 0o666 less the umask, as for any new file (mkstemp would make it private)
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except OSError as exc:
            raise IndexStoreError(f"{p}: cannot create the index here ({exc.strerror or exc})") from None
        try:
            conn = cls._connect(tmp, "rwc", synchronous, timeout)
            try:
                if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                    raise IndexStoreError(f"{p}: SQLite could not switch to WAL mode (network file system?)")
                conn.execute("BEGIN IMMEDIATE")  # schema, header and meta land together or not at all
                for stmt in _SCHEMA:
                    conn.execute(stmt)
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
                conn.executemany("INSERT INTO meta(name, value) VALUES (?, ?)",
                                 [("count", 0), *((k, v) for k, v in meta.items())])
                conn.execute("COMMIT")
            finally:
                conn.close()     # the last connection checkpoints the WAL into the file and removes it
            _publish(tmp, p)
        except sqlite3.Error as exc:
            raise IndexStoreError(f"{p}: cannot create the index ({exc})") from None
        finally:
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(tmp + suffix)
                except FileNotFoundError:
                    pass
        return cls.open(p, synchronous=synchronous, timeout=timeout)

    @classmethod
    def open(cls, path, readonly: bool = False, synchronous: str = "NORMAL",
             timeout: float = 10.0) -> SQLiteStore:
        """``readonly=True`` in a folder this process cannot write (so SQLite cannot make the WAL's
        shared-memory file): the file is opened *immutable* when it has no pending WAL — a fixed
        snapshot, as nothing can be writing it without that WAL."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"no index at {p}")
        immutable = False
        if readonly and not os.access(p.parent if str(p.parent) else ".", os.W_OK):
            wal = Path(str(p) + "-wal")
            if wal.exists() and wal.stat().st_size > 0 and not Path(str(p) + "-shm").exists():
                raise IndexStoreError(f"{p}: cannot open read-only: the folder is not writable and the index has "
                                      f"writes not yet checkpointed in {wal.name}; open it once with write access")
            immutable = not wal.exists()
        try:
            conn = cls._connect(p, "ro" if readonly else "rw", synchronous, timeout, immutable)
        except sqlite3.DatabaseError as exc:
            raise _not_a_database(p, exc) from None
        try:
            try:
                app, ver = (conn.execute("PRAGMA application_id").fetchone()[0],
                            conn.execute("PRAGMA user_version").fetchone()[0])
            except sqlite3.DatabaseError as exc:
                err = _not_a_database(p, exc)
                raise (err if isinstance(err, NotAnIndexError) else IndexStoreError(f"{p}: {exc}")) from None
            if app != APPLICATION_ID:
                raise NotAnIndexError(f"{p} is not a neardup index (SQLite application_id {app:#x})")
            if ver != FORMAT_VERSION:
                raise NotAnIndexError(f"{p} is a neardup index of format {ver}; this neardup reads "
                                      f"format {FORMAT_VERSION}")
        except BaseException:
            conn.close()
            raise
        return cls(conn, p, readonly=readonly)

    # -- transactions ---------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise ReadOnlyError(f"{self.path} was opened read-only")
        if self._conn.in_transaction:
            raise RuntimeError("a write cannot run inside a snapshot() block")
        self._conn.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlocks
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:  # SQLite may already have rolled back (e.g. I/O error)
                self._conn.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self):
        if self._conn.in_transaction:  # nested: already inside one snapshot
            yield self
            return
        self._conn.execute("BEGIN")  # deferred: the snapshot is taken at the first read
        try:
            yield self
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    # -- writing --------------------------------------------------------------------------------
    @_named
    def put_batch(self, keys, signatures, band_keys, banded=None, replace=False) -> None:
        keys, band_keys, banded = check_batch(keys, signatures, band_keys, banded)
        n = len(keys)
        if n == 0:
            return
        signed = band_keys.view(np.int64)
        with self._write() as conn:
            if replace:
                self._delete(conn, keys)
            start = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM docs").fetchone()[0]
            ids = np.arange(start, start + n, dtype=np.int64)
            blobs = [signed[i].astype("<i8").tobytes() if banded[i] else None for i in range(n)]
            try:
                conn.executemany("INSERT INTO docs(id, key, sig, bands) VALUES (?, ?, ?, ?)",
                                 zip(ids.tolist(), keys, signatures, blobs))
            except sqlite3.IntegrityError:
                raise DuplicateKeyError(f"already in the index: {self._existing(conn, keys)[:5]!r} "
                                        "(pass replace=True to overwrite)") from None
            rows = np.flatnonzero(banded)
            if rows.shape[0]:
                b = band_keys.shape[1]
                band = np.tile(np.arange(b, dtype=np.int64), rows.shape[0])
                key = signed[rows].ravel()
                doc = np.repeat(ids[rows], b)
                order = np.lexsort((doc, key, band))  # B-tree order: appends, dense pages
                self._insert_bands(conn, zip(band[order].tolist(), key[order].tolist(), doc[order].tolist()))
            conn.execute("UPDATE meta SET value = value + ? WHERE name = 'count'", (n,))

    def _insert_bands(self, conn, rows) -> None:
        conn.executemany("INSERT INTO bands(band, key, doc) VALUES (?, ?, ?)", rows)

    def _existing(self, conn, keys) -> list:
        out = []
        for chunk in self._chunks(keys, self._max_vars):
            marks = ",".join("?" * len(chunk))
            out += [r[0] for r in conn.execute(f"SELECT key FROM docs WHERE key IN ({marks})", chunk)]
        return out

    def _delete(self, conn, keys) -> int:
        gone = 0
        for key in keys:
            row = conn.execute("SELECT id, bands FROM docs WHERE key = ?", (key,)).fetchone()
            if row is None:
                continue
            doc, blob = row
            if blob is not None:
                bk = np.frombuffer(blob, dtype="<i8").tolist()
                conn.executemany("DELETE FROM bands WHERE band = ? AND key = ? AND doc = ?",
                                 [(i, k, doc) for i, k in enumerate(bk)])
            conn.execute("DELETE FROM docs WHERE id = ?", (doc,))
            gone += 1
        if gone:
            conn.execute("UPDATE meta SET value = value - ? WHERE name = 'count'", (gone,))
        return gone

    @_named
    def delete(self, keys) -> int:
        keys = [check_key(k) for k in keys]
        with self._write() as conn:
            return self._delete(conn, keys)

    @_named
    def set_meta(self, items) -> None:
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", list(items.items()))

    # -- reading --------------------------------------------------------------------------------
    @staticmethod
    def _chunks(seq, size):
        for i in range(0, len(seq), size):
            yield seq[i:i + size]

    @_named
    def candidates(self, band_keys) -> list[np.ndarray]:
        band_keys = np.asarray(band_keys, dtype=np.uint64)
        q, b = band_keys.shape
        if q == 0 or b == 0:
            return [np.empty(0, np.int64) for _ in range(q)]
        signed = band_keys.view(np.int64)
        flat = np.column_stack([np.repeat(np.arange(q), b), np.tile(np.arange(b), q), signed.ravel()])
        per = max(1, self._max_vars // 3)
        qi_all, doc_all = [], []
        with self.snapshot():
            for chunk in self._chunks(flat, per):
                values = ",".join(["(?,?,?)"] * len(chunk))
                sql = (f"WITH q(qi, band, key) AS (VALUES {values}) SELECT DISTINCT q.qi, d.doc "
                       "FROM q JOIN bands AS d ON d.band = q.band AND d.key = q.key")
                rows = self._conn.execute(sql, chunk.ravel().tolist()).fetchall()
                if rows:
                    arr = np.asarray(rows, dtype=np.int64)
                    qi_all.append(arr[:, 0])
                    doc_all.append(arr[:, 1])
        if not qi_all:
            return [np.empty(0, np.int64) for _ in range(q)]
        qi = np.concatenate(qi_all)
        doc = np.concatenate(doc_all)
        order = np.lexsort((doc, qi))
        qi, doc = qi[order], doc[order]
        keep = np.ones(qi.shape[0], dtype=bool)   # a chunk boundary can split one query's rows
        keep[1:] = (qi[1:] != qi[:-1]) | (doc[1:] != doc[:-1])
        qi, doc = qi[keep], doc[keep]
        bounds = np.searchsorted(qi, np.arange(q + 1))
        return [doc[bounds[i]:bounds[i + 1]] for i in range(q)]

    @_named
    def fetch(self, ids) -> tuple[list, list[bytes]]:
        ids = [int(i) for i in ids]
        found = {}
        with self.snapshot():
            for chunk in self._chunks(ids, self._max_vars):
                marks = ",".join("?" * len(chunk))
                for doc, key, sig in self._conn.execute(f"SELECT id, key, sig FROM docs WHERE id IN ({marks})", chunk):
                    found[doc] = (key, sig)
        missing = [i for i in ids if i not in found]
        if missing:
            raise KeyError(f"no documents with ids {missing[:5]}")
        return [found[i][0] for i in ids], [found[i][1] for i in ids]

    @_named
    def contains(self, key) -> bool:
        key = check_key(key)
        return self._conn.execute("SELECT 1 FROM docs WHERE key = ?", (key,)).fetchone() is not None

    @_named
    def signature(self, key) -> bytes | None:
        """The stored signature bytes of ``key`` (None when it is not indexed)."""
        key = check_key(key)
        row = self._conn.execute("SELECT sig FROM docs WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    @_named
    def get_meta(self, name: str):
        row = self._conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    @_named
    def count(self) -> int:
        return int(self.get_meta("count"))

    @_named
    def check(self) -> dict:
        """Counts and invariants read in one snapshot: ``orphans`` (band rows of no document),
        ``missing`` (documents lacking a band row their band keys name), ``extra`` (band rows of
        a document that its band keys do not name); all three are 0 in a healthy index."""
        with self.snapshot():
            c = self._conn
            docs = c.execute("SELECT count(*) FROM docs").fetchone()[0]
            counter = self.count()
            rows = c.execute("SELECT count(*) FROM bands").fetchone()[0]
            orphans = c.execute("SELECT count(*) FROM bands WHERE doc NOT IN (SELECT id FROM docs)").fetchone()[0]
            want = set()
            for doc, blob in c.execute("SELECT id, bands FROM docs WHERE bands IS NOT NULL"):
                want.update((i, k, doc) for i, k in enumerate(np.frombuffer(blob, "<i8").tolist()))
            have = set(c.execute("SELECT band, key, doc FROM bands"))
        return {"docs": docs, "count": counter, "band_rows": rows, "orphans": orphans,
                "missing": len(want - have), "extra": len(have - want)}

    def size_bytes(self) -> int:
        """Bytes on disk: the database file plus its WAL."""
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(str(self.path) + suffix)
            except OSError:
                pass
        return total

    @_named
    def checkpoint(self) -> None:
        """Copy the WAL into the database file and truncate it (needs no active readers)."""
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
