"""Small array helpers shared across the package."""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
from array import array
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from ._procs import cpu_count


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values of a 1-d array, by a sort and a mask.

    Plain ``np.unique`` (no ``return_*`` argument) takes a hash-based path in NumPy 2.4 that is
    superlinear on large integer arrays: 7.8 s for 8.4 M random int64 against 0.09 s here."""
    x = np.sort(x)
    if x.size < 2:
        return x
    keep = np.empty(x.shape[0], dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pairs (a[i], b[i]), sorted by a then b: a lexicographic sort and a mask."""
    if a.shape[0] == 0:
        return a, b
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    first = np.ones(a.shape[0], dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[first], b[first]


def utf8_buffer(data) -> np.ndarray:
    """A writable uint8 array over ``data`` (bytes, bytearray or a list of bytes to join), never
    empty (one zero byte when ``data`` is).

    Every byte buffer handed to a kernel is writable, C-contiguous uint8: numba compiles one
    specialisation per array type, and a read-only view of ``bytes`` (``np.frombuffer``) would
    compile the whole word scanner a second time (8 s on the reference machine, measured with
    numba's compile events). A list is joined straight into a bytearray (no extra copy); ``bytes``
    are copied once."""
    if isinstance(data, list):
        data = bytearray().join(data)
    elif isinstance(data, bytes):
        data = bytearray(data)
    return np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(1, dtype=np.uint8)


# -- Arrow arrays without pa.array -----------------------------------------------------------------
# pa.array imports pandas on its first call in a process when pandas is installed (0.2–0.5 s: half of
# a small run's wall time); these build the same arrays from buffers, which it does not.
def arrow_numeric(values: np.ndarray):
    """A pyarrow array of a 1-d numeric NumPy array (no nulls), sharing its buffer when contiguous."""
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise TypeError(f"arrow_numeric takes a 1-d numeric array, got {values.dtype} with {values.ndim} dims")
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.shape[0], [None, pa.py_buffer(values)])


def arrow_bool(values: np.ndarray):
    """A pyarrow boolean array of a 1-d NumPy bool array (bits packed, least significant first)."""
    values = np.asarray(values, dtype=bool).reshape(-1)
    bits = np.packbits(values, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), values.shape[0], [None, pa.py_buffer(bits)])


def arrow_strings(texts: list):
    """A pyarrow string array of Python strings or bytes (no nulls; bytes are not checked for
    UTF-8), by Arrow's builder."""
    b = pa.lib.StringBuilder()
    b.append_values(texts)
    return b.finish()


def int64_values(values, kinds: set | None = None) -> np.ndarray | None:
    """``values`` (an ``array('q')``, or a sequence of Python ints) as an int64 array; None when one of
    them is not an ``int`` (bools, floats and strings are other ids) or does not fit in 64 bits, and
    for an empty sequence. ``kinds``: ``set(map(type, values))`` when the caller has it already."""
    if not isinstance(values, array) and (set(map(type, values)) if kinds is None else kinds) != {int}:
        return None
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except OverflowError:
        return None


def arrow_int64(values: np.ndarray):
    """An Arrow int64 array over a NumPy array's memory. Not ``pa.array``: that imports pandas on its
    first call when pandas is installed (0.2–0.5 s in each process that does)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), values.shape[0], [None, pa.py_buffer(values)])


def arrow_binaries(parts: list):
    """An Arrow ``large_binary`` array of ``bytes`` (no pandas, as :func:`arrow_int64`)."""
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_binary(), len(parts),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(parts))])


def release_pages(values) -> bool:
    """The pages of a memory-mapped array given back (``MADV_DONTNEED``): this process's resident
    memory drops, and they are read again from the file (or the system's cache) when next touched.
    For an array over a private or read-only map of a file that is never written through it (the
    signature matrix of pass 1); False, and nothing done, for any other array."""
    return _advise(values, "MADV_DONTNEED")


def read_ahead(values) -> bool:
    """The file behind a memory-mapped array read into the system's cache in the background
    (``MADV_WILLNEED``), so that random reads of it soon after find it there, not on disk; resident
    memory does not grow. For the signature matrix after the band, whose 10 GB of reads and writes
    push its file out of the cache at 10 M documents. False, and nothing done, for other arrays."""
    return _advise(values, "MADV_WILLNEED")


def _advise(values, advice: str) -> bool:
    base = values
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    if base is None or not hasattr(mmap, advice):
        return False
    try:
        base.madvise(getattr(mmap, advice))
    except (OSError, ValueError):
        return False
    return True


def physical_memory() -> int:
    """Bytes of physical memory, or 0 where ``sysconf`` does not answer (the buffers sized from it
    then take their fixed defaults)."""
    try:
        return max(0, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def release_freed_memory() -> None:
    """Give the pages of freed heap memory back to the system (glibc's ``malloc_trim``; elsewhere a
    no-op). Pass 1 gathers its results in many arrays of a few MB, which glibc serves from the heap
    once its mmap threshold has risen; freed, they stay in the process's resident memory until
    trimmed: 0.5 GB per million documents of signatures, measured."""
    global _trim
    if _trim is None:
        _trim = False
        if sys.platform.startswith("linux"):
            try:
                _trim = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                pass
    if _trim:
        _trim(0)


_trim = None


def keep_freed_memory(largest: int = 64 << 20) -> None:
    """Let this process reuse the memory it frees instead of giving it back (glibc; elsewhere a
    no-op): blocks up to ``largest`` bytes come from the heap, not a fresh mapping each, and the
    heap is not trimmed below 4 × that. For a signing worker, which allocates and frees the same few
    buffers of a few MB per block: a new mapping's every page is a fault and a cleared page, 8–10 %
    of pass 1's CPU time at 10 M documents (``perf``). Its resident memory grows by at most that."""
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, largest)           # M_MMAP_THRESHOLD (setting it turns glibc's adjustment off)
    mallopt(-1, 4 * largest)       # M_TRIM_THRESHOLD


def concatenate_freeing(chunks: list) -> np.ndarray:
    """``np.concatenate(chunks)``, each chunk released as soon as it is copied (the list's entries
    become None) and freed heap pages given back as it goes: resident memory peaks near one copy of
    the result instead of two."""
    total = sum(c.shape[0] for c in chunks)
    out = np.empty((total, *chunks[0].shape[1:]), dtype=np.result_type(*{c.dtype for c in chunks}))
    o = 0
    for i in range(len(chunks)):
        c, chunks[i] = chunks[i], None
        out[o:o + c.shape[0]] = c
        o += c.shape[0]
        del c
        if i % 64 == 63:
            release_freed_memory()
    release_freed_memory()
    return out


def in_threads(run, n: int, min_chunk: int = 1 << 18) -> list:
    """``[run(start, end), …]`` over [0, n) cut into one stretch per usable CPU (none shorter than
    ``min_chunk``), run in threads: for compiled kernels that release the GIL (``nogil=True``),
    which need no process pool and none of numba's thread pools (those may not be entered from two
    threads at once, nor survive a fork). Results in stretch order."""

    t = max(1, min(cpu_count(), n // max(1, min_chunk)))
    if t == 1:
        return [run(0, n)]
    bounds = [n * i // t for i in range(t + 1)]

    with ThreadPoolExecutor(t, thread_name_prefix="neardup-kernel") as pool:
        return list(pool.map(run, bounds[:-1], bounds[1:]))


def prefer_small_pages() -> None:
    """Large NumPy arrays of this process and of the processes it starts are given ordinary 4 KB
    pages, not transparent huge pages (NumPy asks the kernel for huge pages on arrays of 4 MB and
    more), unless ``NUMPY_MADVISE_HUGEPAGE`` is set already (the user's choice stands).

    Why: with the page cache full of the input (the usual state of a run over a large file), each
    fresh 2 MB page first costs the kernel a compaction. Measured on the 2-core machine
    (2026-12-05): touching a fresh 512 MB array took 1.46 s with huge pages against 0.22–0.34 s
    without, and the default 1 M-document ``dedup`` took 20.5–21.1 s against 19.1–20.0 s. The
    passes of random reads that might gain from fewer TLB misses (the suffix-array marking) ran
    alike either way."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"      # read by NumPy in the workers when they start
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # noqa: PLC0415  (NumPy 2's private name, probed)
    except ImportError:        # (NumPy 1: numpy.core)
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # noqa: PLC0415  (NumPy 1's)
        except ImportError:
            return
    _set_madvise_hugepage(False)
