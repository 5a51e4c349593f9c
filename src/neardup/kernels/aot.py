"""The kernels of ``neardup sign --format parquet|npy`` compiled ahead of time into one extension
module (``numba.pycc``), so that the command runs them without importing numba.

Why: the command's work on the 92 MB benchmark corpus is about 0.3 s on two cores, but importing
numba (0.20–0.27 s) and loading each kernel from numba's cache in every process (0.12 s) came
before any of it. An extension module imports in under a millisecond.

* :data:`EXPORTS` — the kernels and their one type signature each (the types the signer passes);
* :func:`load` — the module built for this machine, or None (never raises; ``NEARDUP_AOT=0``
  turns it off);
* :func:`build` — compiles it in a subprocess (``python -m neardup.kernels.aot FOLDER``, about 7 s),
  checks it against the JIT kernels on sample documents, and moves it into place atomically. A build
  that fails leaves a note so that later runs do not try again (``neardup warmup --force`` does).

The module is keyed like numba's own cache, and stricter: by the kernels' sources (every file of
this package), numba's version, Python's ABI and the CPU (model and feature flags: it is compiled for
this CPU, ``target_cpu="host"``). Another machine sharing the folder builds its own. It lives beside
numba's cache (:mod:`neardup._cache`), in a folder only its owner may write, and is loaded only from
such a folder. ``numba.pycc`` is pending deprecation (numba 0.57); where it is gone the build fails
once, quietly, and ``neardup sign`` keeps the JIT kernels.
"""
from __future__ import annotations

import hashlib
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES

MODULE = "_neardup_sign_aot"
EXPORTS = (
    # name, module, signature
    ("extract_fields", "neardup.kernels.jsonl",
     "Tuple((b1, i8, u1[::1], i8[::1], i8, i8[::1], u1[::1], i8[::1]))(u1[::1], i8, i8, i8, u1[::1], u1[::1], b1)"),
    ("oph_word_batch", "neardup.kernels.minhash",
     "Tuple((u4[:, ::1], i8[::1]))(u1[::1], i8[::1], u1[::1], u2[::1], u1[:, ::1], i8, u8, i8, u8, b1, u1[::1], "
     "u1[::1])"),
)
KERNELS = os.path.dirname(os.path.abspath(__file__))
# the character tables the word kernel reads, saved beside the module at build time (20 ms to build
# from the package's data in each run): the files they are built from are part of the key
TABLES = ("class_table", "char_slot", "char_utf8", "nfkc_unsafe", "nfkc_clean_leads")
TABLE_SOURCES = (("text", "unicode.py"), ("data", "unicode_classes.npz"), ("data", "unicode_casefold.npz"),
                 ("data", "unicode_nfkc.npz"))
SUFFIX = EXTENSION_SUFFIXES[0]               # this Python's ABI, e.g. ".cpython-311-x86_64-linux-gnu.so"
_LOADED: dict = {}


def _cpu() -> str:
    """What the code is compiled for: the machine type and, on Linux, the first processor's model
    and feature flags (two CPUs of the same model can differ in flags a VM hides)."""
    parts = [os.uname().machine if hasattr(os, "uname") else sys.platform]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break                           # the first processor only
                name = line.split(":", 1)[0].strip()
                if name in ("model name", "flags", "Features", "CPU implementer", "CPU part", "cpu model", "isa"):
                    parts.append(line.strip())
    except OSError:
        import platform  # noqa: PLC0415

        parts.append(platform.processor())
    return "\n".join(parts)


def _numba_version() -> str:
    """numba's version file (its version and commit), read without importing numba (0.2 s) or the
    package metadata (30 ms)."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.origin:
        return "none"
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "_version.py"), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        from importlib.metadata import version  # noqa: PLC0415

        return version("numba")


def key() -> str:
    """The build's key: a digest of everything the compiled code depends on."""
    h = hashlib.sha256()
    for part in (_numba_version(), sys.version, SUFFIX, _cpu()):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    package = os.path.dirname(KERNELS)
    files = [os.path.join(KERNELS, n) for n in sorted(os.listdir(KERNELS)) if n.endswith(".py")]  # every kernel
    files += [os.path.join(package, *p) for p in TABLE_SOURCES]
    for path in files:
        with open(path, "rb") as fh:
            h.update(os.path.basename(path).encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()[:20]


def base_folder() -> str:
    """Where builds go: beside numba's cache (``NUMBA_CACHE_DIR`` when set — :mod:`neardup._cache` sets it
    when the package's folder is read-only — else the kernels' ``__pycache__``)."""
    from .._cache import use_writable_numba_cache  # noqa: PLC0415

    use_writable_numba_cache()
    return os.path.join(os.environ.get("NUMBA_CACHE_DIR") or os.path.join(KERNELS, "__pycache__"), "neardup-aot")


def module_path(k: str | None = None) -> str:
    return os.path.join(base_folder(), k or key(), MODULE + SUFFIX)


def failure_path(k: str | None = None) -> str:
    return os.path.join(base_folder(), f"{k or key()}.failed")


def _private(folder: str) -> bool:
    """No other user can have put or can swap the code in ``folder``: the folder and every folder
    above it (of its real path) is this user's or root's, and none is writable by others, unless it
    is root's and sticky (``/tmp``: others cannot rename or remove what is ours there). A shared
    temporary folder must not let another user plant code that we would run."""
    if not hasattr(os, "getuid"):
        return True
    me = os.getuid()
    path = os.path.realpath(folder)
    while True:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_uid not in (me, 0):
            return False
        if st.st_mode & 0o022 and not (st.st_uid == 0 and st.st_mode & 0o1000):
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def word_tables() -> tuple:
    """The word kernel's tables for the default normaliser (NFKC, case folding), in :data:`TABLES`'
    order, as :mod:`neardup.text.unicode` builds them."""
    from ..text.unicode import char_map, class_table, nfkc_check_tables  # noqa: PLC0415

    return class_table(), *char_map(True, True, False), *nfkc_check_tables()


def load_tables(mod=None) -> tuple:
    """:func:`word_tables` from the files the build saved beside the module (``mod``, loaded; else
    where this machine's goes), mapped read-only, or built now where they are missing."""
    import numpy as np  # noqa: PLC0415

    folder = os.path.dirname(mod.__file__ if mod is not None else module_path())
    try:
        return tuple(np.load(os.path.join(folder, f"{name}.npy"), mmap_mode="r") for name in TABLES)
    except (OSError, ValueError):
        return word_tables()


def load():
    """The compiled module for this machine, or None when it is not built (or cannot be loaded)."""
    if os.environ.get("NEARDUP_AOT", "1") == "0":        # turned off (tests compare both paths)
        return None
    if "module" in _LOADED:
        return _LOADED["module"]
    mod = None
    try:
        path = os.path.realpath(module_path())
        if os.path.exists(path) and _private(os.path.dirname(path)):
            mod = _import(path)             # (by its real path, the one checked)
    except Exception:             # a missing, partial or foreign file: the JIT kernels do the work
        mod = None
    if mod is not None:
        _LOADED["module"] = mod   # (not built: looked for again, a build may come meanwhile)
    return mod


def _import(path: str):
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location(MODULE, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not all(callable(getattr(mod, name, None)) for name, _, _ in EXPORTS):
        raise ImportError(f"{path}: not a build of {MODULE}")
    return mod


def build(force: bool = False, timeout: float = 900) -> tuple[float | None, str | None]:
    """Compile the module for this machine if it is not there: (seconds, None) when built now,
    (None, None) when it was already built, (None, reason) when it cannot be (no C compiler, numba
    without ``pycc``, a check that failed). A failure is remembered (``.failed`` beside the builds)
    and not retried unless ``force``."""
    import contextlib  # noqa: PLC0415
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    import time  # noqa: PLC0415

    k = key()
    target = module_path(k)
    failed = failure_path(k)
    if not force and os.path.exists(target):
        return None, None
    if not force and os.path.exists(failed):
        with open(failed, encoding="utf-8", errors="replace") as fh:
            return None, fh.read().strip() or "an earlier build failed"
    t0 = time.perf_counter()
    try:
        base = base_folder()
        os.makedirs(base, mode=0o700, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".build-", dir=base)
    except OSError as exc:      # a read-only or full disk, a folder of another user's: not ours to build in
        return None, f"cannot write {exc.filename or 'the build folder'} ({exc.strerror or exc})"
    try:
        try:
            # run in the private build folder: `-m` puts the working folder first on the path, and
            # a ./neardup there must not be what gets compiled
            done = subprocess.run([sys.executable, "-m", "neardup.kernels.aot", tmp], capture_output=True, text=True,
                                  timeout=timeout, env=dict(os.environ, NEARDUP_AOT="0"), cwd=tmp)
            ok = done.returncode == 0 and os.path.exists(os.path.join(tmp, os.path.basename(target)))
            reason = None if ok else (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, reason = False, str(exc)
        if not ok:
            with contextlib.suppress(OSError), open(failed, "w", encoding="utf-8") as fh:
                fh.write(f"{reason}\n")
            return None, reason
        final = os.path.dirname(target)
        if force and os.path.isdir(final):
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(tmp, final)        # atomic: a reader sees no module or a whole, checked one
        except OSError as exc:
            if not os.path.exists(target):
                return None, f"cannot move the build into place ({exc.strerror or exc})"
        with contextlib.suppress(OSError):
            os.unlink(failed)
        _LOADED.clear()
        return time.perf_counter() - t0, None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _sample_block() -> bytes:
    """JSON lines whose documents take every branch of the signer: ASCII, escapes, CJK, text that
    NFKC changes (the kernel flags it and the caller signs it again), empty and one-word texts."""
    import json  # noqa: PLC0415

    texts = ["The quick brown fox jumps over the lazy dog, again and again and again.",
             "Ｆｕｌｌ－ｗｉｄｔｈ ｔｅｘｔ and the ﬁ ligature fold under NFKC, as does ½ and ㎏.",
             "中文文本也要测试一下，看看分词和签名是否正常工作。", "", "one", "tab\tand\nnew line \"quoted\" \\ end",
             "Straße ΣΊΣΥΦΟΣ İstanbul ǅ Ⅻ", "e\u0301 composed by NFKC" * 3]
    return "".join(json.dumps({"text": t, "id": i}, ensure_ascii=i % 2 == 0) + "\n"
                   for i, t in enumerate(texts)).encode("utf-8")


def _check(mod) -> None:
    """The compiled kernels give what the JIT kernels give on :func:`_sample_block` (else exit 3)."""
    import numpy as np  # noqa: PLC0415

    from .._seeds import scheme_salt  # noqa: PLC0415
    from . import jsonl, minhash  # noqa: PLC0415

    arr = np.frombuffer(_sample_block(), dtype=np.uint8)
    keys = (np.frombuffer(b"text", np.uint8).copy(), np.frombuffer(b"id", np.uint8).copy())
    got = mod.extract_fields(arr, 0, 500, 4300, *keys, True)
    want = jsonl.extract_fields(arr, 0, 500, 4300, *keys, True)
    cls, slot, utf8, unsafe, leads = word_tables()
    tables, checks = (cls, slot, utf8), (unsafe, leads)
    for flag in (True, False):
        a = mod.oph_word_batch(got[2], got[3], *tables, 5, np.uint64(0), 128, scheme_salt(1), flag, *checks)
        b = minhash.oph_word_batch(want[2], want[3], *tables, 5, np.uint64(0), 128, scheme_salt(1), flag, *checks)
        if flag:
            keep = b[1] >= 0             # rows of flagged documents are left unwritten
            if not (np.array_equal(a[1], b[1]) and np.array_equal(a[0][keep], b[0][keep]) and (~keep).any()):
                sys.exit("the ahead-of-time MinHash kernel differs from the JIT kernel (checked NFKC)")
        elif not (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])):
            sys.exit("the ahead-of-time MinHash kernel differs from the JIT kernel")
    same = all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(got, want))
    if not (got[0] and same):
        sys.exit("the ahead-of-time JSON lines parser differs from the JIT parser")


def _compile(folder: str) -> None:
    import importlib  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # pycc's pending deprecation: we fall back without it
        from numba.pycc import CC  # noqa: PLC0415

    cc = CC(MODULE)
    cc.output_dir = folder
    cc.target_cpu = "host"
    cc.verbose = False
    for name, module, signature in EXPORTS:
        cc.export(name, signature)(getattr(importlib.import_module(module), name).py_func)
    cc.compile()
    _check(_import(os.path.join(folder, MODULE + SUFFIX)))
    import numpy as np  # noqa: PLC0415

    for name, table in zip(TABLES, word_tables()):
        np.save(os.path.join(folder, f"{name}.npy"), np.ascontiguousarray(table))


if __name__ == "__main__":
    _compile(sys.argv[1])
