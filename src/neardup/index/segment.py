"""One immutable segment of the folder store (:mod:`neardup.index.segments`): its arrays, how it
is built, written, opened, checked and merged, and the tagged keys it holds.

A segment ``seg-<gen>-<rand>/`` holds seven ``.npy`` files (see the store's docstring). Opening
(:meth:`Segment.read`) maps them and checks what costs no read of the data: each file's size
against the manifest's record, its dtype and dimensions, and the shapes against each other and
the manifest's document count. :meth:`Segment.verify` checks the rest: every file's xxh3-64
against the manifest, and the values the kernels index with — rows below the document count,
key offsets increasing within the key bytes, sorted columns. A segment is verified before any
kernel reads it (:meth:`Segment.checked`: the row ranges, once per process; the whole of it when
the index is small enough, :data:`VERIFY_ON_OPEN`), and before a merge copies it into a new one, so
damage is never laundered into a file with a fresh checksum.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ..kernels.hashing import xxh64_batch
from .files import SEGMENT_FILES, digest, fsync_dir, load_array, save_array
from .store import IndexCorruptError, check_key

_KEY_SEED = 0x6B6579            # xxh64 seed of key hashes
VERIFY_ON_OPEN = 1 << 30        # indexes of at most this many bytes of segments are checksummed at each open
_U32 = (np.dtype(np.uint32),)
_DTYPES = {"sigs": (np.dtype(np.uint8),), "key_off": (np.dtype(np.uint32), np.dtype(np.int64)),
           "key_bytes": (np.dtype(np.uint8),), "key_hash": _U32, "key_row": _U32, "bands": _U32, "band_row": _U32}


def encode_key(key) -> bytes:
    key = check_key(key)
    if isinstance(key, str):
        return b"s" + key.encode("utf-8", "surrogatepass")
    if isinstance(key, bytes):
        return b"b" + key
    return b"i" + struct.pack("<q", key)


def decode_key(raw: bytes):
    """The id of tagged key bytes (:func:`encode_key`); :class:`IndexCorruptError` for bytes that
    are not one (a damaged key file)."""
    tag, body = raw[:1], raw[1:]
    try:
        if tag == b"s":
            return body.decode("utf-8", "surrogatepass")
        if tag == b"b":
            return bytes(body)
        if tag == b"i" and len(body) == 8:
            return struct.unpack("<q", body)[0]
    except UnicodeDecodeError:
        pass
    raise IndexCorruptError(f"a stored id is not one neardup wrote ({bytes(raw[:12])!r}…); the key files are "
                            "damaged — run `neardup index verify`")


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


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view: segments never change, and a segment built in memory (the log's tail, a
    merge) then has the array types of one mapped from disk — numba compiles the probe once, not
    twice (3.5–4 s each, measured)."""
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass
class Segment:
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

    def key_id(self, row: int):
        """The id of ``row`` (:func:`decode_key`, its error naming this segment)."""
        try:
            return decode_key(self.key(row))
        except IndexCorruptError as exc:
            raise IndexCorruptError(f"segment {self.name}: {exc}") from None

    @cached_property
    def set_sizes(self) -> tuple[np.ndarray, int]:
        """A sized segment's set sizes (int64) and their maximum, read once: segments never change."""
        sizes = sig_sizes(self.sigs)
        return sizes, int(sizes.max()) if sizes.shape[0] else 0

    @classmethod
    def build(cls, name: str, first_id: int, raw_keys, sigs: np.ndarray, band_keys: np.ndarray,
              banded: np.ndarray, sized: bool = False) -> Segment:
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

    _FILES = SEGMENT_FILES

    def write(self, folder: Path) -> dict:
        """Write the segment as the new folder ``folder``; returns the manifest's record of its
        files (name → [size, xxh3-64 hex])."""
        folder.mkdir()
        files = {f"{f}.npy": save_array(folder / f"{f}.npy", getattr(self, f)) for f in self._FILES}
        fsync_dir(folder)
        return files

    @classmethod
    def read(cls, folder: Path, name: str, first_id: int, n: int | None = None, files: dict | None = None) -> Segment:
        """The segment of ``folder`` mapped, after the checks that read no data (the module
        docstring); ``n`` and ``files``: the manifest's document count and file records, when it
        has them (an index of format 2 has neither)."""
        files = files or {}
        a = {f: load_array(folder / f"{f}.npy", files.get(f"{f}.npy"), _DTYPES[f], 1 if f[:3] == "key" else 2)
             for f in cls._FILES}
        seg = cls(name, first_id, *(a[f] for f in cls._FILES))
        why = seg._shape_problem(n)
        if why:
            raise IndexCorruptError(f"{folder}: {why}; run `neardup index verify`")
        return seg

    def _shape_problem(self, n: int | None) -> str:
        rows = self.sigs.shape[0]
        if n is not None and rows != n:
            return f"sigs.npy holds {rows} documents where the manifest records {n}"
        if self.key_off.shape[0] != rows + 1 or self.key_hash.shape[0] != rows or self.key_row.shape[0] != rows:
            return "the key arrays' lengths do not match the signatures'"
        if self.bands.shape != self.band_row.shape or self.bands.shape[1] > rows:
            return "the band arrays' shapes do not match each other or the signatures'"
        return ""

    def verify(self, folder: Path | None = None, files: dict | None = None) -> list[str]:
        """What is wrong with the segment (empty: nothing): each file's checksum against ``files``
        (when given), then the values the kernels index with. Reads every byte."""
        bad = []
        for f, rec in sorted((files or {}).items()):
            got = digest(folder / f)
            if got != list(rec):
                bad.append(f"{folder / f}: its checksum (xxh3-64 {got[1]}, {got[0]} bytes) is not the manifest's "
                           f"({rec[1]}, {rec[0]} bytes)")
        if bad:
            return bad
        n = self.n
        koff = np.asarray(self.key_off, dtype=np.int64)
        checks = [
            (self.band_row.size == 0 or int(self.band_row.max()) < n, "band_row.npy points past the last document"),
            (n == 0 or int(self.key_row.max()) < n, "key_row.npy points past the last document"),
            (koff[0] == 0 and (np.diff(koff) >= 0).all() and koff[-1] <= self.key_bytes.shape[0],
             "key_off.npy is not increasing within key_bytes.npy"),
            ((np.diff(self.key_hash.astype(np.int64)) >= 0).all(), "key_hash.npy is not sorted"),
            (all((np.diff(self.bands[i].astype(np.int64)) >= 0).all() for i in range(self.bands.shape[0])),
             "bands.npy has a column that is not sorted"),
        ]
        where = f"{folder}: " if folder is not None else ""
        bad += [where + why for ok, why in checks if not ok]
        if not bad:
            self.__dict__["checked"] = True
        return bad

    def ensure_checked(self) -> None:
        """:attr:`checked`, for its side effect: :class:`IndexCorruptError` unless the rows verify."""
        if not self.checked:
            raise AssertionError("unreachable")

    @cached_property
    def checked(self) -> bool:
        """The row ranges the kernels index with, checked once (sets nothing else): True, or
        :class:`IndexCorruptError`. A :meth:`verify` that passed sets it too."""
        n = self.n
        if self.band_row.size and int(self.band_row.max()) >= n or n and int(self.key_row.max()) >= n:
            raise IndexCorruptError(f"segment {self.name}: an array points past its last document; "
                                    "run `neardup index verify`")
        return True


def _sig_rows(sigs, n: int) -> np.ndarray:
    """The signature bytes as n contiguous rows (n = 0 included: reshape(0, -1) cannot infer a width)."""
    a = np.ascontiguousarray(sigs, dtype=np.uint8)
    return a.reshape(n, -1) if n else a.reshape(0, a.shape[-1] if a.ndim == 2 else 0)


def merge(name: str, first_id: int, parts: list[Segment], deleted: np.ndarray,
           sized: bool = False) -> tuple[Segment, np.ndarray]:
    """One segment of the live documents of ``parts`` (ids renumbered from ``first_id`` in order);
    returns it and the old ids of its rows."""
    koffs, kdata, sigs, bks, banded, old = [], [], [], [], [], []
    for s in parts:
        s.ensure_checked()
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
    return (Segment.build(name, first_id, (off, data), sig, bk,
                           np.concatenate(banded) if banded else np.zeros(0, bool), sized),
            np.concatenate(old) if old else np.zeros(0, np.int64))



_Segment = Segment      # the name the store's code and tests used


__all__ = ["Segment", "VERIFY_ON_OPEN", "decode_key", "encode_key", "fold32", "merge", "sig_sizes"]
