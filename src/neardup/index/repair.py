"""``neardup index verify IDX [--repair NEW]``: check every byte of an index folder, and salvage
what verifies into a new index.

:func:`verify_index` reads the manifest, each segment's files (checksums against the manifest,
then the values the kernels index with), the list of removed documents, and the whole log
(every record's checksum and number, see :mod:`neardup.index.wal`), without opening the index
the usual way — so it reports on an index that refuses to open. It returns a report: per part
what is wrong, and how many documents that puts at risk.

:func:`repair_index` builds a new index (same kind and parameters) from what verifies: each
segment whose signatures and keys verify (its band tables and hashes are rebuilt from them, so a
damaged band file loses nothing), then every verifying log record in order (adds, replacements,
removals). What it cannot recover is listed: a segment whose signatures or keys are damaged
(its documents are lost), a damaged stretch of the log (the documents it held are unknown), a
damaged list of removed documents (documents removed earlier may come back). The source is
never changed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputFormatError
from . import wal
from .disk import open_index_class
from .files import digest, load_array
from .segment import Segment, decode_key
from .segments import MANIFEST, manifest_problem, manifest_shape_problem
from .store import IndexCorruptError, NotAnIndexError

_KEY_FILES = ("key_off.npy", "key_bytes.npy")


def _manifest(path: Path) -> dict:
    p = path / MANIFEST
    if not p.is_file():
        raise NotAnIndexError(f"{path} is not a neardup index folder (no {MANIFEST})")
    try:
        m = json.loads(p.read_bytes())
        why = manifest_shape_problem(m) if isinstance(m, dict) else "not a JSON object"
        if why:
            raise InputFormatError(why)
    except (ValueError, RecursionError) as exc:
        raise IndexCorruptError(f"{p}: unreadable ({exc}); nothing can be verified or salvaged without it") from None
    return m


def _config(path: Path, m: dict) -> dict:
    """The index's parameters, as its manifest keeps them (what a new index is made with)."""
    try:
        config = json.loads(m["meta"]["config"])
        if not isinstance(config, dict):
            raise InputFormatError("not a JSON object")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexCorruptError(f"{path / MANIFEST}: the index's parameters are unreadable ({exc}); nothing can be "
                                "salvaged without them") from None
    return config


def _segment_report(path: Path, s: dict) -> dict:
    """What is wrong with one segment, and whether its signatures and keys (what a repair needs)
    verify."""
    folder = path / str(s.get("dir"))
    out = {"segment": s.get("dir"), "documents": s.get("n"), "problems": [], "salvageable": False}
    files = s.get("files") or {}
    bad_files = set()
    for name, rec in sorted(files.items()):
        try:
            got = digest(folder / name)
        except OSError as exc:
            got = None
            out["problems"].append(f"{folder / name}: {exc.strerror or exc}")
        if got is not None and got != list(rec):
            out["problems"].append(f"{folder / name}: checksum mismatch (the manifest recorded {rec[1]}, "
                                   f"{rec[0]} bytes; the file has {got[1]}, {got[0]} bytes)")
        if got != list(rec):
            bad_files.add(name)
    try:
        seg = Segment.read(folder, s["dir"], s["first_id"], s["n"], None if bad_files else files)
    except (IndexCorruptError, OSError, KeyError, TypeError) as exc:
        seg = None
        if not bad_files:
            out["problems"].append(str(exc))
    if seg is not None and not bad_files:
        out["problems"] += seg.verify()
    core = not ({"sigs.npy", *_KEY_FILES} & bad_files)
    if core and seg is None:         # a band or hash file is beyond reading: the core may still be
        try:
            seg = _core(folder, s)
        except (IndexCorruptError, OSError, ValueError) as exc:
            out["problems"].append(str(exc))
            core = False
    out["salvageable"] = core and seg is not None and (not files or not bad_files & {"sigs.npy", *_KEY_FILES})
    return out


def _core(folder: Path, s: dict):
    """A stand-in segment of just the signatures and keys (for a repair when other files are bad)."""
    sigs = load_array(folder / "sigs.npy", None, (np.dtype(np.uint8),), 2)
    off = load_array(folder / "key_off.npy", None, None, 1).astype(np.int64)
    kb = load_array(folder / "key_bytes.npy", None, (np.dtype(np.uint8),), 1)
    if sigs.shape[0] != s["n"] or off.shape[0] != s["n"] + 1 or (np.diff(off) < 0).any() or off[-1] > kb.shape[0]:
        raise IndexCorruptError(f"{folder}: its signatures and keys do not fit each other")
    z = np.zeros((0, 0), np.uint32)
    return Segment(s["dir"], s["first_id"], sigs, off, kb, np.zeros(0, np.uint32), np.zeros(0, np.uint32), z, z)


def verify_index(path) -> dict:
    """The report of an index folder (see the module docstring): ``ok``, ``segments`` (one entry
    each), ``removed`` (problems of the list of removed documents), ``log`` (records, documents,
    ``torn_tail`` offset or None, ``damaged`` byte ranges) and ``documents_at_risk``."""
    path = Path(path)
    m = _manifest(path)
    segs = [_segment_report(path, s) for s in m["segments"]]
    removed = []
    if m.get("deleted"):
        p = path / m["deleted"]
        try:
            if m.get("deleted_file") and digest(p) != list(m["deleted_file"]):
                removed.append(f"{p}: checksum mismatch")
            else:
                load_array(p, None, (np.dtype(np.int64),), 1)
        except (IndexCorruptError, OSError) as exc:
            removed.append(str(exc) if isinstance(exc, IndexCorruptError) else f"{p}: {exc.strerror or exc}")
    log = _log_report(path, m)
    manifest = [f"{path / MANIFEST}: {why}"] if (why := manifest_problem(m)) else []
    at_risk = sum(s["documents"] or 0 for s in segs if s["problems"])
    ok = not any(s["problems"] for s in segs) and not removed and not log["damaged"] and not manifest
    return {"path": str(path), "ok": ok, "format": m.get("format"), "manifest": manifest, "segments": segs,
            "removed": removed, "log": log,
            "documents_at_risk": at_risk}


def _log_data(path: Path, m: dict):
    try:
        return (path / str(m.get("wal"))).read_bytes()
    except OSError as exc:
        return exc


def _log_report(path: Path, m: dict) -> dict:
    data = _log_data(path, m)
    if isinstance(data, OSError):
        return {"file": m.get("wal"), "records": 0, "documents": 0, "torn_tail": None,
                "damaged": [{"start": 0, "end": None, "why": data.strerror or str(data)}]}
    good, bad = wal.salvage(data, int(m.get("wal_salt", 0)), int(m.get("format", 3)))
    docs = 0
    for _, _, body in good:
        try:
            docs += len(wal.decode_body(body)["keys"])
        except (ValueError, IndexError, UnicodeDecodeError):
            pass
    torn = [b for b in bad if b[2] == "torn tail"]
    return {"file": m.get("wal"), "records": len(good), "documents": docs,
            "torn_tail": torn[0][0] if torn else None,
            "damaged": [{"start": a, "end": b, "why": why} for a, b, why in bad if why != "torn tail"]}


def repair_index(path, new_path) -> dict:
    """Salvage what verifies in the index at ``path`` into a new index at ``new_path`` (see the
    module docstring); returns :func:`verify_index`'s report with ``recovered`` (documents in the
    new index) and ``lost`` (what could not be recovered, in words)."""
    path, new_path = Path(path), Path(new_path)
    report = verify_index(path)
    m = _manifest(path)
    cls = open_index_class(m["meta"])
    config = _config(path, m)
    lost = []
    new = cls._create(new_path, config, exist_ok=False, store=None, options={})
    try:
        removed = np.zeros(0, np.int64)
        if m.get("deleted") and not report["removed"]:
            removed = np.asarray(load_array(path / m["deleted"], None, (np.dtype(np.int64),), 1))
        elif m.get("deleted"):
            lost.append("the list of removed documents is damaged: documents removed before the last compaction "
                        "may be in the new index again")
        cores = {}
        for rep, s in zip(report["segments"], m["segments"]):
            if not rep["salvageable"]:
                lost.append(f"segment {s['dir']}: {s['n']} documents (its signatures or keys do not verify)")
                continue
            seg = cores[s["first_id"]] = _core(path / s["dir"], s)
            ids = np.arange(s["first_id"], s["first_id"] + s["n"], dtype=np.int64)
            live = np.flatnonzero(~np.isin(ids, removed))
            for lo in range(0, live.shape[0], 65536):
                rows = live[lo:lo + 65536]
                new._put_stored([decode_key(seg.key(int(r))) for r in rows], np.asarray(seg.sigs[rows]))
        data = _log_data(path, m)
        if isinstance(data, OSError):
            lost.append(f"{m['wal']}: {data.strerror or data}")
            data = b""
        good, bad = wal.salvage(data, int(m.get("wal_salt", 0)), int(m.get("format", 3)))
        logged: dict[int, object] = {}

        def key_of(doc: int):
            if doc in logged:
                return logged[doc]
            for first, seg in cores.items():
                if first <= doc < first + seg.n:
                    return decode_key(seg.key(doc - first))
            return None

        for _, _, body in good:
            rec = wal.decode_body(body)
            keys = [decode_key(k) for k in rec["keys"]]
            gone = [k for k in (key_of(d) for d in rec["deleted"].tolist()) if k is not None and k not in keys]
            if gone:
                new.store.delete(gone)
            if keys:
                new._put_stored(keys, rec["sigs"], bulk=False)
                logged.update((rec["first_id"] + i, k) for i, k in enumerate(keys))
        lost += [f"{m['wal']} bytes {a}–{b}: {why}; the documents it held are unknown"
                 for a, b, why in bad if why != "torn tail"]
        new.flush()
        recovered = len(new)
    finally:
        new.close()
    return {**report, "recovered": recovered, "lost": lost, "new": str(new_path)}


__all__ = ["repair_index", "verify_index"]
