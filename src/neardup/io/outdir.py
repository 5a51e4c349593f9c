"""An output folder neardup owns: it never deletes or overwrites anything it did not write.

``with StagedOutput(outdir, inputs) as stage:`` checks the folder, then everything is written under
``stage.out`` (inside a work folder ``OUTDIR/.neardup-tmp-*``) and :meth:`StagedOutput.commit`
puts it in place. The rules:

* **Refused before anything is read or written** (:class:`~neardup.errors.OutputError`): an
  OUTDIR that is an input, lies inside an input folder, or contains an input; a path that exists
  and is not a folder, lies under a file, is empty, or cannot be created or written; a folder
  holding anything that is not a previous neardup run's output. Ownership is recognised by the
  manifest (``.neardup-manifest.json``) each run writes: it lists every file and folder the run
  wrote, with each file's size and modification time. A listed file that was changed since, or
  any file not listed, makes the folder foreign: the user's file is named and nothing is touched.
* **One writer at a time**: the run holds an exclusive ``flock`` on OUTDIR itself while it works;
  a second run into the same folder is refused. Work folders (``.neardup-tmp-*``) and the
  previous outputs set aside during a commit (``.neardup-old-*``) carry a marker file
  (``.neardup-work``) from the moment they are made; present while the lock is free, they
  belong to a run that died and are removed. A folder with such a name but no marker (and not
  empty) is the user's, and makes OUTDIR foreign like any other file.
* **Replaced as one unit, only on success**: until :meth:`commit`, the previous run's outputs are
  untouched, so a failed or interrupted run leaves them whole. The commit (renames on one file
  system, milliseconds) writes a manifest covering old and new files, sets the old outputs
  aside (``report.json`` first), moves the new ones in (``report.json`` last), then writes the
  final manifest and deletes what was set aside. A kill inside the commit can leave a folder
  without ``report.json`` (it never looks finished), which the next run cleans up.
* **Disk full** (or any write error) while staging becomes one line naming the folder; the
  previous outputs stay.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time

from .._version import __version__
from ..errors import OutputError

MANIFEST = ".neardup-manifest.json"
STDOUT = "-"                 # OUTDIR "-": the kept rows to standard output, nothing else written
TMP_PREFIX = ".neardup-tmp-"
OLD_PREFIX = ".neardup-old-"
MARK = ".neardup-work"       # inside each work folder: what makes a folder with our prefix ours
FINAL = "report.json"        # its presence marks a finished run: moved in last, set aside first
# descriptors holding an OUTDIR lock in this process: a forked worker closes them (flock belongs to
# the open file, which a fork shares), so the lock lives exactly as long as the run's own process
HELD_LOCKS: set[int] = set()


def release_inherited_locks() -> None:
    """In a process forked from a run (a signing worker): close its copies of the lock descriptors."""
    for fd in list(HELD_LOCKS):
        try:
            os.close(fd)
        except OSError:
            pass
    HELD_LOCKS.clear()


def _msg(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _is_within(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def check_outdir_path(outdir: str, inputs=()) -> str:
    """The absolute OUTDIR after the checks that need nothing written (see the module docstring)."""
    if outdir is None or str(outdir).strip() == "":
        raise OutputError("the output folder is empty (''); give -o DIR")
    outdir = os.fspath(outdir)
    real = os.path.realpath(outdir)
    if os.path.lexists(outdir) and not os.path.isdir(outdir):
        kind = "a file" if os.path.isfile(outdir) else "not a folder"
        raise OutputError(f"{outdir}: exists and is {kind}; -o needs a folder")
    # a parent that is a file: os.makedirs would fail with a confusing "Not a directory"
    parent = os.path.dirname(os.path.abspath(outdir))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise OutputError(f"{outdir}: {parent} is a file, so no folder can be made under it")
    for spec in inputs:
        if getattr(spec, "pipe", False):
            continue
        src = os.path.realpath(spec.path)
        if src == real:
            raise OutputError(f"{outdir}: is the input {spec.label}; choose another output folder")
        if spec.fmt == "dir" and _is_within(real, src):
            raise OutputError(f"{outdir}: lies inside the input folder {spec.label}; the outputs would "
                              "become input rows; choose a folder outside it")
        if _is_within(src, real):
            raise OutputError(f"{outdir}: contains the input {spec.label}, which the run's outputs could "
                              "replace; choose another output folder")
        for link in getattr(spec, "links", ()):
            if _is_within(link, real) or _is_within(real, link):
                raise OutputError(f"{outdir}: the input folder {spec.label} reaches it through a symbolic link "
                                  f"(to {link}); the outputs would become input rows; choose another folder")
    return os.path.abspath(outdir)


def _missing(path: str) -> list[str]:
    """The folders ``os.makedirs(path)`` would create: ``path`` and each missing parent, deepest first."""
    out = []
    while path and not os.path.lexists(path):
        out.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return out


def read_manifest(outdir: str) -> dict | None:
    path = os.path.join(outdir, MANIFEST)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OutputError(f"{path}: unreadable neardup manifest ({exc}); remove the folder's contents "
                          "or choose another output folder") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise OutputError(f"{path}: not a neardup manifest; choose another output folder")
    return data


def _walk(root: str, top: str = ""):
    """(relative path, is folder) of everything under ``root``; symbolic links are not followed."""
    base = os.path.join(root, top) if top else root
    with os.scandir(base) as it:
        items = sorted(it, key=lambda e: e.name)
    for e in items:
        rel = os.path.join(top, e.name) if top else e.name
        if e.is_dir(follow_symlinks=False):
            yield rel, True
            yield from _walk(root, rel)
        else:
            yield rel, False


def _stamp(path: str) -> list:
    st = os.lstat(path)
    return [st.st_size, st.st_mtime_ns]


def manifest_of(folder: str) -> dict:
    """The manifest entries of everything under ``folder``: each file with its accepted
    [size, mtime_ns] stamps (one; two while a commit replaces a file of the same name), folders."""
    files, dirs = {}, []
    for rel, is_dir in _walk(folder):
        if is_dir:
            dirs.append(rel)
        else:
            files[rel] = [_stamp(os.path.join(folder, rel))]
    return {"files": files, "dirs": dirs}


def _ours(path: str) -> bool:
    """A work or set-aside folder this tool made: it has the marker, or is empty (a run killed
    between making the folder and marking it)."""
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return not names or MARK in names


def _make_work_folder(outdir: str, prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix, dir=outdir)
    with open(os.path.join(path, MARK), "w", encoding="utf-8") as fh:
        fh.write(f"neardup {__version__} work folder of process {os.getpid()}\n")
    return path


def foreign_entries(outdir: str, manifest: dict | None) -> list[str]:
    """What in ``outdir`` neardup did not write (or that changed since): relative paths."""
    files = (manifest or {}).get("files", {})
    dirs = set((manifest or {}).get("dirs", []))
    out = []
    with os.scandir(outdir) as it:
        top = sorted(e.name for e in it)
    for name in top:
        path = os.path.join(outdir, name)
        if name == MANIFEST or (name.startswith((TMP_PREFIX, OLD_PREFIX)) and _ours(path)):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            if name not in dirs:
                out.append(name + "/")
                continue
            for rel, is_dir in _walk(outdir, name):
                if (rel not in dirs) if is_dir else (_stamp(os.path.join(outdir, rel)) not in files.get(rel, ())):
                    out.append(rel + ("/" if is_dir else ""))
        elif _stamp(path) not in files.get(name, ()):
            out.append(name)
    return out


class StagedOutput:
    """See the module docstring. ``stage.out``: where the run writes its outputs; ``stage.work``:
    scratch space on the same file system (spooled pipes), removed at the end."""

    def __init__(self, outdir: str, inputs=()):
        self.outdir = check_outdir_path(outdir, inputs)
        self.label = os.fspath(outdir)
        self._fd = None
        self.tmp = self.out = self.work = None
        self._made: list[str] = []       # the folders this run creates: OUTDIR, then the parents it lacked
        self._committed = False

    # -- opening ------------------------------------------------------------------------------
    def __enter__(self) -> StagedOutput:
        self._made = _missing(self.outdir)
        try:
            os.makedirs(self.outdir, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{self.label}: cannot create the output folder ({_msg(exc)})") from None
        try:
            self._lock()
            self._clean_stale()
            manifest = read_manifest(self.outdir)
            foreign = foreign_entries(self.outdir, manifest)
            if foreign:
                shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
                what = ("files neardup did not write, or changed since it wrote them" if manifest
                        else "files that are not a neardup run's output")
                raise OutputError(f"{self.label}: holds {what} ({shown}); nothing was touched — choose a new or "
                                  "empty folder, or move them away")
            try:
                self.tmp = _make_work_folder(self.outdir, TMP_PREFIX)
            except OSError as exc:
                raise OutputError(f"{self.label}: cannot write in the output folder ({_msg(exc)})") from None
            self.out = os.path.join(self.tmp, "out")
            self.work = os.path.join(self.tmp, "work")
            os.mkdir(self.out)
            os.mkdir(self.work)
        except BaseException:
            self._close()
            raise
        return self

    def _lock(self) -> None:
        try:
            import fcntl  # noqa: PLC0415  (POSIX only)
        except ImportError:  # not POSIX: no lock, and stale folders are left alone
            return
        try:
            self._fd = os.open(self.outdir, os.O_RDONLY)
        except OSError as exc:
            raise OutputError(f"{self.label}: cannot open the output folder ({_msg(exc)})") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            HELD_LOCKS.add(self._fd)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputError(f"{self.label}: another neardup run is writing to this folder; wait for it "
                                  "or choose another") from None
            os.close(self._fd)     # a file system without flock: run unlocked, leave stale folders alone
            self._fd = None

    def _clean_stale(self) -> None:
        if self._fd is None:
            return
        for name in os.listdir(self.outdir):
            path = os.path.join(self.outdir, name)
            if name.startswith((TMP_PREFIX, OLD_PREFIX)) and _ours(path):
                shutil.rmtree(path, ignore_errors=True)

    # -- committing ---------------------------------------------------------------------------
    def commit(self) -> None:
        """Replace the previous outputs by the staged ones (see the module docstring)."""
        old = read_manifest(self.outdir) or {"files": {}, "dirs": []}
        new = manifest_of(self.out)
        new_top = sorted(os.listdir(self.out), key=lambda n: (n == FINAL, n))
        old_top = sorted({p.split(os.sep, 1)[0] for p in [*old["files"], *old["dirs"]]} - {MANIFEST},
                         key=lambda n: (n != FINAL, n))
        try:
            both = {k: old["files"].get(k, []) + new["files"].get(k, []) for k in {*old["files"], *new["files"]}}
            self._write_manifest({"files": both, "dirs": sorted(set(old["dirs"]) | set(new["dirs"]))})
            aside = _make_work_folder(self.outdir, OLD_PREFIX)
            for name in old_top:
                path = os.path.join(self.outdir, name)
                if os.path.lexists(path):
                    os.replace(path, os.path.join(aside, name))
            for name in new_top:
                os.replace(os.path.join(self.out, name), os.path.join(self.outdir, name))
            self._write_manifest(new)
        except OSError as exc:
            raise OutputError(f"{self.label}: cannot put the outputs in place ({_msg(exc)})") from None
        self._committed = True
        shutil.rmtree(aside, ignore_errors=True)

    def _write_manifest(self, entries: dict) -> None:
        data = {"neardup": __version__, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "note": "the files neardup wrote here; it replaces only these", **entries}
        tmp = os.path.join(self.tmp, MANIFEST)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, sort_keys=True, ensure_ascii=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(self.outdir, MANIFEST))

    # -- closing ------------------------------------------------------------------------------
    def _close(self) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        if self._made and not self._committed and self._fd in HELD_LOCKS:
            with contextlib.suppress(OSError):   # a failed run leaves no folder it created (OUTDIR and the
                for folder in self._made:       # parents made for it, each removed only empty, deepest
                    os.rmdir(folder)            # first, and while still holding the lock)
        if self._fd is not None:
            HELD_LOCKS.discard(self._fd)
            os.close(self._fd)     # releases the lock
            self._fd = None

    def __exit__(self, *exc) -> None:
        self._close()


def is_write_error(exc: BaseException) -> bool:
    """An OSError of writing (disk full, quota, file too large, read-only file system, I/O error)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO)


__all__ = ["MANIFEST", "STDOUT", "StagedOutput", "check_outdir_path", "foreign_entries", "is_write_error",
           "manifest_of", "read_manifest"]
