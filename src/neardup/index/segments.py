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
import struct
import time
import zlib
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .._arrays import unique_pairs
from ..kernels.hashing import xxh64_batch
from .store import (
    DuplicateKeyError,
    IndexStore,
    IndexStoreError,
    NotAnIndexError,
    ReadOnlyError,
    check_batch,
    check_key,
)

FORMAT = 2                      # the folder layout (the SQLite store is format 1)
MANIFEST = "MANIFEST"
_MAGIC = b"NDW1"
_HEAD = struct.Struct("<4sII")  # magic, payload length, crc32(payload)
_KEY_SEED = 0x6B6579            # xxh64 seed of key hashes
PARALLEL_QUERIES = 2048         # query batches at least this large are probed on all cores
FLUSH_DOCS = 65536              # online adds kept in the log (and memory) before they become a segment
MERGE_SEGMENTS = 24             # more segments than this: an add merges the smaller ones


def _threads() -> int:
    import numba  # noqa: PLC0415

    return max(1, int(numba.get_num_threads()))


# -- keys -------------------------------------------------------------------------------------------
def encode_key(key) -> bytes:
    key = check_key(key)
    if isinstance(key, str):
        return b"s" + key.encode("utf-8", "surrogatepass")
    if isinstance(key, bytes):
        return b"b" + key
    return b"i" + struct.pack("<q", key)


def decode_key(raw: bytes):
    tag, body = raw[:1], raw[1:]
    if tag == b"s":
        return body.decode("utf-8", "surrogatepass")
    if tag == b"b":
        return bytes(body)
    return struct.unpack("<q", body)[0]


def fold32(x) -> np.ndarray:
    """64-bit keys folded to 32 bits (x ⊕ x ≫ 32, low half); idempotent on values below 2³²."""
    x = np.asarray(x, dtype=np.uint64)
    return ((x ^ (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def sig_sizes(sigs: np.ndarray) -> np.ndarray:
    """The set sizes stored as the last 4 bytes (little-endian uint32) of each signature of a sized
    index (:attr:`SegmentStore.sized`), as int64."""
    return np.ascontiguousarray(sigs[:, -4:]).view("<u4").reshape(-1).astype(np.int64)


def _pack_keys(raw: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, bytes, xxh64 per key) of tagged keys."""
    off = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in raw], out=off[1:])
    data = np.frombuffer(b"".join(raw), dtype=np.uint8) if raw else np.zeros(0, np.uint8)
    data = data.copy() if data.shape[0] else np.zeros(1, np.uint8)
    return off, data, xxh64_batch(data, off, np.uint64(_KEY_SEED))


# -- durable file operations -----------------------------------------------------------------------
def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _save(path: Path, arr: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _load(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r", allow_pickle=False)


# -- segments ---------------------------------------------------------------------------------------
def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view: segments never change, and a segment built in memory (the log's tail, a
    merge) then has the array types of one mapped from disk — numba compiles the probe once, not
    twice (3.5–4 s each, measured)."""
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass
class _Segment:
    """A segment's arrays (mapped from disk, or in memory for the log's tail)."""
    name: str
    first_id: int
    sigs: np.ndarray
    key_off: np.ndarray
    key_bytes: np.ndarray
    key_hash: np.ndarray
    key_row: np.ndarray
    bands: np.ndarray
    band_row: np.ndarray

    @property
    def n(self) -> int:
        return self.sigs.shape[0]

    def key(self, row: int) -> bytes:
        return bytes(self.key_bytes[int(self.key_off[row]):int(self.key_off[row + 1])])

    @cached_property
    def set_sizes(self) -> tuple[np.ndarray, int]:
        """A sized segment's set sizes (int64) and their maximum, read once: segments never change."""
        sizes = sig_sizes(self.sigs)
        return sizes, int(sizes.max()) if sizes.shape[0] else 0

    @classmethod
    def build(cls, name: str, first_id: int, raw_keys, sigs: np.ndarray, band_keys: np.ndarray,
              banded: np.ndarray, sized: bool = False) -> _Segment:
        """A segment of tagged keys (a list of bytes, or already packed: (offsets, bytes)),
        signatures and (n, b) band keys; rows where ``banded`` is False get no band entries.
        ``sized``: each signature ends with its set size (little-endian uint32, :func:`sig_sizes`),
        and each band column is sorted by (key, size), as containment probing needs."""
        if isinstance(raw_keys, tuple):
            off, data = raw_keys
            off = np.asarray(off, dtype=np.int64)
            data = data if data.shape[0] else np.zeros(1, np.uint8)
            h = xxh64_batch(data, off, np.uint64(_KEY_SEED))
        else:
            off, data, h = _pack_keys(raw_keys)
        n = off.shape[0] - 1
        h = fold32(h)
        order = np.argsort(h, kind="stable")
        off = off.astype(np.uint32) if off[-1] < 2**32 else off
        rows = np.flatnonzero(banded).astype(np.uint32)
        if sized:     # rows by size first: the stable key sort below then leaves (key, size) order
            rows = rows[np.argsort(sig_sizes(_sig_rows(sigs, n))[rows], kind="stable")]
        bk = np.ascontiguousarray(fold32(np.asarray(band_keys, dtype=np.uint64)[rows]).T)     # (b, m)
        b = bk.shape[0]
        border = np.argsort(bk, axis=1, kind="stable")
        bands = np.take_along_axis(bk, border, axis=1) if b else bk
        band_row = rows[border] if b else np.zeros((0, rows.shape[0]), np.uint32)
        return cls(name, first_id, *map(_frozen, (
            _sig_rows(sigs, n), off, data, h[order], order.astype(np.uint32),
            np.ascontiguousarray(bands), np.ascontiguousarray(band_row, dtype=np.uint32))))

    _FILES = ("sigs", "key_off", "key_bytes", "key_hash", "key_row", "bands", "band_row")

    def write(self, folder: Path) -> None:
        folder.mkdir()
        for f in self._FILES:
            _save(folder / f"{f}.npy", getattr(self, f))
        _fsync_dir(folder)

    @classmethod
    def read(cls, folder: Path, name: str, first_id: int) -> _Segment:
        return cls(name, first_id, *(_load(folder / f"{f}.npy") for f in cls._FILES))

    def candidates(self, band_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query row, document id) for every band-key equality of the (q, b) ``band_keys``."""
        qs, ds = [], []
        q = band_keys.shape[0]
        folded = fold32(band_keys)
        for i in range(min(self.bands.shape[0], band_keys.shape[1])):
            col = self.bands[i]
            if col.shape[0] == 0:
                continue
            lo = np.searchsorted(col, folded[:, i], "left")
            hi = np.searchsorted(col, folded[:, i], "right")
            cnt = hi - lo
            tot = int(cnt.sum())
            if tot == 0:
                continue
            qi = np.repeat(np.arange(q, dtype=np.int64), cnt)
            start = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
            pos = start + np.arange(tot, dtype=np.int64)
            qs.append(qi)
            ds.append(np.asarray(self.band_row[i][pos], dtype=np.int64) + self.first_id)
        if not qs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(qs), np.concatenate(ds)


def _sig_rows(sigs, n: int) -> np.ndarray:
    """The signature bytes as n contiguous rows (n = 0 included: reshape(0, -1) cannot infer a width)."""
    a = np.ascontiguousarray(sigs, dtype=np.uint8)
    return a.reshape(n, -1) if n else a.reshape(0, a.shape[-1] if a.ndim == 2 else 0)


def _merge(name: str, first_id: int, parts: list[_Segment], deleted: np.ndarray,
           sized: bool = False) -> tuple[_Segment, np.ndarray]:
    """One segment of the live documents of ``parts`` (ids renumbered from ``first_id`` in order);
    returns it and the old ids of its rows."""
    koffs, kdata, sigs, bks, banded, old = [], [], [], [], [], []
    for s in parts:
        ids = np.arange(s.first_id, s.first_id + s.n, dtype=np.int64)
        live = ~np.isin(ids, deleted)
        rows = np.flatnonzero(live)
        b = s.bands.shape[0]
        full = np.zeros((s.n, b), dtype=np.uint64)     # folded keys (fold32 keeps them as they are)
        has = np.zeros(s.n, dtype=bool)
        if b and s.band_row.shape[1]:
            r = s.band_row.astype(np.int64)
            for i in range(b):
                full[r[i], i] = s.bands[i]
            has[r[0]] = True
        koff = np.asarray(s.key_off, dtype=np.int64)
        start, length = koff[rows], koff[rows + 1] - koff[rows]
        at = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(length, out=at[1:])
        take = np.repeat(start - at[:-1], length) + np.arange(at[-1], dtype=np.int64)
        koffs.append(length)
        kdata.append(np.asarray(s.key_bytes)[take])
        sigs.append(np.asarray(s.sigs[rows]))
        bks.append(full[rows])
        banded.append(has[rows])
        old.append(ids[rows])
    b = max((s.bands.shape[0] for s in parts), default=0)
    width = max((s.sigs.shape[1] for s in parts), default=0)
    sig = np.concatenate(sigs) if sigs else np.zeros((0, width), np.uint8)
    bk = np.concatenate(bks) if bks else np.zeros((0, b), np.uint64)
    lengths = np.concatenate(koffs) if koffs else np.zeros(0, np.int64)
    off = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    data = np.concatenate(kdata) if kdata else np.zeros(0, np.uint8)
    return (_Segment.build(name, first_id, (off, data), sig, bk,
                           np.concatenate(banded) if banded else np.zeros(0, bool), sized),
            np.concatenate(old) if old else np.zeros(0, np.int64))


# -- the write-ahead log ----------------------------------------------------------------------------
def _wal_record(first_id: int, raw_keys: list[bytes], sigs: np.ndarray, band_keys: np.ndarray,
                banded: np.ndarray, deleted: np.ndarray) -> bytes:
    off, data, _ = _pack_keys(raw_keys)
    head = json.dumps({"first_id": first_id, "n": len(raw_keys), "w": int(sigs.shape[1]) if sigs.ndim == 2 else 0,
                       "b": int(band_keys.shape[1]), "kb": int(off[-1]), "del": int(deleted.shape[0])}).encode()
    body = b"".join([struct.pack("<I", len(head)), head, off.astype("<i8").tobytes(), data[:off[-1]].tobytes(),
                     np.ascontiguousarray(sigs, dtype=np.uint8).tobytes(),
                     np.ascontiguousarray(band_keys, dtype="<u8").tobytes(),
                     np.asarray(banded, dtype=np.uint8).tobytes(), np.asarray(deleted, dtype="<i8").tobytes()])
    return _HEAD.pack(_MAGIC, len(body), zlib.crc32(body)) + body


def _read_records(data: bytes, pos: int = 0):
    """Complete, intact records of ``data`` from ``pos``: yields (end offset, record dict); stops at a
    torn or corrupt tail."""
    while pos + _HEAD.size <= len(data):
        magic, length, crc = _HEAD.unpack_from(data, pos)
        end = pos + _HEAD.size + length
        if magic != _MAGIC or end > len(data):
            return
        body = data[pos + _HEAD.size:end]
        if zlib.crc32(body) != crc:
            return
        hl = struct.unpack_from("<I", body, 0)[0]
        h = json.loads(body[4:4 + hl])
        p = 4 + hl
        n, w, b, kb, nd = h["n"], h["w"], h["b"], h["kb"], h["del"]
        off = np.frombuffer(body, "<i8", n + 1, p).astype(np.int64)
        p += 8 * (n + 1)
        kbytes = body[p:p + kb]
        p += kb
        sigs = np.frombuffer(body, np.uint8, n * w, p).reshape(n, w)
        p += n * w
        bk = np.frombuffer(body, "<u8", n * b, p).reshape(n, b).astype(np.uint64)
        p += 8 * n * b
        banded = np.frombuffer(body, np.uint8, n, p).astype(bool)
        p += n
        dele = np.frombuffer(body, "<i8", nd, p).astype(np.int64)
        keys = [kbytes[off[i]:off[i + 1]] for i in range(n)]
        yield end, {"first_id": h["first_id"], "keys": keys, "sigs": sigs, "bands": bk, "banded": banded,
                    "deleted": dele}
        pos = end


class SegmentStore(IndexStore):
    """:class:`~neardup.index.store.IndexStore` as a folder of memory-mapped segments (see the module
    documentation for the layout and the guarantees)."""

    def __init__(self, path: Path, readonly: bool, synchronous: str, timeout: float):
        self.path = Path(path)
        self.readonly = readonly
        self._sync = synchronous
        self._timeout = timeout
        self._lock_fd = None
        self._manifest: dict = {}
        self._stamp = None
        self._segments: list[_Segment] = []
        self._deleted = np.zeros(0, np.int64)
        self._tail: list[_Segment] = []       # the log's documents, as small in-memory runs
        self._tail_deleted: list[int] = []
        self._wal_pos = 0
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
        if p.exists() and not (p.is_dir() and not any(p.iterdir())):
            raise FileExistsError(f"{p} already exists; open it, or remove it to start over")
        tmp = p.parent / f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.building"
        try:
            tmp.mkdir()
        except OSError as exc:
            raise IndexStoreError(f"{p}: cannot create the index here ({exc.strerror or exc})") from None
        try:
            manifest = {"format": FORMAT, "generation": 0, "meta": dict(meta), "next_id": 1, "count": 0,
                        "segments": [], "deleted": None, "wal": "wal-0.log"}
            (tmp / "LOCK").touch()
            (tmp / "wal-0.log").touch()
            _write_atomic(tmp / MANIFEST, json.dumps(manifest, sort_keys=True).encode())
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
            _fsync_dir(p.parent if str(p.parent) else Path("."))
        finally:
            _remove(tmp)       # gone already when it was renamed into place
        return cls.open(p, synchronous=synchronous, timeout=timeout)

    @classmethod
    def open(cls, path, readonly: bool = False, synchronous: str = "NORMAL", timeout: float = 10.0) -> SegmentStore:
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"no index at {p}")
        if not p.is_dir() or not (p / MANIFEST).is_file():
            raise NotAnIndexError(f"{p} is not a neardup index folder (no {MANIFEST})")
        synchronous = str(synchronous).upper()
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be one of ('NORMAL', 'FULL'), got {synchronous!r}")
        st = cls(p, readonly, synchronous, timeout)
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
        try:
            fd = os.open(self.path / "LOCK", os.O_RDWR | os.O_CREAT, 0o666)
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
                        holder = (self.path / "LOCK").read_text().strip() or "another process"
                    except OSError:
                        holder = "another process"
                    raise IndexStoreError(f"{self.path} is being written by {holder}; one writer at a time "
                                          f"(waited {self._timeout:g} s) — open it read-only to query") from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        self._lock_fd = fd

    def _read_manifest(self) -> dict:
        try:
            m = json.loads((self.path / MANIFEST).read_bytes())
        except ValueError:
            raise NotAnIndexError(f"{self.path}/{MANIFEST} is not JSON") from None
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            fmt = m.get("format") if isinstance(m, dict) else "?"
            raise NotAnIndexError(f"{self.path} is a neardup index of format {fmt}; this neardup reads format {FORMAT}")
        return m

    def _manifest_stamp(self):
        st = os.stat(self.path / MANIFEST)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _load_manifest(self) -> None:
        for _ in range(20):     # a writer may publish a newer manifest and delete files meanwhile
            stamp = self._manifest_stamp()
            m = self._read_manifest()
            try:
                segs = [_Segment.read(self.path / s["dir"], s["dir"], s["first_id"]) for s in m["segments"]]
                deleted = (_load(self.path / m["deleted"]).astype(np.int64) if m["deleted"]
                           else np.zeros(0, np.int64))
                wal = (self.path / m["wal"]).read_bytes()
            except FileNotFoundError:
                if self._manifest_stamp() != stamp:
                    continue
                raise IndexStoreError(f"{self.path}: a file named by {MANIFEST} is missing") from None
            break
        else:
            raise IndexStoreError(f"{self.path}: the manifest kept changing while it was read")
        self._manifest, self._stamp, self._segments, self._deleted = m, stamp, segs, deleted
        self._tail, self._tail_deleted, self._wal_pos = [], [], 0
        self._replay(wal)

    def _replay(self, data: bytes) -> None:
        for end, rec in _read_records(data, self._wal_pos):
            self._apply(rec)
            self._wal_pos = end

    def _apply(self, rec: dict) -> None:
        if rec["keys"]:
            seg = _Segment.build("wal", rec["first_id"], rec["keys"], rec["sigs"], rec["bands"], rec["banded"],
                                 self.sized)
            self._tail.append(seg)
            self._compact_tail()
        self._tail_deleted.extend(int(i) for i in rec["deleted"])

    def _compact_tail(self) -> None:
        """Keep O(log n) in-memory runs: merge the last two while the newer is at least half the older."""
        while len(self._tail) >= 2 and self._tail[-1].n * 2 >= self._tail[-2].n:
            b, a = self._tail.pop(), self._tail.pop()
            seg, _ = _merge("wal", a.first_id, [a, b], np.zeros(0, np.int64), self.sized)
            self._tail.append(seg)

    def _recover(self) -> None:
        """Writer only: drop a torn log tail, and files no manifest names (a crashed writer's)."""
        wal = self.path / self._manifest["wal"]
        if wal.stat().st_size != self._wal_pos:
            with open(wal, "r+b") as fh:
                fh.truncate(self._wal_pos)
                fh.flush()
                os.fsync(fh.fileno())
        named = {MANIFEST, "LOCK", self._manifest["wal"], *(s["dir"] for s in self._manifest["segments"])}
        if self._manifest["deleted"]:
            named.add(self._manifest["deleted"])
        for f in self.path.iterdir():
            if f.name in named:
                continue
            if (f.name.startswith(("seg-", ".seg-")) and f.is_dir()
                    or f.name.startswith(("wal-", "deleted-", f".{MANIFEST}.")) and f.is_file()):
                _remove(f)

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

    def _all(self) -> list[_Segment]:
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
        """Online add: one log record (atomic by its CRC), then in memory; at :data:`FLUSH_DOCS`
        logged documents they become a segment."""
        self._check_writable()
        raw, sigs, band_keys, banded, old = self._prepare(keys, signatures, band_keys, banded, replace)
        n = len(raw)
        if n == 0:
            return
        first = int(self._manifest["next_id"]) + sum(s.n for s in self._tail)
        rec = _wal_record(first, raw, sigs, band_keys, banded, old)
        self._append(rec)
        self._wal_pos += len(rec)
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
        rec = _wal_record(first, [], np.zeros((0, 0), np.uint8), np.zeros((0, 0), np.uint64),
                          np.zeros(0, bool), np.array(docs, dtype=np.int64))
        self._append(rec)
        self._wal_pos += len(rec)
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
        m = dict(self._manifest)
        gen = int(m["generation"]) + 1
        made: list[Path] = []
        try:
            next_id = int(m["next_id"])
            segs = list(m["segments"])
            seg_objs = list(self._segments)
            dead = self._dead()
            if self._tail:
                name = f"seg-{gen}-{secrets.token_hex(3)}-w"
                merged, _ = _merge(name, next_id, self._tail, np.zeros(0, np.int64), self.sized)
                # the log's ids were assigned consecutively from next_id, so they carry over unchanged
                next_id += merged.n
                merged.write(self.path / name)
                made.append(self.path / name)
                segs.append({"dir": name, "first_id": merged.first_id, "n": merged.n})
                seg_objs.append(merged)
            added = None
            if extra is not None and extra[0]:
                raw, sigs, band_keys, banded, old = extra
                name = added = f"seg-{gen}-{secrets.token_hex(3)}"
                seg = _Segment.build(name, next_id, raw, sigs, band_keys, banded, self.sized)
                seg.write(self.path / name)
                made.append(self.path / name)
                segs.append({"dir": name, "first_id": next_id, "n": seg.n})
                seg_objs.append(seg)
                next_id += seg.n
                dead = np.union1d(dead, old)
            if merge_all or len(segs) > MERGE_SEGMENTS:
                segs, seg_objs, dead, next_id = self._merge_segments(gen, segs, seg_objs, dead, next_id, made,
                                                                     merge_all, keep=added)
            m["segments"], m["next_id"], m["generation"] = segs, next_id, gen
            m["count"] = sum(s["n"] for s in segs) - int(dead.shape[0])
            if dead.shape[0]:
                m["deleted"] = f"deleted-{gen}.npy"
                _save(self.path / m["deleted"], dead)
                made.append(self.path / m["deleted"])
            else:
                m["deleted"] = None
            m["wal"] = f"wal-{gen}.log"
            with open(self.path / m["wal"], "wb") as fh:
                os.fsync(fh.fileno())
            made.append(self.path / m["wal"])
            if callable(meta):
                meta = meta(added)
            if meta:
                m["meta"] = {**m["meta"], **dict(meta)}
            _fsync_dir(self.path)
            _write_atomic(self.path / MANIFEST, json.dumps(m, sort_keys=True).encode())
        except OSError as exc:
            for f in made:
                _remove(f)
            raise IndexStoreError(f"{self.path}: cannot write the index ({exc.strerror or exc}); "
                                  "it is unchanged") from None
        old_m = self._manifest
        if self._wal_fh is not None:
            self._wal_fh.close()
            self._wal_fh = None
        self._manifest, self._stamp = m, self._manifest_stamp()
        self._segments = [_Segment.read(self.path / s["dir"], s["dir"], s["first_id"]) for s in segs]
        self._deleted = _load(self.path / m["deleted"]).astype(np.int64) if m["deleted"] else np.zeros(0, np.int64)
        self._tail, self._tail_deleted, self._wal_pos = [], [], 0
        live = {s["dir"] for s in segs}
        for s in old_m["segments"]:          # readers that mapped them keep their mappings
            if s["dir"] not in live:
                _remove(self.path / s["dir"])
        for f in made:                       # the log's segment when a merge took it in: never published
            if f.name.startswith("seg-") and f.name not in live:
                _remove(f)
        for name in (old_m["wal"], old_m["deleted"]):
            if name and name not in (m["wal"], m["deleted"]):
                _remove(self.path / name)

    def _merge_segments(self, gen, segs, seg_objs, dead, next_id, made, merge_all, keep=None):
        """Merge all segments (``merge_all``: also drops tombstones) or the smaller half, into one
        new segment; the merged documents get new ids after ``next_id``. The segment ``keep`` (just
        added, named by a run record) stays as it is unless everything is merged."""
        order = sorted((i for i in range(len(segs)) if merge_all or segs[i]["dir"] != keep),
                       key=lambda i: segs[i]["n"])
        pick = sorted(order if merge_all else order[: len(segs) // 2 + 1])
        name = f"seg-{gen}-{secrets.token_hex(3)}-m"
        keep = [i for i in range(len(segs)) if i not in set(pick)]
        gone = np.concatenate([np.arange(seg_objs[i].first_id, seg_objs[i].first_id + seg_objs[i].n)
                               for i in pick]) if pick else np.zeros(0, np.int64)
        if np.isin(gone, dead).all():      # every picked row deleted: the segments go, none replaces them
            return [segs[i] for i in keep], [seg_objs[i] for i in keep], np.setdiff1d(dead, gone), next_id
        merged, old_ids = _merge(name, next_id, [seg_objs[i] for i in pick], dead, self.sized)
        merged.write(self.path / name)
        made.append(self.path / name)
        dead = np.setdiff1d(dead, gone)
        segs = [segs[i] for i in keep] + [{"dir": name, "first_id": next_id, "n": merged.n}]
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
                        keys[j] = decode_key(s.key(r))
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


def _remove(path: Path) -> None:
    try:
        if path.is_dir():
            for f in path.iterdir():
                f.unlink()
            path.rmdir()
        else:
            path.unlink()
    except FileNotFoundError:
        pass


__all__ = ["FLUSH_DOCS", "FORMAT", "SegmentStore", "decode_key", "encode_key"]
