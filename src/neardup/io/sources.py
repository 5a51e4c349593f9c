"""What the user named → input specs: paths, globs, directories, ``-`` and pipes, each checked
before any row is read (exists, is readable, is not named twice, is not a loop).

Rules:

* a literal path that exists is taken as it is, even if it contains glob characters; otherwise a
  pattern with ``*``, ``?`` or ``[`` is a glob (sorted; matching nothing is an error);
* a directory is listed once, here (see :mod:`.formats.directory`);
* ``-`` is standard input and may be named once; a FIFO or character device (``<(cmd)``,
  ``/dev/stdin``) is a pipe: it can be read once, so ``dedup`` copies it into its work folder
  first (:func:`spool`); a terminal is refused (nothing would arrive);
* the same file named twice, or a file or folder inside another input folder, is refused: its
  rows would be read twice;
* a spec's ``path`` is absolute (readers in other processes and a JVM resolve relative paths from
  their own working folders); its ``label`` is the path as the user named it.
"""
from __future__ import annotations

import dataclasses
import errno
import glob
import os
import stat
import sys

from ..errors import InputFormatError, OutputError
from .compression import open_source, sniff, split_suffix
from .formats import InputSpec, check_format, fmt_for_name, list_entries
from .formats.base import MAX_LINE_BYTES, long_line

STDIN_LABEL = "<stdin>"


def expand_inputs(patterns: list[str], fmt: str | None = None) -> list[InputSpec]:
    """Paths, globs, directories and ``-`` → input specs, checked; see the module docstring."""
    check_format(fmt)
    specs: list[InputSpec] = []
    for pat in patterns:
        if pat == "-":
            if any(s.label == STDIN_LABEL for s in specs):
                raise InputFormatError("'-' (standard input) is named twice")
            if sys.stdin is None or sys.stdin.closed:
                raise InputFormatError("'-': standard input is closed")
            if _stdin_is_tty():
                raise InputFormatError("'-': standard input is a terminal; pipe the data in "
                                       "(cat corpus.jsonl | neardup …) or name the files")
            specs.append(InputSpec("-", fmt or "jsonl", None, STDIN_LABEL, pipe=True, sniff=True))
            continue
        if pat == "":
            raise InputFormatError("an input path is empty ('')")
        if os.path.lexists(pat) or not glob.has_magic(pat):
            matches = [pat]
        else:
            matches = sorted(glob.glob(pat, recursive=True))
            if not matches:
                raise InputFormatError(f"{pat}: no file matches")
        specs.extend(_spec(m, fmt) for m in matches)
    _check_overlap(specs)
    return specs


def _spec(path: str, fmt: str | None) -> InputSpec:
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputFormatError(f"{path}: symbolic link loop") from None
        if os.path.islink(path):
            raise InputFormatError(f"{path}: broken symbolic link (to {os.readlink(path)!r})") from None
        if exc.errno == errno.ENOENT:
            raise InputFormatError(f"{path}: no such file or directory") from None
        raise InputFormatError(f"{path}: cannot access ({exc.strerror or exc})") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        if fmt not in (None, "dir"):
            raise InputFormatError(f"{path}: is a folder; --input-format {fmt} reads files")
        claimed = fmt_for_name(path.rstrip(os.sep), default="")
        if fmt is None and claimed:
            raise InputFormatError(f"{path}: a folder named like a {claimed} file (a dataset written by Spark or "
                                   f"Hive?): name its part files ({os.path.join(path, '*')}), or pass "
                                   "--input-format dir to read each file below it as one document")
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputFormatError(f"{path}: cannot read this folder (permission denied)")
        entries, links = list_entries(os.path.abspath(path))
        return InputSpec(os.path.abspath(path), "dir", None, path, entries=entries, links=links)
    if fmt == "dir":
        raise InputFormatError(f"{path}: --input-format dir needs a folder")
    codec = split_suffix(path)[1]
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        if os.path.realpath(path).startswith("/dev/tty") or (stat.S_ISCHR(mode) and _is_tty(path)):
            raise InputFormatError(f"{path}: is a terminal; pipe the data in or name files")
        f = fmt or fmt_for_name(path, default="jsonl")
        _check_codec(path, f, codec)
        return InputSpec(os.path.abspath(path), f, codec, path, pipe=True, sniff=codec is None)
    if not stat.S_ISREG(mode):
        raise InputFormatError(f"{path}: not a regular file, folder or pipe")
    f = fmt or fmt_for_name(path)
    _check_codec(path, f, codec)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if f != "parquet" and codec is None:
        _check_utf8(path, head)
    return InputSpec(os.path.abspath(path), f, codec, path, stamp=(st.st_size, st.st_mtime_ns))


# byte-order marks of the encodings a text file may come in besides UTF-8 (neither byte of
# UTF-16's FF FE / FE FF is ever in UTF-8, so no UTF-8 file starts with one)
_OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
               (b"\xfe\xff", "UTF-16"))


def _check_utf8(path: str, head: bytes) -> None:
    """A text input that starts with a UTF-16 or UTF-32 byte-order mark is refused: read as UTF-8 its
    rows would be a malformed-JSON error, a CSV header of NUL-riddled names, or text lines of
    garbage documents, none of them saying why."""
    for bom, name in _OTHER_BOMS:
        if head.startswith(bom):
            raise InputFormatError(f"{path}: is {name} text (it starts with a {name} byte-order mark); neardup "
                                   f"reads UTF-8: convert it first (iconv -f {name} -t UTF-8)")


def _stdin_is_tty() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):   # replaced by a test harness: not a terminal
        return False


def _is_tty(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def _check_codec(path: str, fmt: str, codec: str | None) -> None:
    if fmt == "parquet" and codec:
        raise InputFormatError(f"{path}: Parquet files are compressed internally; remove the {codec} wrapper")


def _check_overlap(specs: list[InputSpec]) -> None:
    """No file read twice: the same path twice, or an input inside an input folder."""
    seen: dict[str, str] = {}
    folders: list[tuple[str, str]] = []
    for s in specs:
        if s.pipe:
            continue
        real = os.path.realpath(s.path)
        if real in seen:
            raise InputFormatError(f"{s.label}: named twice (also as {seen[real]}); its rows would be read twice")
        seen[real] = s.label
        if s.fmt == "dir":
            folders.append((real, s.label))
    for s in specs:
        if s.pipe:
            continue
        real = os.path.realpath(s.path)
        for folder, label in folders:
            if real != folder and real.startswith(folder.rstrip(os.sep) + os.sep):
                raise InputFormatError(f"{s.label}: is inside the input folder {label}; its rows would be read twice")


def spool(specs: list[InputSpec], folder: str) -> list[InputSpec]:
    """Pipes copied once into ``folder`` (the run's work folder) so that both passes read the same
    bytes; their codec is recognised from the first bytes when their name does not give one."""
    out = []
    for k, s in enumerate(specs):
        if not s.pipe:
            out.append(s)
            continue
        dest = os.path.join(folder, f"input-{k}")
        try:
            src = open_source(s.path)
        except OSError as exc:
            raise InputFormatError(f"{s.label}: cannot read ({exc.strerror or exc})") from None
        with src:
            try:
                with open(dest, "wb") as dst:
                    _copy_lines(s, src, dst)
            except OSError as exc:
                if exc.filename == dest or exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                    raise OutputError(f"{folder}: cannot store a copy of {s.label} ({exc.strerror or exc})") from None
                raise InputFormatError(f"{s.label}: cannot read ({exc.strerror or exc})") from None
        codec = s.compression
        if s.sniff:
            with open(dest, "rb") as fh:
                codec = sniff(fh.read(16))
        st = os.stat(dest)
        out.append(dataclasses.replace(s, path=dest, compression=codec, sniff=False,
                                       stamp=(st.st_size, st.st_mtime_ns)))
    return out


def _copy_lines(spec: InputSpec, src, dst) -> None:
    """Copy a pipe to ``dst``; a plain (uncompressed) text stream whose line grows past
    :data:`~neardup.io.formats.base.MAX_LINE_BYTES` stops the copy (an endless stream of one line,
    ``/dev/zero``, would fill the disk) — named by its line, as the line readers name it."""
    check = spec.compression is None     # (compressed bytes hold a 0x0A every few hundred bytes: never a run this long)
    run = line = 0        # bytes since the last newline, and newlines so far
    while chunk := src.read(1 << 20):
        dst.write(chunk)
        if check:
            at = chunk.rfind(b"\n")
            if at < 0:
                run += len(chunk)
            else:
                line += chunk.count(b"\n")
                run = len(chunk) - at - 1
            if run > MAX_LINE_BYTES:
                raise long_line(spec.label, line + 1)


__all__ = ["STDIN_LABEL", "expand_inputs", "spool"]
