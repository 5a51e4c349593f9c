"""Opening the folder store (:mod:`neardup.index.segments`): creating an index folder, the
writer's lock, reading and verifying the manifest, its segments and removed ids, replaying the
write-ahead log, and the writer's recovery from a crash (a torn log tail cut off, what a crashed
publish left behind removed)."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..errors import ConfigError
from . import wal
from .files import digest, fsync_dir, load_array, remove_owned, taken, write_atomic, write_new
from .segment import VERIFY_ON_OPEN, Segment, merge
from .segments_manifest import (
    FORMAT,
    MANIFEST,
    PENDING,
    _plain,
    manifest_bytes,
    manifest_problem,
    manifest_shape_problem,
)
from .store import IndexCorruptError, IndexStoreError, NotAnIndexError

_Store = TypeVar("_Store", bound="Opening")       # the store class opened (SegmentStore, which mixes this in)


def building(p: Path, what: str) -> Path:
    """A new empty folder beside ``p`` (``.NAME.PID.RANDOM.building``) to build ``what`` in before it is
    renamed to ``p``; :class:`IndexStoreError` naming ``p`` when none can be made there."""
    tmp = p.parent / f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.building"
    try:
        tmp.mkdir()
    except OSError as exc:
        raise IndexStoreError(f"{p}: cannot create the {what} here ({exc.strerror or exc})") from None
    return tmp


class Opening:
    """:class:`~neardup.index.segments.SegmentStore`'s opening, loading and recovery."""

    # -- opening --------------------------------------------------------------------------------
    @classmethod
    def create(cls: type[_Store], path, meta: Mapping[str, object], synchronous: str = "NORMAL",
               timeout: float = 10.0) -> _Store:
        """A new index folder, built under a temporary name beside ``path`` and renamed into place:
        two processes creating one index get one index and one ``FileExistsError``. An existing
        empty folder at ``path`` is used (e.g. made by ``mkdir`` or ``tempfile``)."""
        p = Path(path)
        if taken(p):
            raise FileExistsError(f"{p} already exists; open it, or remove it to start over")
        tmp = building(p, "index")
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
    def open(cls: type[_Store], path, readonly: bool = False, synchronous: str = "NORMAL", timeout: float = 10.0,
             verify: str = "auto") -> _Store:
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
            raise ConfigError(f"synchronous must be one of ('NORMAL', 'FULL'), got {synchronous!r}")
        if verify not in ("auto", "full", "cheap"):
            raise ConfigError(f"verify must be one of ('auto', 'full', 'cheap'), got {verify!r}")
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
        self.note_writer()

    def note_writer(self, what: str = "") -> None:
        """Say who holds the writer's lock, in ``LOCK``: ``pid N``, then ``what`` (``neardup serve``
        names its address), for the message a second writer gets. Informational only; never through
        a link, and a failure to write it is ignored."""
        if self._lock_fd is None:
            return
        try:
            lk = os.open(self.path / "LOCK", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
            try:
                os.ftruncate(lk, 0)
                os.write(lk, f"pid {os.getpid()}{' ' + what if what else ''}".encode())
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

