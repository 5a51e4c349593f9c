"""``neardup sign --format parquet|npy`` without numba: the default MinHash (``oph``, word 5-grams) of
plain JSON lines files, signed by the kernels compiled ahead of time (:mod:`neardup.kernels.aot`)
in forked processes, written by the writers the JIT path uses (:mod:`neardup.engines.sign_output`).

Same output, byte for byte, as :func:`neardup.engines.local.sign.write_signatures`, which stays
the path for everything else. :func:`sign_files` returns None, having written nothing, whenever it
cannot promise that: options other than the defaults it covers, an input that is not a plain JSON
lines file, the module not built for this machine, or any line that the one-pass parser
(:func:`neardup.kernels.jsonl.extract_fields`) leaves to the line-by-line reader (a blank line, a
null text, a bad record: the rows that path counts, skips or reports). The caller then runs that
path, which gives those rows their usual errors.

Why a path of its own: on the 92 MB benchmark corpus the JIT path took 1.05 s, of which 0.38 s was
imports (numba 0.20–0.27 s) and 0.12 s numba's load of each kernel in each worker; the work itself
is about 0.3 s on two cores. Here the command imports NumPy and, while the workers sign, pyarrow.

How: the inputs are cut into one piece per process at line starts; each forked process parses its
piece in one pass, signs it (documents whose NFKC is not exact character by character are
normalised in Python and signed again, by the JIT path's :func:`neardup.text.nfkc.sign_nfkc_checked`)
and sends back the signatures, the empty flags and the ids through a pipe. Ids without
``--id-field`` are ``file:line`` as the JIT path writes them; rows count from 0 across the inputs.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
from typing import NamedTuple

import numpy as np

from .._procs import kill_with_parent, release_stops, signals_held

BOM = b"\xef\xbb\xbf"
_SUFFIXES = (".jsonl", ".ndjson", ".json")   # the plain names dedup reads as JSON lines
MAX_PIECE = 1 << 28                         # bytes a process parses at once (its text copy is as large)
_MIN_PIECE = 1 << 20                        # pieces smaller than this cost more to hand out than they save


class SignParams(NamedTuple):
    """What the signature depends on (the Parquet metadata's ``neardup`` entry)."""

    num_perm: int = 128
    seed: int = 1
    ngram: int = 5
    method: str = "minhash"
    scheme: str = "oph"
    tokenizer: str = "word"
    convert: str | None = None


def eligible_inputs(inputs: list[str], output: str, fmt: str, input_format: str | None) -> list[str] | None:
    """The input paths when every one is a plain, non-empty, readable JSON lines file named as such,
    none named twice, and the output a new or regular file that is none of them; else None."""
    if fmt not in ("parquet", "npy") or output == "-" or (fmt == "npy" and not output.endswith(".npy")):
        return None
    if input_format not in (None, "jsonl") or not inputs:
        return None
    seen = set()
    for path in inputs:
        if not path or path == "-" or not path.lower().endswith(_SUFFIXES):
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not (st.st_mode & 0o170000 == 0o100000 and st.st_size > 0 and os.access(path, os.R_OK)):
            return None
        if (st.st_dev, st.st_ino) in seen:
            return None
        seen.add((st.st_dev, st.st_ino))
    outs = [output] + ([output[:-4] + ".ids.jsonl"] if fmt == "npy" else [])
    for out in outs:
        try:
            st = os.stat(out)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if (st.st_dev, st.st_ino) in seen or not (st.st_mode & 0o170000 == 0o100000):
            return None
    folder = os.path.dirname(os.path.abspath(output))
    if not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
        return None
    return list(inputs)


def _pieces(paths: list[str], workers: int) -> list[tuple[int, int, int]]:
    """(input, start, end) byte ranges, each a run of whole lines, in input order: about four per
    process (a process that drew the slow documents — long ones Python must normalise — is then
    helped by the others), none under 1 MiB (unless a file is smaller) or over
    :data:`MAX_PIECE` (unless a line is longer)."""
    sizes = [os.path.getsize(p) for p in paths]
    total = sum(sizes)
    target = max(min(-(-total // (4 * workers)), MAX_PIECE), _MIN_PIECE)
    out = []
    for i, (path, size) in enumerate(zip(paths, sizes)):
        cuts = [0]
        with open(path, "rb") as fh:
            for c in range(target, size, target):
                if c <= cuts[-1]:
                    continue
                fh.seek(c - 1)
                while True:             # the next line start at or after c
                    chunk = fh.read(1 << 16)
                    if not chunk:
                        c = size
                        break
                    nl = chunk.find(b"\n")
                    if nl >= 0:
                        c = fh.tell() - len(chunk) + nl + 1
                        break
                if c < size:
                    cuts.append(c)
        cuts.append(size)
        out.extend((i, a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a)
    return out


def _read(path: str, start: int, end: int) -> np.ndarray:
    """Bytes ``start:end`` of ``path``, mapped from the page cache (``MAP_POPULATE``: the pages are
    mapped in one call) rather than copied: 40 ms less per 46 MB piece. A file cut short meanwhile
    would kill the process with SIGBUS, which the parent reports and answers with the JIT path."""
    import mmap  # noqa: PLC0415

    at = start - start % mmap.ALLOCATIONGRANULARITY
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size < end:
            raise OSError(f"{path}: changed while it was read")
        flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)
        mm = mmap.mmap(fh.fileno(), end - at, flags=flags, prot=mmap.PROT_READ, offset=at)
    return np.frombuffer(mm, dtype=np.uint8, count=end - start, offset=start - at)


def _sign_piece(mod, tables: tuple, path: str, start: int, end: int, text_key, id_key, want_id: bool,
                params: SignParams, salt: np.uint64):
    """One piece: [documents, signatures, empty flags, ids] or None when the one-pass parser
    leaves a line of it to the line-by-line reader."""
    from ..dedup.ids import parsed_ids  # noqa: PLC0415
    from ..text.nfkc import sign_nfkc_checked  # noqa: PLC0415

    block = _read(path, start, end)
    head = 3 if start == 0 and block[:3].tobytes() == BOM else 0
    max_digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    depth = max(sys.getrecursionlimit() // 2, 1)
    ok, n, buf, offsets, kind, ints, id_bytes, id_offsets = mod.extract_fields(
        block, head, depth, max_digits, text_key, id_key, want_id)
    if not ok:
        return None
    del block
    if buf.shape[0] == 0:
        buf = np.zeros(1, np.uint8)
    cls, slot, utf8, unsafe, leads = tables
    values, sizes = sign_nfkc_checked(mod.oph_word_batch, buf, offsets,
                                      (cls, slot, utf8, params.ngram, np.uint64(0), params.num_perm, salt),
                                      True, unsafe, leads)
    ids = parsed_ids(kind, ints, id_bytes, id_offsets) if want_id else None
    return [n, values, sizes == 0, ids]      # (a list: the parent frees the matrix once copied)


def _child(write_fd: int, parent: int, close: tuple, queue_fd: int, pieces: list, *args) -> None:
    """A forked process: signs the pieces whose numbers it takes from the queue (a pipe holding
    each number once, 4 bytes each: a read of 4 bytes is atomic, so each piece goes to one process,
    and a process that finishes early takes more), sending each piece's result through its pipe as
    it is done (:func:`_send`): ``("piece", k, result)``, or ``("refused", k)`` for a piece with a line
    for the line-by-line reader, or ``("error", message)``. Never returns. Ctrl-C and SIGTERM end it
    at once (they were held while it was forked), and so does its parent's death."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        release_stops()
        for fd in close:                # the parent's ends (the queue's writer: else no end of queue)
            os.close(fd)
        kill_with_parent()              # not left to finish a piece nobody will read
        if os.getppid() != parent:      # (the parent died before that was armed)
            os._exit(1)
        from .._arrays import keep_freed_memory  # noqa: PLC0415

        keep_freed_memory()             # a piece's buffers reused by the next (as the JIT path's workers do)
        while True:
            msg = os.read(queue_fd, 4)
            if not msg:
                break
            k = int.from_bytes(msg, "little")
            got = _sign_piece(*args[:2], *pieces[k], *args[2:])
            if got is None:
                _send(write_fd, ("refused", k))
                break
            _send(write_fd, ("piece", k, got))
            del got
        code = 0
    except BaseException as exc:            # sent to the parent, which decides
        with contextlib.suppress(BaseException):
            _send(write_fd, ("error", f"{type(exc).__name__}: {exc}"))
    finally:
        os._exit(code)


def _feed(fd: int, n: int) -> None:
    """The queue: the numbers 0 … n−1, written by a thread of the parent while it reads the results
    (a pipe holds 16,384 numbers; with more pieces, the children must be read from meanwhile)."""
    try:
        queue = memoryview(b"".join(k.to_bytes(4, "little") for k in range(n)))
        while queue.nbytes:
            queue = queue[os.write(fd, queue):]
    except OSError:
        pass                                    # every child has ended: their messages say why
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _send(fd: int, message) -> None:
    """One message through a pipe: its length (8 bytes) and its pickle."""
    payload = pickle.dumps(message, protocol=5)
    view = memoryview(len(payload).to_bytes(8, "little") + payload)
    while view.nbytes:
        view = view[os.write(fd, view):]


def _messages(children: list):
    """The messages of the signing processes (``(pid, read end)`` each) as they come, read from
    whichever pipe has data; and ``("ended", pid, status, cut short)`` for each process that closed
    its pipe, once its pipe is closed and it is reaped (status as ``os.waitpid`` gives it; cut short:
    it ended in the middle of a message)."""
    import selectors  # noqa: PLC0415

    sel = selectors.DefaultSelector()
    pending = {}
    for pid, fd in children:
        sel.register(fd, selectors.EVENT_READ, pid)
        pending[fd] = bytearray()
    try:
        while pending:
            for key, _ in sel.select():
                fd, pid = key.fd, key.data
                chunk = os.read(fd, 1 << 22)
                buf = pending[fd]
                if not chunk:
                    sel.unregister(fd)
                    os.close(fd)
                    del pending[fd]
                    _, status = os.waitpid(pid, 0)
                    yield ("ended", pid, status, bool(buf))
                    continue
                buf += chunk
                while len(buf) >= 8:
                    size = int.from_bytes(buf[:8], "little")
                    if len(buf) < 8 + size:
                        break
                    message = pickle.loads(memoryview(buf)[8:8 + size])
                    del buf[:8 + size]
                    yield message
    finally:
        sel.close()


def _how_ended(status: int) -> str:
    """``os.waitpid``'s status in words: "was killed by SIGKILL", "ended with exit status 1"."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"was killed by {signal.Signals(sig).name}"
        except ValueError:
            return f"was killed by signal {sig}"
    return f"ended with exit status {os.waitstatus_to_exitcode(status)}"


def _end(pid: int, fd: int) -> None:
    """Kill a signing process, close its pipe and reap it (each step may find it done already)."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def covers(cfg) -> bool:
    """Whether this path signs as ``cfg`` (a :class:`~neardup.config.DedupConfig`) asks: the default
    MinHash of JSON lines, any k, seed and n-gram size."""
    return (cfg.method, cfg.scheme, cfg.tokenizer, cfg.convert, cfg.user_dict) == ("minhash", "oph", "word", None,
                                                                                  None) \
        and cfg.input_format in (None, "jsonl")


def params_of(cfg) -> SignParams:
    return SignParams(num_perm=cfg.num_perm, seed=cfg.seed, ngram=cfg.ngram)


def sign_files(inputs: list[str], output: str, fmt: str, *, text_field: str = "text", id_field: str | None = None,
               params: SignParams | None = None, workers: int = 0, input_format: str | None = None,
               mod=None) -> dict | None:
    """Sign ``inputs`` into ``output`` as ``neardup sign --format fmt`` does; returns its counts
    (documents, skipped rows, empty documents), or None — having written nothing — when this path
    does not apply (see the module docstring)."""
    params = params or SignParams()
    if (params.method, params.scheme, params.tokenizer, params.convert) != ("minhash", "oph", "word", None):
        return None
    paths = eligible_inputs(inputs, output, fmt, input_format)
    if paths is None:
        return None
    from ..kernels import aot  # noqa: PLC0415

    if mod is None:
        mod = aot.load()
        if mod is None:
            return None
    from .._arrays import prefer_small_pages  # noqa: PLC0415
    from .._seeds import scheme_salt  # noqa: PLC0415

    prefer_small_pages()                          # as the command line does (see there)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = cpus if workers <= 0 else min(workers, cpus)     # (as the JIT path: no more than the CPUs)
    tables = aot.load_tables(mod)                # (beside the module: its key is not digested again)
    keys = tuple(np.frombuffer(k.encode("utf-8", "surrogatepass"), dtype=np.uint8).copy()
                 for k in (text_field, id_field or ""))
    pieces = _pieces(paths, workers)
    jobs = [(paths[i], a, b) for i, a, b in pieces]
    salt = scheme_salt(params.seed)
    parts, failed = _run(jobs, min(workers, len(jobs)), fmt,
                         (mod, tables, *keys, id_field is not None, params, salt))
    if failed == "refused":
        return None                               # a line for the line-by-line reader
    if failed is not None:
        print(f"neardup: the ahead-of-time signer stopped ({failed}); signing with the JIT kernels",
              file=sys.stderr, flush=True)
        return None
    if any(p is None for p in parts):             # (cannot happen: every number was taken once)
        raise RuntimeError("aot_sign: a piece was signed by no process")
    return _write(paths, output, fmt, id_field, params, pieces, parts)


def _run(jobs: list, workers: int, fmt: str, args: tuple) -> tuple[list, str | None]:
    """Sign ``jobs`` in ``workers`` forked processes: (each piece's result, None), or (…, why not:
    ``"refused"`` or what stopped a process). The processes still running when this ends (a
    refusal, an error, Ctrl-C) are killed and reaped."""
    import threading  # noqa: PLC0415

    parts: list = [None] * len(jobs)
    failed = None
    children: list = []
    queue_r, queue_w = os.pipe()
    parent = os.getpid()
    try:
        try:
            with signals_held():                  # every forked process known before a stop unwinds this
                for _ in range(workers):
                    r, w = os.pipe()
                    try:
                        pid = os.fork()
                    except OSError:
                        os.close(r)
                        os.close(w)
                        raise
                    if pid == 0:                      # the child
                        _child(w, parent, (r, queue_w), queue_r, jobs, *args)
                    os.close(w)
                    children.append((pid, r))
        except OSError as exc:                    # no more processes or descriptors: the JIT path's turn
            failed = f"cannot start a signing process ({exc.strerror or exc})"
        os.close(queue_r)                         # (only the children read the queue)
        queue_r = -1
        if failed is None:
            with signals_held():                  # (a stop cannot come between the thread's start and
                feed, queue_w = queue_w, -1       # its taking the queue's end: one of them closes it)
                threading.Thread(target=_feed, args=(feed, len(jobs)), name="neardup-queue", daemon=True).start()
            if fmt == "parquet":                  # while the children sign: pyarrow imported, and
                from .sign_output import warm_parquet  # noqa: PLC0415

                warm_parquet()                    # its writer's first call made (30 ms of set-up)
            messages = _messages(children)
            try:
                for message in messages:
                    kind = message[0]
                    if kind == "piece":
                        parts[message[1]] = message[2]
                        continue
                    if kind == "ended":
                        _, pid, status, cut = message
                        children = [c for c in children if c[0] != pid]
                        if status == 0 and not cut:
                            continue
                        failed = f"a signing process {_how_ended(status)}" + (" mid-message" if cut else "")
                    else:                         # a refused piece or an error: the others stop now
                        failed = "refused" if kind == "refused" else message[1]
                    break
            finally:
                messages.close()
    finally:
        with signals_held():                      # (a second Ctrl-C does not cut the cleanup short)
            for fd in (queue_r, queue_w):
                if fd >= 0:
                    os.close(fd)
            for pid, r in children:               # still running (stopped early): killed and reaped
                _end(pid, r)
    return parts, failed


def _write(paths, output, fmt, id_field, params, pieces, parts) -> dict:
    from .._arrays import concatenate_freeing  # noqa: PLC0415
    from .sign_output import write_npy, write_parquet  # noqa: PLC0415

    chunks = [p[1] for p in parts]
    for p in parts:
        p[1] = None                               # (each piece's matrix freed as it is copied)
    values = concatenate_freeing(chunks) if chunks else np.zeros((0, params.num_perm), np.uint32)
    empty = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, bool)
    rows = np.arange(values.shape[0], dtype=np.int64)
    ids: list = []
    line = {}
    for (i, _, _), (n, _, _, got) in zip(pieces, parts):
        if id_field is None:
            first = line.get(i, 1)
            ids.extend(f"{paths[i]}:{k}" for k in range(first, first + n))
            line[i] = first + n
        else:
            ids.extend(got)
    if fmt == "parquet":
        from .sign_output import replacing  # noqa: PLC0415

        with replacing(output) as tmp:
            write_parquet(tmp, params, values, empty, ids, rows)
    else:
        write_npy(output, values, ids, rows)
    return {"documents": len(ids), "skipped": [], "empty": int(empty.sum())}
