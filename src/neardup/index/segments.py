"""The folder store: immutable memory-mapped segments under an atomically replaced manifest, plus a
write-ahead log for online adds. The default storage of :class:`~neardup.index.disk.DiskIndex`.

Layout of an index folder ``IDX/``::

    MANIFEST              JSON, replaced atomically (write, fsync, rename, fsync the folder):
                          generation, metadata, next document id, the segments, the tombstones,
                          the name of the current write-ahead log
    seg-<gen>-<rand>/     one immutable segment (all ``.npy``, opened with ``mmap_mode="r"``):
        sigs.npy            (n, w) uint8 — each document's signature bytes
        key_off.npy         (n + 1,) uint32 (int64 past 4 GiB of keys) — offsets into key_bytes
        key_bytes.npy       tagged key bytes (``s`` + UTF-8, ``i`` + 8 bytes, ``b`` + raw)
        key_hash.npy        (n,) uint32 sorted — xxh64 of the tagged key, folded to 32 bits
        key_row.npy         (n,) uint32 — the row of each key_hash entry
        bands.npy           (b, m) uint32 — per band, the m banded rows' keys folded to 32 bits, sorted
        band_row.npy        (b, m) uint32 — the row of each band key
    deleted-<gen>.npy     sorted int64 document ids removed since their segment was written
    wal-<gen>.log         records appended since the manifest: [magic, length, crc32, payload]
    LOCK                  flock'ed by the one writer

Why this shape (against the SQLite store, 1,219 B and 6,800 adds/s per document): a MinHash
document costs its signature (4k bytes), b × 8 bytes of band table and ~20 bytes of key — 660 B at
k = 128, b = 16; a SimHash document 8 + 4 tables × 8 + ~20 — and a bulk add writes arrays at disk
speed. Band keys and key hashes are folded to 32 bits (x ⊕ x ≫ 32): two equal keys stay equal, so no
candidate is lost; unequal ones collide with probability 2⁻³² per comparison, a spurious candidate
that verification on the full signature (or the key bytes) discards. Lookups are binary searches in
sorted memory-mapped arrays: opening maps files and reads no data, and memory is the OS's page cache.

Guarantees:

* **atomic batches** — a bulk add (:meth:`SegmentStore.add_segment`) is published by the manifest
  rename; an online add (:meth:`SegmentStore.put_batch`) is one WAL record whose CRC covers all of
  it. After a crash a batch is entirely there or not at all; a torn WAL tail is dropped on open;
* **durability** — ``synchronous="FULL"`` fsyncs every WAL record before returning;
  ``"NORMAL"`` writes it to the OS (safe when the process dies, not on power loss);
* **one writer, many readers** — writers hold ``LOCK`` (a second writer waits up to ``timeout``
  seconds, then gets :class:`~neardup.index.store.IndexStoreError` naming the holder); readers take
  no lock: segments never change once named in a manifest, and a reader catches up with a newer
  manifest and WAL at each :meth:`~SegmentStore.snapshot`;
* files a crash left behind (unpublished segments, old logs) are removed by the next writer.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import time
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import xxhash

from .._arrays import unique_pairs
from . import wal
from .files import fsync_dir, load_array, remove_owned, save_array, write_atomic, write_new
from .segment import (
    VERIFY_ON_OPEN,
    Segment,
    _pack_keys,
    decode_key,
    encode_key,
    fold32,
    merge,
)
from .store import (
    DuplicateKeyError,
    IndexCorruptError,
    IndexStore,
    IndexStoreError,
    NotAnIndexError,
    ReadOnlyError,
    check_batch,
)

FORMAT = 3                      # the folder layout (the SQLite store is format 1); format 2 is still read
MANIFEST = "MANIFEST"
PENDING = "PENDING"             # the names a publish is about to create (removed by the next writer after a crash)
PARALLEL_QUERIES = 2048         # query batches at least this large are probed on all cores
FLUSH_DOCS = 65536              # online adds kept in the log (and memory) before they become a segment
MERGE_SEGMENTS = 24             # more segments than this: an add merges the smaller ones


def _manifest_sum(m: dict) -> str:
    body = json.dumps({k: v for k, v in m.items() if k != "checksum"}, sort_keys=True).encode()
    return xxhash.xxh3_64_hexdigest(body)


def manifest_bytes(m: dict) -> bytes:
    """The manifest as written: sorted JSON carrying ``checksum``, the xxh3-64 of itself without it."""
    return json.dumps({**m, "checksum": _manifest_sum(m)}, sort_keys=True).encode()


def manifest_problem(m: dict) -> str:
    """Why manifest ``m`` (as read) does not verify; empty when it does (format 2 has no checksum)."""
    if m.get("format", 2) >= 3 and m.get("checksum") != _manifest_sum(m):
        return "its checksum does not match its contents (a changed byte)"
    return ""


def _record(x) -> bool:
    """A file's manifest record: ``[size, xxh3-64 hex]``."""
    return isinstance(x, list) and len(x) == 2 and isinstance(x[0], int) and x[0] >= 0 and isinstance(x[1], str)


def manifest_shape_problem(m) -> str:
    """Why manifest ``m`` (as parsed) is not shaped as neardup writes one — a field missing or of the
    wrong type, a name that is not a plain entry of the folder; empty when it is. The one rule the
    index (on open) and ``index verify`` (before it reads any field) both apply."""
    try:
        segs = m["segments"]
        ok = (m.get("format") in (2, FORMAT)
              and all(isinstance(m[k], int) and m[k] >= 0 for k in ("generation", "next_id", "count"))
              and isinstance(m["meta"], dict) and isinstance(m["wal"], str) and isinstance(segs, list)
              and all(isinstance(x, dict) and _plain(x.get("dir")) and isinstance(x.get("first_id"), int)
                      and isinstance(x.get("n"), int) and x["n"] >= 0
                      and (x.get("files") is None or isinstance(x["files"], dict)
                           and all(_plain(k) and _record(v) for k, v in x["files"].items()))
                      for x in segs)
              and _plain(m["wal"]) and (m["deleted"] is None or _plain(m["deleted"]))
              and isinstance(m.get("wal_salt", 0), int)
              and (m.get("deleted_file") is None or _record(m["deleted_file"])))
    except (KeyError, TypeError, AttributeError):
        ok = False
    return "" if ok else "a field is missing or of the wrong type"


def _threads() -> int:
    import numba  # noqa: PLC0415  (numba's import is 0.3 s; only a large query batch needs its thread count)

    return max(1, int(numba.get_num_threads()))


class SegmentStore(IndexStore):
    """:class:`~neardup.index.store.IndexStore` as a folder of memory-mapped segments (see the module
    documentation for the layout and the guarantees)."""

    def __init__(self, path: Path, readonly: bool, synchronous: str, timeout: float, verify: str = "auto"):
        self.path = Path(path)
        self.readonly = readonly
        self._sync = synchronous
        self._timeout = timeout
        self._verify = verify
        self._verified: set = set()           # segments whose checksums this process has verified
        self._lock_fd = None
        self._manifest: dict = {}
        self._stamp = None
        self._segments: list[Segment] = []
        self._deleted = np.zeros(0, np.int64)
        self._tail: list[Segment] = []        # the log's documents, as small in-memory runs
        self._tail_deleted: list[int] = []
        self._wal_pos = 0
        self._wal_seq = 1                     # the number the log's next record gets
        self._torn_at = None                  # where a torn log tail starts (a writer cuts it off)
        self._wal_fh = None
        self._in_snapshot = 0
        self._hidden: set = set()

    # -- opening --------------------------------------------------------------------------------
    @classmethod
    def create(cls, path, meta: Mapping[str, object], synchronous: str = "NORMAL",
               timeout: float = 10.0) -> SegmentStore:
        """A new index folder, built under a temporary name beside ``path`` and renamed into place:
        two processes creating one index get one index and one ``FileExistsError``. An existing
        empty folder at ``path`` is used (e.g. made by ``mkdir`` or ``tempfile``)."""
        p = Path(path)
        if p.is_symlink() or p.exists() and not (p.is_dir() and not any(p.iterdir())):
            raise FileExistsError(f"{p} already exists; open it, or remove it to start over")
        tmp = p.parent / f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.building"
        try:
            tmp.mkdir()
        except OSError as exc:
            raise IndexStoreError(f"{p}: cannot create the index here ({exc.strerror or exc})") from None
        made = [tmp / MANIFEST, tmp / "LOCK", tmp / "wal-0.log"]
        try:
            manifest = {"format": FORMAT, "generation": 0, "meta": dict(meta), "next_id": 1, "count": 0,
                        "segments": [], "deleted": None, "wal": "wal-0.log", "wal_salt": secrets.randbits(64),
                        "garbage": []}
            write_new(tmp / "LOCK", b"")
            write_new(tmp / "wal-0.log", b"")
            write_atomic(tmp / MANIFEST, manifest_bytes(manifest))
            if p.is_dir():
                try:
                    p.rmdir()        # the empty folder given; a folder filled meanwhile stays
                except OSError:
                    raise FileExistsError(f"{p} was filled meanwhile by another process; open it") from None
            try:
                os.rename(tmp, p)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    raise FileExistsError(f"{p} already exists (created meanwhile by another process); "
                                          "open it") from None
                raise
            fsync_dir(p.parent if str(p.parent) else Path("."))
        finally:
            if tmp.exists():     # gone already when it was renamed into place
                for f in made:
                    remove_owned(f)
                remove_owned(tmp)
        return cls.open(p, synchronous=synchronous, timeout=timeout)

    @classmethod
    def open(cls, path, readonly: bool = False, synchronous: str = "NORMAL", timeout: float = 10.0,
             verify: str = "auto") -> SegmentStore:
        """The index at ``path``. ``verify``: ``"auto"`` checksums every segment when they hold at
        most :data:`~neardup.index.segment.VERIFY_ON_OPEN` bytes in all (else the cheap checks, and
        each segment's row ranges before a kernel reads it); ``"full"`` always; ``"cheap"`` never.
        The log is always verified record by record."""
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"no index at {p}")
        if not p.is_dir() or not (p / MANIFEST).is_file():
            raise NotAnIndexError(f"{p} is not a neardup index folder (no {MANIFEST})")
        synchronous = str(synchronous).upper()
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be one of ('NORMAL', 'FULL'), got {synchronous!r}")
        if verify not in ("auto", "full", "cheap"):
            raise ValueError(f"verify must be one of ('auto', 'full', 'cheap'), got {verify!r}")
        st = cls(p, readonly, synchronous, timeout, verify)
        try:
            if not readonly:
                st._take_lock()
            st._load_manifest()
            if not readonly:
                st._recover()
        except BaseException:
            st.close()
            raise
        return st

    def _take_lock(self) -> None:
        """The writer's lock: ``flock`` on the index folder itself (held by the open descriptor, so
        removing or replacing any file inside cannot let a second writer in); the holder's pid
        is written to ``LOCK`` for the message a second writer gets."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise IndexStoreError(f"{self.path}: cannot open for writing ({exc.strerror or exc}); "
                                  "open it read-only") from None
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    try:
                        holder = (self.path / "LOCK").read_text(errors="replace").strip()[:80] or "another process"
                    except OSError:
                        holder = "another process"
                    raise IndexStoreError(f"{self.path} is being written by {holder}; one writer at a time "
                                          f"(waited {self._timeout:g} s) — open it read-only to query") from None
                time.sleep(0.05)
        self._lock_fd = fd
        if not os.access(self.path, os.W_OK):
            raise IndexStoreError(f"{self.path}: cannot open for writing (Permission denied); open it read-only")
        try:     # informational only; never through a link
            lk = os.open(self.path / "LOCK", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
            try:
                os.ftruncate(lk, 0)
                os.write(lk, f"pid {os.getpid()}".encode())
            finally:
                os.close(lk)
        except OSError:
            pass

    def _read_manifest(self) -> dict:
        path = self.path / MANIFEST
        try:
            m = json.loads(path.read_bytes())
        except ValueError:
            raise NotAnIndexError(f"{path} is not JSON") from None
        if not isinstance(m, dict) or m.get("format") not in (2, FORMAT):
            fmt = m.get("format") if isinstance(m, dict) else "?"
            raise NotAnIndexError(f"{self.path} is a neardup index of format {fmt}; this neardup reads formats 2 "
                                  f"and {FORMAT}")
        why = manifest_problem(m)
        if why:
            raise IndexCorruptError(f"{path}: {why}; run `neardup index verify`")
        why = manifest_shape_problem(m)
        if why:
            raise IndexCorruptError(f"{path}: not a manifest this neardup wrote ({why})")
        return m

    def _manifest_stamp(self):
        st = os.stat(self.path / MANIFEST)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _open_segment(self, s: dict) -> Segment:
        folder = self.path / s["dir"]
        seg = Segment.read(folder, s["dir"], s["first_id"], s["n"], s.get("files"))
        if s.get("files") and s["dir"] not in self._verified and self._verify_now():
            self._check_segment(seg, s)
        return seg

    def _verify_now(self) -> bool:
        if self._verify != "auto":
            return self._verify == "full"
        return sum(v[0] for s in self._manifest.get("segments", ()) for v in s.get("files", {}).values()) \
            <= VERIFY_ON_OPEN

    def _check_segment(self, seg: Segment, s: dict) -> None:
        bad = seg.verify(self.path / s["dir"], s.get("files"))
        if bad:
            raise IndexCorruptError(f"{bad[0]}; the index refuses to use it — `neardup index verify "
                                    f"{self.path} --repair NEW` salvages what verifies")
        self._verified.add(s["dir"])

    def _load_deleted(self, m: dict) -> np.ndarray:
        if not m["deleted"]:
            return np.zeros(0, np.int64)
        path = self.path / m["deleted"]
        arr = load_array(path, m.get("deleted_file"), (np.dtype(np.int64),), 1)
        if m.get("deleted_file") and self._verify_now():
            from .files import digest  # noqa: PLC0415  (a sibling module; named here for clarity of the check)

            if digest(path) != list(m["deleted_file"]):
                raise IndexCorruptError(f"{path}: its checksum is not the manifest's; run `neardup index verify`")
        arr = np.asarray(arr, dtype=np.int64)
        if arr.shape[0] > 1 and not (np.diff(arr) > 0).all():
            raise IndexCorruptError(f"{path}: the removed documents' ids are not sorted; run `neardup index verify`")
        return arr

    def _load_manifest(self) -> None:
        for _ in range(20):     # a writer may publish a newer manifest and delete files meanwhile
            stamp = self._manifest_stamp()
            m = self._read_manifest()
            self._manifest = m
            try:
                segs = [self._open_segment(s) for s in m["segments"]]
                deleted = self._load_deleted(m)
                data = (self.path / m["wal"]).read_bytes()
            except FileNotFoundError:
                if self._manifest_stamp() != stamp:
                    continue
                raise IndexCorruptError(f"{self.path}: a file named by {MANIFEST} is missing") from None
            except IndexCorruptError:
                if self._manifest_stamp() != stamp:
                    continue        # a writer replaced it meanwhile: read the new one
                raise
            break
        else:
            raise IndexStoreError(f"{self.path}: the manifest kept changing while it was read")
        self._manifest, self._stamp, self._segments, self._deleted = m, stamp, segs, deleted
        self._tail, self._tail_deleted, self._wal_pos, self._wal_seq = [], [], 0, 1
        self._replay(data)

    def _replay(self, data: bytes) -> None:
        m = self._manifest
        label = str(self.path / m["wal"])
        records, self._torn_at = wal.read_log(data, label, int(m.get("wal_salt", 0)), int(m["format"]),
                                              self._wal_pos, self._wal_seq)
        for end, body in records:
            try:
                rec = wal.decode_body(body)
            except (ValueError, IndexError, UnicodeDecodeError) as exc:
                raise IndexCorruptError(f"{label}: record {self._wal_seq} at byte {self._wal_pos} verifies but is "
                                        f"not a record this neardup wrote ({exc})") from None
            expect = int(m["next_id"]) + sum(s.n for s in self._tail)
            if rec["keys"] and rec["first_id"] != expect:
                raise IndexCorruptError(f"{label}: record {self._wal_seq} at byte {self._wal_pos} numbers its "
                                        f"documents from {rec['first_id']} where {expect} comes next")
            self._apply(rec)
            self._wal_pos = end
            self._wal_seq += 1

    def _apply(self, rec: dict) -> None:
        if rec["keys"]:
            seg = Segment.build("wal", rec["first_id"], rec["keys"], rec["sigs"], rec["bands"], rec["banded"],
                                self.sized)
            self._tail.append(seg)
            self._compact_tail()
        self._tail_deleted.extend(int(i) for i in rec["deleted"])

    def _compact_tail(self) -> None:
        """Keep O(log n) in-memory runs: merge the last two while the newer is at least half the older."""
        while len(self._tail) >= 2 and self._tail[-1].n * 2 >= self._tail[-2].n:
            b, a = self._tail.pop(), self._tail.pop()
            seg, _ = merge("wal", a.first_id, [a, b], np.zeros(0, np.int64), self.sized)
            self._tail.append(seg)

    def _recover(self) -> None:
        """Writer only: cut a torn log tail off; remove what a crashed publish made (the names in
        ``PENDING`` that no manifest names) and what the manifest lists as superseded (its
        ``garbage``); a log of format 2 is folded into a segment at once (the index becomes format
        3). Nothing else in the folder is touched, whatever its name."""
        log = self.path / self._manifest["wal"]
        if self._torn_at is not None:
            with open(log, "r+b") as fh:
                fh.truncate(self._torn_at)
                fh.flush()
                os.fsync(fh.fileno())
            self._torn_at = None
        named = self._named(self._manifest)
        pending = self.path / PENDING
        if pending.is_file() and not pending.is_symlink():
            try:
                names = json.loads(pending.read_bytes()).get("names", [])
            except (ValueError, AttributeError):
                names = []          # a torn PENDING: its publish made nothing yet (it is written first)
            for name in names:
                if _plain(name) and name not in named:
                    remove_owned(self.path / name)
            remove_owned(pending)
        for name in self._manifest.get("garbage", []):
            if _plain(name) and name not in named:
                remove_owned(self.path / name)
        if self._manifest["format"] < FORMAT:
            self._publish()

    @staticmethod
    def _named(m: dict) -> set:
        """The entries manifest ``m`` owns and uses."""
        return {MANIFEST, "LOCK", m["wal"], *(s["dir"] for s in m["segments"]),
                *([m["deleted"]] if m["deleted"] else [])}

    # -- state ------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Readers: catch up with a newer manifest, or with records appended to the log."""
        if not self.readonly:
            return
        if self._manifest_stamp() != self._stamp:
            self._load_manifest()
            return
        wal = self.path / self._manifest["wal"]
        try:
            size = wal.stat().st_size
        except FileNotFoundError:
            self._load_manifest()
            return
        if size > self._wal_pos:
            with open(wal, "rb") as fh:
                data = fh.read()
            self._replay(data)

    @contextmanager
    def snapshot(self):
        if self._in_snapshot == 0:
            self._refresh()
        self._in_snapshot += 1
        try:
            yield self
        finally:
            self._in_snapshot -= 1

    def _all(self) -> list[Segment]:
        if self._hidden:
            return [s for s in self._segments if s.name not in self._hidden] + self._tail
        return self._segments + self._tail

    def hide(self, names) -> None:
        """Read as if the segments ``names`` were not there (a rerun's view of the index before its own
        segment); ``hide(())`` shows everything again. Writes are refused while any is hidden."""
        self._hidden = set(names)

    def _dead(self) -> np.ndarray:
        if not self._tail_deleted:
            return self._deleted
        return np.union1d(self._deleted, np.asarray(self._tail_deleted, dtype=np.int64))

    def _locate_many(self, raw: list[bytes], hashes: np.ndarray, dead: np.ndarray | None = None) -> np.ndarray:
        """The live document id of each tagged key (−1 where absent): hash ranges found by vectorised
        binary search per segment (newest first), key bytes compared only where a hash is present."""
        dead = self._dead() if dead is None else dead
        out = np.full(len(raw), -1, dtype=np.int64)
        todo = np.arange(len(raw))
        h = fold32(hashes)
        for s in reversed(self._all()):
            if todo.shape[0] == 0:
                break
            if s.n == 0:
                continue
            s.ensure_checked()
            lo = np.searchsorted(s.key_hash, h[todo], "left")
            hi = np.searchsorted(s.key_hash, h[todo], "right")
            hit = np.flatnonzero(hi > lo)
            found = []
            for t in hit.tolist():
                i = int(todo[t])
                for j in range(int(lo[t]), int(hi[t])):
                    row = int(s.key_row[j])
                    if s.key(row) != raw[i]:
                        continue
                    doc = s.first_id + row
                    k = np.searchsorted(dead, doc)
                    if k < dead.shape[0] and dead[k] == doc:
                        continue
                    out[i] = doc
                    found.append(t)
                    break
            if found:
                todo = np.delete(todo, found)
        return out

    def lookup_many(self, keys) -> np.ndarray:
        """Document ids of ``keys`` (−1 where absent), vectorised."""
        raw = [encode_key(k) for k in keys]
        _, _, h = _pack_keys(raw)
        with self.snapshot():
            return self._locate_many(raw, h)

    # -- writing ----------------------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.path} was opened read-only")
        if self._hidden:
            raise RuntimeError("a write while segments are hidden")
        if self._in_snapshot:
            raise RuntimeError("a write cannot run inside a snapshot() block")

    def _prepare(self, keys, signatures, band_keys, banded, replace):
        keys, band_keys, banded = check_batch(keys, signatures, band_keys, banded)
        n = len(keys)
        raw = [encode_key(k) for k in keys]
        if isinstance(signatures, np.ndarray):
            a = np.ascontiguousarray(signatures).view(np.uint8)
            sigs = a.reshape(n, a.shape[-1] if a.ndim == 2 else -1) if n or a.ndim == 2 else a.reshape(0, 0)
        else:
            widths = {len(s) for s in signatures}
            if len(widths) > 1:
                raise ValueError("signatures of different lengths in one batch")
            sigs = np.frombuffer(b"".join(signatures), np.uint8).reshape(n, -1) if n else np.zeros((0, 0), np.uint8)
        have = self._width()
        if n and have is not None and sigs.shape[1] != have:
            raise ValueError(f"signatures of {sigs.shape[1]} bytes; this index stores {have}")
        _, _, hashes = _pack_keys(raw)
        dead = self._dead()
        where = self._locate_many(raw, hashes, dead)
        clash = [(k, int(d)) for k, d in zip(keys, where.tolist()) if d >= 0]
        if clash and not replace:
            raise DuplicateKeyError(f"already in the index: {[k for k, _ in clash][:5]!r} "
                                    "(pass replace=True to overwrite)")
        return raw, sigs, band_keys, banded, np.array(sorted(d for _, d in clash), dtype=np.int64)

    def _width(self) -> int | None:
        for s in self._all():
            if s.n:
                return s.sigs.shape[1]
        return None

    def _log(self, first: int, raw, sigs, band_keys, banded, deleted) -> None:
        """Append one record (the next number of this log) and count it."""
        rec = wal.encode(self._wal_seq, int(self._manifest.get("wal_salt", 0)),
                         wal.encode_body(first, raw, sigs, band_keys, banded, deleted))
        self._append(rec)
        self._wal_pos += len(rec)
        self._wal_seq += 1

    def _append(self, record: bytes) -> None:
        if self._wal_fh is None:
            self._wal_fh = open(self.path / self._manifest["wal"], "ab")
        fh = self._wal_fh
        try:
            fh.write(record)
            fh.flush()
            if self._sync == "FULL":
                os.fsync(fh.fileno())
        except OSError as exc:
            try:     # never leave a torn record for the next append to follow
                fh.truncate(self._wal_pos)
            except OSError:
                pass
            raise IndexStoreError(f"{self.path}: cannot write the log ({exc.strerror or exc})") from None

    def put_batch(self, keys, signatures, band_keys, banded=None, replace=False) -> None:
        """Online add: one log record (atomic by its checksum), then in memory; at :data:`FLUSH_DOCS`
        logged documents they become a segment."""
        self._check_writable()
        raw, sigs, band_keys, banded, old = self._prepare(keys, signatures, band_keys, banded, replace)
        n = len(raw)
        if n == 0:
            return
        first = int(self._manifest["next_id"]) + sum(s.n for s in self._tail)
        self._log(first, raw, sigs, band_keys, banded, old)
        self._apply({"first_id": first, "keys": raw, "sigs": sigs, "bands": band_keys, "banded": banded,
                     "deleted": old})
        if sum(s.n for s in self._tail) >= FLUSH_DOCS:
            self.flush()

    def delete(self, keys) -> int:
        self._check_writable()
        raw = [encode_key(k) for k in keys]
        _, _, hashes = _pack_keys(raw)
        dead = self._dead()
        docs = sorted({d for d in self._locate_many(raw, hashes, dead).tolist() if d >= 0})
        if not docs:
            return 0
        first = int(self._manifest["next_id"]) + sum(s.n for s in self._tail)
        self._log(first, [], np.zeros((0, 0), np.uint8), np.zeros((0, 0), np.uint64), np.zeros(0, bool),
                  np.array(docs, dtype=np.int64))
        self._tail_deleted.extend(docs)
        return len(docs)

    def add_segment(self, keys, signatures, band_keys, banded=None, replace: bool = False,
                    meta=None) -> None:
        """Bulk add: the batch becomes one segment, published with ``meta`` updates by one manifest
        rename (all or nothing); ``meta`` may be a function of the new segment's name returning them.
        Pending log records are folded in first."""
        self._check_writable()
        raw, sigs, band_keys, banded, old = self._prepare(keys, signatures, band_keys, banded, replace)
        self._publish(extra=(raw, sigs, band_keys, banded, old), meta=meta)

    def flush(self) -> None:
        """Turn the log's documents into a segment (a new manifest; the log starts empty)."""
        self._check_writable()
        if self._tail or self._tail_deleted:
            self._publish()

    def set_meta(self, items: Mapping[str, object]) -> None:
        self._check_writable()
        self._publish(meta=items)

    def _publish(self, extra=None, meta=None, merge_all: bool = False) -> None:
        """A new manifest (generation + 1): the log's documents as a segment, ``extra`` (a prepared
        batch) as another, merges, tombstones, a new empty log. The names it will create are
        written to ``PENDING`` first, every file is created new (``O_EXCL``) and checksummed, and
        the manifest's rename publishes all of it; what the old manifest owned and the new one does
        not becomes ``garbage``, removed now and, after a crash, by the next writer."""
        old_m = self._manifest
        m = dict(old_m, format=FORMAT)
        gen = int(m["generation"]) + 1
        tok = secrets.token_hex(3)
        names = {"log_seg": f"seg-{gen}-{tok}-w", "added": f"seg-{gen}-{tok}", "merged": f"seg-{gen}-{tok}-m",
                 "deleted": f"deleted-{gen}-{tok}.npy", "wal": f"wal-{gen}-{tok}.log",
                 "tmp": f".{MANIFEST}.{gen}-{tok}"}
        made: list[Path] = []
        try:
            write_new(self.path / PENDING, json.dumps({"generation": gen, "names": sorted(names.values())}).encode())
            made.append(self.path / PENDING)
            next_id = int(m["next_id"])
            segs = list(m["segments"])
            seg_objs = list(self._segments)
            dead = self._dead()
            if self._tail:
                name = names["log_seg"]
                merged, _ = merge(name, next_id, self._tail, np.zeros(0, np.int64), self.sized)
                # the log's ids were assigned consecutively from next_id, so they carry over unchanged
                next_id += merged.n
                made.append(self.path / name)
                files = merged.write(self.path / name)
                segs.append({"dir": name, "first_id": merged.first_id, "n": merged.n, "files": files})
                seg_objs.append(merged)
            added = None
            if extra is not None and extra[0]:
                raw, sigs, band_keys, banded, old = extra
                name = added = names["added"]
                seg = Segment.build(name, next_id, raw, sigs, band_keys, banded, self.sized)
                made.append(self.path / name)
                files = seg.write(self.path / name)
                segs.append({"dir": name, "first_id": next_id, "n": seg.n, "files": files})
                seg_objs.append(seg)
                next_id += seg.n
                dead = np.union1d(dead, old)
            if merge_all or len(segs) > MERGE_SEGMENTS:
                segs, seg_objs, dead, next_id = self._merge_segments(names["merged"], segs, seg_objs, dead, next_id,
                                                                     made, merge_all, keep=added)
            m["segments"], m["next_id"], m["generation"] = segs, next_id, gen
            m["count"] = sum(s["n"] for s in segs) - int(dead.shape[0])
            if dead.shape[0]:
                m["deleted"] = names["deleted"]
                made.append(self.path / m["deleted"])
                m["deleted_file"] = save_array(self.path / m["deleted"], dead)
            else:
                m["deleted"] = m["deleted_file"] = None
            m["wal"], m["wal_salt"] = names["wal"], secrets.randbits(64)
            made.append(self.path / m["wal"])
            write_new(self.path / m["wal"], b"")
            if callable(meta):
                meta = meta(added)
            if meta:
                m["meta"] = {**m["meta"], **dict(meta)}
            owned = self._named(m)
            m["garbage"] = sorted({n for n in self._named(old_m) | set(old_m.get("garbage", []))
                                   if n not in owned and _plain(n) and os.path.lexists(self.path / n)}
                                  | {f.name for f in made if f.name.startswith("seg-") and f.name not in owned})
            fsync_dir(self.path)
            made.append(self.path / names["tmp"])
            write_new(self.path / names["tmp"], manifest_bytes(m))
            os.replace(self.path / names["tmp"], self.path / MANIFEST)
            fsync_dir(self.path)
        except BaseException as exc:
            for f in reversed(made):
                remove_owned(f)
            if isinstance(exc, OSError):
                raise IndexStoreError(f"{self.path}: cannot write the index ({exc.strerror or exc}); "
                                      "it is unchanged") from None
            raise
        if self._wal_fh is not None:
            self._wal_fh.close()
            self._wal_fh = None
        self._verified.update(f.name for f in made)
        self._manifest, self._stamp = m, self._manifest_stamp()
        self._segments = [self._open_segment(s) for s in segs]
        self._deleted = self._load_deleted(m)
        self._tail, self._tail_deleted, self._wal_pos, self._wal_seq = [], [], 0, 1
        remove_owned(self.path / PENDING)
        for name in m["garbage"]:         # readers that mapped them keep their mappings
            remove_owned(self.path / name)

    def _merge_segments(self, name, segs, seg_objs, dead, next_id, made, merge_all, keep=None):
        """Merge all segments (``merge_all``: also drops tombstones) or the smaller half, into the
        new segment ``name``; the merged documents get new ids after ``next_id``. The segment ``keep``
        (just added, named by a run record) stays as it is unless everything is merged. Segments
        on disk are verified in full first: a merge never copies damage into a new checksum."""
        order = sorted((i for i in range(len(segs)) if merge_all or segs[i]["dir"] != keep),
                       key=lambda i: segs[i]["n"])
        pick = sorted(order if merge_all else order[: len(segs) // 2 + 1])
        keep = [i for i in range(len(segs)) if i not in set(pick)]
        gone = np.concatenate([np.arange(seg_objs[i].first_id, seg_objs[i].first_id + seg_objs[i].n)
                               for i in pick]) if pick else np.zeros(0, np.int64)
        if np.isin(gone, dead).all():      # every picked row deleted: the segments go, none replaces them
            return [segs[i] for i in keep], [seg_objs[i] for i in keep], np.setdiff1d(dead, gone), next_id
        for i in pick:
            if segs[i].get("files") and segs[i]["dir"] not in self._verified:
                self._check_segment(seg_objs[i], segs[i])
        merged, old_ids = merge(name, next_id, [seg_objs[i] for i in pick], dead, self.sized)
        made.append(self.path / name)
        files = merged.write(self.path / name)
        dead = np.setdiff1d(dead, gone)
        segs = [segs[i] for i in keep] + [{"dir": name, "first_id": next_id, "n": merged.n, "files": files}]
        objs = [seg_objs[i] for i in keep] + [merged]
        return segs, objs, dead, next_id + merged.n

    def compact(self) -> None:
        """One segment of the live documents: log folded in, tombstones dropped."""
        self._check_writable()
        self._publish(merge_all=True)

    # -- reading ----------------------------------------------------------------------------------
    def candidate_pairs(self, band_keys) -> tuple[np.ndarray, np.ndarray]:
        """(query row, document id) pairs, each once, sorted by query then id: every live document
        sharing a band key with a query row."""
        band_keys = np.ascontiguousarray(np.asarray(band_keys, dtype=np.uint64))
        with self.snapshot():
            qs, ds = [], []
            for s in self._all():
                q, d = s.candidates(band_keys)
                qs.append(q)
                ds.append(d)
            dead = self._dead()
        if not qs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        q, d = np.concatenate(qs), np.concatenate(ds)
        if dead.shape[0]:
            live = ~np.isin(d, dead)
            q, d = q[live], d[live]
        return unique_pairs(q, d)

    def probe(self, values: np.ndarray, rows: np.ndarray, band_keys, kind: int, limit: float,
              empty, max_bucket: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, document id, score) of every accepted match of the query rows ``rows`` of
        ``values`` (their band keys ``band_keys``), each segment probed by one compiled pass
        (:func:`~neardup.kernels.index_probe.probe_segment`; ``kind``/``limit`` as there)."""
        from ..kernels.index_probe import probe_segment, probe_segment_parallel  # noqa: PLC0415

        rows = np.asarray(rows, dtype=np.int64)
        folded = np.ascontiguousarray(fold32(np.asarray(band_keys, dtype=np.uint64).reshape(rows.shape[0], -1)))
        qs, ds, ss = [], [], []
        with self.snapshot():
            dead = self._dead()
            for s in self._all():
                if s.n == 0 or rows.shape[0] == 0:
                    continue
                s.ensure_checked()
                sig = s.sigs.view(values.dtype).reshape(s.n, -1)
                lo, hi = np.searchsorted(dead, [s.first_id, s.first_id + s.n])
                mask = np.zeros(s.n if hi > lo else 0, dtype=np.bool_)
                if hi > lo:
                    mask[dead[lo:hi] - s.first_id] = True
                chunks = _threads() if rows.shape[0] >= PARALLEL_QUERIES else 1
                cap = max(1024, 2 * rows.shape[0] // chunks)
                while True:     # per slice of queries a stretch of `cap` outputs; larger if one overflowed
                    n = cap * chunks
                    oq, orow, osc = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.float64)
                    if chunks == 1:
                        counts = np.array([probe_segment(values, rows, folded, s.bands, s.band_row, sig, mask, empty,
                                                         kind, limit, max_bucket, oq, orow, osc)])
                    else:
                        counts = np.zeros(chunks, np.int64)
                        probe_segment_parallel(values, rows, folded, s.bands, s.band_row, sig, mask, empty, kind,
                                               limit, max_bucket, chunks, oq, orow, osc, counts)
                    if counts.max() <= cap:
                        break
                    cap = int(counts.max())
                take = np.concatenate([np.arange(c * cap, c * cap + counts[c]) for c in range(chunks)])
                qs.append(oq[take])
                ds.append(orow[take] + s.first_id)
                ss.append(osc[take])
        if not qs:
            z = np.zeros(0, np.int64)
            return z, z, np.zeros(0)
        return np.concatenate(qs), np.concatenate(ds), np.concatenate(ss)

    def probe_containment(self, qkeys: np.ndarray, qsizes: np.ndarray, layouts, num_perm: int, tab,
                          threshold: float, grid: int, reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(query row, document id) containment candidates of a sized index (:attr:`sized`): each
        segment probed by :func:`neardup.kernels.containment.probe` with its (key, size)-sorted band
        columns; ``qkeys``: the queries' layout band keys (unfolded), ``tab``: the class table
        (m_lo, r per class, b per class) of ``layouts`` at ``num_perm`` slots; ``reverse`` as there."""
        from ..kernels.containment import probe  # noqa: PLC0415

        if not self.sized:
            raise ValueError(f"{self.path}: not a containment index (its band columns are not sorted by size)")
        m_lo, tab_r, tab_b = tab
        lay_r = np.asarray(layouts, dtype=np.int64)
        lay_start = np.concatenate([[0], np.cumsum(num_perm // lay_r)]).astype(np.int64)
        folded = np.ascontiguousarray(fold32(np.asarray(qkeys, dtype=np.uint64)))
        qsizes = np.ascontiguousarray(qsizes, dtype=np.int64)
        qrows = np.full(qsizes.shape[0], -1, dtype=np.int64)
        qs, ds = [], []
        with self.snapshot():
            dead = self._dead()
            for s in self._all():
                if s.n == 0 or qsizes.shape[0] == 0 or s.bands.shape[1] == 0:
                    continue
                s.ensure_checked()
                sizes, max_size = s.set_sizes
                live = np.ones(s.n, dtype=np.bool_)
                lo, hi = np.searchsorted(dead, [s.first_id, s.first_id + s.n])
                live[dead[lo:hi] - s.first_id] = False
                seen = np.zeros(s.n, dtype=np.bool_)
                qi, row = probe(folded, qsizes, qrows, s.bands, s.band_row, sizes, live, lay_r, lay_start, tab_r,
                                tab_b, m_lo, float(grid), float(threshold), max_size, seen, reverse)
                qs.append(qi)
                ds.append(row + s.first_id)
        if not qs:
            z = np.zeros(0, np.int64)
            return z, z
        return np.concatenate(qs), np.concatenate(ds)

    def candidates(self, band_keys) -> list[np.ndarray]:
        band_keys = np.asarray(band_keys, dtype=np.uint64)
        q = band_keys.shape[0]
        qi, d = self.candidate_pairs(band_keys)
        bounds = np.searchsorted(qi, np.arange(q + 1))
        return [d[bounds[i]:bounds[i + 1]] for i in range(q)]

    def fetch_arrays(self, ids, keys: bool = True) -> tuple[list | None, np.ndarray]:
        """Keys (None unless ``keys``) and the (len(ids), w) uint8 signature bytes of documents
        ``ids``, in that order (repeats allowed)."""
        ids = np.asarray(ids, dtype=np.int64)
        with self.snapshot():
            segs = self._all()
            width = self._width() or 0
            out = np.zeros((ids.shape[0], width), dtype=np.uint8)
            want_keys = keys
            keys = [None] * ids.shape[0] if want_keys else None
            found = np.zeros(ids.shape[0], dtype=bool)
            for s in segs:
                sel = np.flatnonzero((ids >= s.first_id) & (ids < s.first_id + s.n))
                if sel.shape[0] == 0:
                    continue
                rows = ids[sel] - s.first_id
                out[sel] = s.sigs[rows]
                if want_keys:
                    for j, r in zip(sel.tolist(), rows.tolist()):
                        keys[j] = s.key_id(r)
                found[sel] = True
        if not found.all():
            raise KeyError(f"no documents with ids {ids[~found][:5].tolist()}")
        return keys, out

    def live_ids(self) -> np.ndarray:
        """The ids of every live document (segments, then the log's), in one snapshot."""
        with self.snapshot():
            segs = self._all()
            ids = (np.concatenate([np.arange(s.first_id, s.first_id + s.n, dtype=np.int64) for s in segs])
                   if segs else np.zeros(0, np.int64))
            dead = self._dead()
        return ids[~np.isin(ids, dead)] if dead.shape[0] else ids

    def fetch(self, ids) -> tuple[list, list[bytes]]:
        keys, arr = self.fetch_arrays(ids)
        return keys, [arr[i].tobytes() for i in range(arr.shape[0])]

    def lookup(self, key) -> int:
        """The document id of ``key``, or −1."""
        return int(self.lookup_many([key])[0])

    def contains(self, key) -> bool:
        return self.lookup(key) >= 0

    def get_meta(self, name: str):
        with self.snapshot():
            return self._manifest["meta"].get(name)

    def count(self) -> int:
        with self.snapshot():
            return int(self._manifest["count"]) + sum(s.n for s in self._tail) - len(set(self._tail_deleted))

    @property
    def sized(self) -> bool:
        """Whether signatures end with their set size and band columns are sorted by (key, size):
        fixed at creation by the metadata entry ``band_order = "size"`` (a containment index)."""
        return self._manifest.get("meta", {}).get("band_order") == "size"

    @property
    def generation(self) -> int:
        return int(self._manifest["generation"])

    def segments(self) -> list[dict]:
        """The manifest's segments: ``dir``, ``first_id``, ``n``."""
        return [dict(s) for s in self._manifest["segments"]]

    def size_bytes(self) -> int:
        total = 0
        for root, _, files in os.walk(self.path):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total

    def check(self) -> dict:
        """Counts and invariants: ``docs`` (live documents found in the segments and log), ``count``
        (the manifest's counter), ``missing`` (band rows pointing outside their segment)."""
        with self.snapshot():
            dead = self._dead()
            total = sum(s.n for s in self._all())
            bad = rows = 0
            for s in self._all():
                if s.band_row.size and int(s.band_row.max()) >= s.n:
                    bad += 1
                ids = s.first_id + np.asarray(s.band_row[0] if s.band_row.shape[0] else [], dtype=np.int64)
                rows += int((~np.isin(ids, dead)).sum()) * s.bands.shape[0]
        return {"docs": total - int(dead.shape[0]), "count": self.count(), "band_rows": rows, "orphans": 0,
                "missing": bad, "extra": 0, "segments": len(self._segments),
                "log_documents": sum(s.n for s in self._tail)}

    def close(self) -> None:
        if self._wal_fh is not None:
            self._wal_fh.close()
            self._wal_fh = None
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None
        self._segments, self._tail = [], []


def remove_empty_index(path) -> bool:
    """Remove an index folder that holds no document, no segment and nothing else: the files its
    manifest names, then the folder. Anything else inside (not neardup's) keeps it; returns
    whether it is gone."""
    p = Path(path)
    try:
        m = json.loads((p / MANIFEST).read_bytes())
        if m.get("segments") or m.get("count") or (p / m["wal"]).stat().st_size:
            return False
        names = SegmentStore._named(m) | {PENDING}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    for name in names:
        if _plain(name):
            remove_owned(p / name)
    try:
        p.rmdir()
    except OSError:
        return False
    return True


def _plain(name) -> bool:
    """A name of an entry directly inside the index folder (what a manifest may name)."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


__all__ = ["FLUSH_DOCS", "FORMAT", "SegmentStore", "decode_key", "encode_key"]
