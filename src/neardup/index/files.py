"""Durable, checksummed, owned files of the folder store (:mod:`neardup.index.segments`).

* Every file is created with ``O_EXCL`` (never over something that is there) and, for arrays,
  recorded in the manifest as ``[size, xxh3-64 hex]``: :func:`save_array` returns that pair
  while it writes, :func:`digest` recomputes it (about 20 GB/s from the page cache).
* :func:`load_array` maps a ``.npy`` and checks what costs nothing — the header, the dtype, the
  dimensions and the size against the manifest — turning any failure into one
  :class:`~neardup.index.store.IndexCorruptError` naming the file.
* :func:`remove_owned` deletes only a path the caller owns by the manifest's record, and only
  what it made inside it: a segment folder's known files, then the folder if it is empty.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import xxhash

from .store import IndexCorruptError

SEGMENT_FILES = ("sigs", "key_off", "key_bytes", "key_hash", "key_row", "bands", "band_row")
_CHUNK = 16 << 20


def taken(path) -> bool:
    """Whether ``path`` holds something a new index may not replace: anything but nothing there or an
    empty folder (a symbolic link counts, even a dangling one)."""
    p = Path(path)
    return p.is_symlink() or p.exists() and not (p.is_dir() and not any(p.iterdir()))


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Hashing:
    """A write-only file object that hashes what goes through it (for ``np.save``)."""

    def __init__(self, fh):
        self.fh, self.h, self.size = fh, xxhash.xxh3_64(), 0

    def write(self, b) -> int:
        self.h.update(b)
        self.size += len(memoryview(b).cast("B"))
        return self.fh.write(b)


def save_array(path: Path, arr: np.ndarray) -> list:
    """Write ``arr`` as a new ``.npy`` (refused if ``path`` exists), fsynced; returns its manifest
    record ``[size, xxh3-64 hex]``."""
    with open(path, "xb") as fh:
        w = _Hashing(fh)
        np.save(w, np.ascontiguousarray(arr), allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    return [w.size, w.h.hexdigest()]


def write_new(path: Path, data: bytes, sync: bool = True) -> None:
    """A new file holding ``data`` (refused if ``path`` exists)."""
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by a file holding ``data``: written under a new hidden name, fsynced,
    renamed, the folder fsynced."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    write_new(tmp, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def digest(path: Path) -> list:
    """``[size, xxh3-64 hex]`` of a file, read in chunks."""
    h, size = xxhash.xxh3_64(), 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return [size, h.hexdigest()]


def load_array(path: Path, record=None, dtypes=None, ndim: int | None = None) -> np.ndarray:
    """``path`` memory-mapped read-only, after the checks that read no data: its size is the
    manifest's ``record[0]`` (when given), it is a ``.npy`` of one of ``dtypes`` and ``ndim``
    dimensions (when given). :class:`IndexCorruptError` naming the file otherwise."""
    try:
        if record is not None and os.stat(path).st_size != record[0]:
            raise IndexCorruptError(f"{path}: {os.stat(path).st_size} bytes where the manifest recorded "
                                    f"{record[0]}; the file was changed or cut — run `neardup index verify`")
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except IndexCorruptError:
        raise
    except FileNotFoundError:
        raise
    except Exception as exc:        # numpy's header parser raises what its tokenizer meets (TokenError, SyntaxError, …)
        raise IndexCorruptError(f"{path}: not a readable array file ({type(exc).__name__}: {exc}); run "
                                "`neardup index verify`") from None
    if not isinstance(arr, np.ndarray) or (dtypes is not None and arr.dtype not in dtypes) \
            or (ndim is not None and arr.ndim != ndim) or not arr.dtype.isnative:
        raise IndexCorruptError(f"{path}: holds {getattr(arr, 'dtype', '?')} of shape {getattr(arr, 'shape', '?')}, "
                                "not what the index writes; run `neardup index verify`")
    return arr


def remove_owned(path: Path) -> None:
    """Delete ``path`` (a file, or a segment folder: its known files, then itself if empty),
    which the caller owns by the manifest's record; anything else inside a folder stays."""
    try:
        if path.is_dir() and not path.is_symlink():
            for f in SEGMENT_FILES:
                try:
                    (path / f"{f}.npy").unlink()
                except FileNotFoundError:
                    pass
            try:
                path.rmdir()
            except OSError:
                pass        # something neardup did not write is inside: it stays
        else:
            path.unlink()
    except FileNotFoundError:
        pass


__all__ = ["SEGMENT_FILES", "digest", "fsync_dir", "load_array", "remove_owned", "save_array", "write_atomic",
           "write_new"]
