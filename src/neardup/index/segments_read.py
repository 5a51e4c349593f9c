"""Reading the folder store (:mod:`neardup.index.segments`): snapshots (a reader catches up with a
newer manifest and log), key lookups by binary search of the folded key hashes, the segments'
arrays as the probes read them (:meth:`Reading.views`; the probes are :mod:`neardup.index.probe`),
fetching signatures, and the counts."""
from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from .segment import Segment, _pack_keys, encode_key, fold32
from .store import SegmentView


class Reading:
    """:class:`~neardup.index.segments.SegmentStore`'s read path: every method reads one snapshot."""

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
    # -- reading ----------------------------------------------------------------------------------
    def views(self) -> list[SegmentView]:
        """The live segments (those with documents) as :class:`~neardup.index.store.SegmentView`, each
        checked before a kernel reads it; call inside :meth:`snapshot`."""
        dead = self._dead()
        sized = self.sized
        out = []
        for s in self._all():
            if s.n == 0:
                continue
            s.ensure_checked()
            lo, hi = np.searchsorted(dead, [s.first_id, s.first_id + s.n])
            mask = np.zeros(s.n if hi > lo else 0, dtype=np.bool_)
            if hi > lo:
                mask[dead[lo:hi] - s.first_id] = True
            out.append(SegmentView(s.first_id, s.bands, s.band_row, s.sigs, mask, s.set_sizes if sized else None))
        return out

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

