"""A directory: each file below it is one document (its bytes as UTF-8, invalid bytes replaced; a
``.gz``, ``.zst`` or ``.bz2`` file decompressed, checked to its end like any compressed input).

The folder is listed once, when the run starts (:func:`list_entries`); pass 1 reads and pass 2
copies exactly that list, so files appearing meanwhile (an output folder, another process) never
shift a row. Order: a folder's files by name, then its sub-folders by name, depth first.
Symbolic links are followed — to files and to folders — except a link back to a folder above it
(a loop). Every entry that cannot be read (a broken link, a loop, a pipe or device, a folder or
file without permission) is a row with an error: the run stops naming it, or counts it as
skipped with ``--on-error skip``. A document's id is its path as the user would name it
(the input's path joined with the file's path inside it).
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator

import numpy as np

from ...errors import InputFormatError
from ..compression import open_read, open_write, split_suffix
from .base import DirEntry, Fields, Format, InputSpec, Row, check_count, decode


def list_entries(root: str) -> tuple[tuple[DirEntry, ...], tuple[str, ...]]:
    """Every file below ``root`` (links followed, loops refused) and every entry that cannot be read;
    and the real paths the symbolic links followed lead to (an output folder must not be among
    them, nor below them)."""
    out: list[DirEntry] = []
    links: list[str] = []
    st0 = os.stat(root)
    stack = [(root, "", frozenset({(st0.st_dev, st0.st_ino)}))]
    while stack:
        folder, rel, ancestors = stack.pop()
        try:
            with os.scandir(folder) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            out.append(DirEntry(rel or ".", folder, error=f"cannot list this folder ({exc.strerror or exc})"))
            continue
        subdirs = []
        for e in items:
            r = os.path.join(rel, e.name) if rel else e.name
            try:
                st = os.stat(e.path)          # follows symbolic links
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    why = "symbolic link loop"
                elif e.is_symlink():
                    why = f"broken symbolic link (to {os.readlink(e.path)!r})"
                else:
                    why = f"cannot access ({exc.strerror or exc})"
                out.append(DirEntry(r, e.path, error=why))
                continue
            if e.is_symlink():
                links.append(os.path.realpath(e.path))
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key in ancestors:
                    out.append(DirEntry(r, e.path, error="symbolic link loop: it leads back to a folder above it"))
                else:
                    subdirs.append((e.path, r, ancestors | {key}))
            elif stat.S_ISREG(st.st_mode):
                out.append(DirEntry(r, e.path, stamp=(st.st_size, st.st_mtime_ns)))
            else:
                out.append(DirEntry(r, e.path, error="not a regular file (a pipe, socket or device)"))
        stack.extend(reversed(subdirs))
    return tuple(out), tuple(links)


def entry_id(spec: InputSpec, e: DirEntry) -> str:
    return os.path.join(spec.label, e.rel)


class Directory(Format):
    name = "dir"
    records = False

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        self.check_fields(spec, fields)
        for i, e in enumerate(spec.entries, 1):
            where = f"{entry_id(spec, e)}"
            if e.error is not None:
                yield Row(i, None, None, error=f"{where}: {e.error}")
                continue
            try:
                with open_read(e.path, split_suffix(e.rel)[1], where) as fh:
                    text, bad = decode(fh.read())
            except InputFormatError as exc:    # unreadable, or a compressed file that is cut or corrupt
                yield Row(i, None, None, error=str(exc))
                continue
            yield Row(i, entry_id(spec, e), text, replaced=bad)

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str,
                     text_field: str) -> int:
        check_count(spec, keep.shape[0], len(spec.entries))
        os.makedirs(dest, exist_ok=True)
        written = 0
        for k, e in enumerate(spec.entries):
            if not keep[k]:
                continue
            target = os.path.join(dest, e.rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if touched is None or not touched[k]:
                shutil.copyfile(e.path, target)
                written += 1
                continue
            codec = split_suffix(e.rel)[1]
            where = entry_id(spec, e)
            with open_read(e.path, codec, where) as fh:
                new = edit(k, decode(fh.read())[0])
            if new is None:
                continue
            with open_write(target, codec) as out:
                out.write(new.encode("utf-8", "surrogatepass"))
            written += 1
        return written
