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

:class:`SegmentStore` is put together here: its write path (log records, publishing a manifest,
merges, compaction) is this module's; :mod:`~neardup.index.segments_manifest` holds the names and
the manifest's checksum and shape, :mod:`~neardup.index.segments_open` creating, opening, the log's
replay and a writer's recovery, :mod:`~neardup.index.segments_read` snapshots, lookups and probes.
"""
from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from . import wal
from .files import fsync_dir, remove_owned, save_array, write_new
from .segment import Segment, _pack_keys, decode_key, encode_key, merge
from .segments_manifest import FORMAT, MANIFEST, PENDING, _plain, manifest_bytes
from .segments_manifest import manifest_problem as manifest_problem
from .segments_manifest import manifest_shape_problem as manifest_shape_problem
from .segments_open import Opening, building
from .segments_read import Reading
from .store import DuplicateKeyError, IndexStore, IndexStoreError, ReadOnlyError, check_batch

FLUSH_DOCS = 65536              # online adds kept in the log (and memory) before they become a segment
MERGE_SEGMENTS = 24             # more segments than this: an add merges the smaller ones


class SegmentStore(Opening, Reading, IndexStore):
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
                raise ConfigError("signatures of different lengths in one batch")
            sigs = np.frombuffer(b"".join(signatures), np.uint8).reshape(n, -1) if n else np.zeros((0, 0), np.uint8)
        have = self._width()
        if n and have is not None and sigs.shape[1] != have:
            raise ConfigError(f"signatures of {sigs.shape[1]} bytes; this index stores {have}")
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

    def backup(self, dest) -> dict:
        """A copy of the committed index as a new index folder ``dest``, for a writer (no write runs
        meanwhile: the caller's to ensure, as the service's lock does): the manifest, the segments and
        the removed ids it names — hard links where the file system allows (a named file never
        changes), else copies — and the log up to its last acknowledged record; built beside
        ``dest``, fsynced, then renamed into place. Returns what was linked, copied and how many bytes."""
        self._check_writable()
        dest = Path(dest)
        if dest.is_symlink() or dest.exists():
            raise FileExistsError(f"{dest} already exists; a backup is a new folder")
        tmp = building(dest, "backup")
        out = {"linked": 0, "copied": 0, "bytes": 0}

        def place(src: Path, to: Path) -> None:
            try:
                os.link(src, to, follow_symlinks=False)
                out["linked"] += 1
            except OSError:
                shutil.copyfile(src, to, follow_symlinks=False)
                with open(to, "rb+") as fh:
                    os.fsync(fh.fileno())
                out["copied"] += 1
            out["bytes"] += to.stat().st_size

        m = self._manifest
        try:
            for seg in m["segments"]:
                (tmp / seg["dir"]).mkdir()
                for f in sorted(os.listdir(self.path / seg["dir"])):
                    place(self.path / seg["dir"] / f, tmp / seg["dir"] / f)
                fsync_dir(tmp / seg["dir"])
            if m["deleted"]:
                place(self.path / m["deleted"], tmp / m["deleted"])
            with open(self.path / m["wal"], "rb") as src:
                write_new(tmp / m["wal"], src.read(self._wal_pos))
            out["copied"] += 1
            out["bytes"] += self._wal_pos
            manifest = (self.path / MANIFEST).read_bytes()
            write_new(tmp / MANIFEST, manifest)
            out["copied"] += 1
            out["bytes"] += len(manifest)
            write_new(tmp / "LOCK", b"")
            fsync_dir(tmp)
            os.rename(tmp, dest)
            fsync_dir(dest.parent)
        except OSError as exc:
            raise IndexStoreError(f"{dest}: the backup failed ({exc.strerror or exc}); nothing was left "
                                  "there") from None
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return out

    def compact(self) -> None:
        """One segment of the live documents: log folded in, tombstones dropped."""
        self._check_writable()
        self._publish(merge_all=True)

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



__all__ = ["FLUSH_DOCS", "FORMAT", "MANIFEST", "MERGE_SEGMENTS", "PENDING", "SegmentStore",
           "decode_key", "encode_key", "manifest_bytes", "manifest_problem", "manifest_shape_problem",
           "remove_empty_index"]
