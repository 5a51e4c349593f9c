"""Output files neardup writes (``sign -o``, ``index export -o``, ``idf fit -o`` and the sidecars
beside them, such as ``sigs.ids.jsonl``): one rule, checked before anything is read.

* ``-`` is standard output, written through (never replaced, never a file named ``-``);
* anything else must be a regular file or not exist yet: a folder, a device (``/dev/null``), a
  FIFO, a socket or a symbolic link is refused — neardup replaces only regular files, never a link
  or what it points to;
* it must not be an input, nor a file the command reads besides them (a word file: ``--idf``,
  ``--user-dict``, ``--stop-words``), nor the same file under another name (a hard link), nor lie
  inside an input folder, and its folder must exist;
* it is written under a new temporary name beside it (``O_EXCL``) and renamed over it only when
  complete: a failed or interrupted command leaves the previous file as it was.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from ..errors import OutputError

STDOUT = "-"
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def _within(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def _same(path: str, real: str, exists: bool, other: str) -> bool:
    """Whether ``path`` (resolved: ``real``) and ``other`` are one file, by name or as hard links."""
    if real == os.path.realpath(other):
        return True
    if exists:
        with contextlib.suppress(OSError):
            return os.path.samefile(path, other)
    return False


def check_output_file(path: str, inputs=(), what: str = "-o", files=()) -> str:
    """``path`` checked by the module's rule against ``inputs`` (input specs: ``path``, ``label``,
    ``fmt``, ``pipe``) and ``files``, the (option, path) of the other files the command reads
    (:func:`~neardup.text.dictionaries.word_files`); returns it. :class:`OutputError` naming ``what``
    and the path otherwise."""
    if path is None or str(path).strip() == "":
        raise OutputError(f"{what}: the output file name is empty")
    path = os.fspath(path)
    if path == STDOUT:
        return path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputError(f"{path}: is a symbolic link; {what} replaces only regular files (give the file it "
                              "points to, or another name)")
        for test, kind in _KINDS:
            if test(st.st_mode):
                raise OutputError(f"{path}: is {kind}; {what} needs a regular file (or - for standard output)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: its folder {folder} does not exist")
    real = os.path.realpath(path)
    for spec in inputs:
        if getattr(spec, "pipe", False) or getattr(spec, "path", None) in (None, STDOUT):
            continue
        if _same(path, real, st is not None, spec.path):
            raise OutputError(f"{path}: is the input {spec.label}; {what} must name another file")
        if getattr(spec, "fmt", None) == "dir" and _within(real, os.path.realpath(spec.path)):
            raise OutputError(f"{path}: lies inside the input folder {spec.label}; the output would become an "
                              "input row; choose a file outside it")
    for option, other in files:
        if _same(path, real, st is not None, other):
            raise OutputError(f"{path}: is the file of {option}, which this command reads; {what} must name "
                              "another file")
    return path


@contextlib.contextmanager
def replacing(path: str):
    """A new temporary file beside ``path`` (yielded as its name) that replaces ``path`` only when
    the block ends without an error. Check ``path`` with :func:`check_output_file` first."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write here ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        yield tmp
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        if os.path.islink(path) or os.path.lexists(path) and not os.path.isfile(path):
            raise OutputError(f"{path}: became something other than a regular file while the command ran; "
                              "left as it is")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


__all__ = ["STDOUT", "check_output_file", "replacing"]
