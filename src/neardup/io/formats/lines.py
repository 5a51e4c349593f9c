"""Text lines: one document per line (``.txt`` and any suffix no other format claims).

Lines end at ``\\n`` only (``\\r\\n`` is stripped from the text, ``\\r`` alone is text), as Spark's
line reader cuts them; a UTF-8 byte-order mark before the first line is not part of its text.
Kept lines are copied byte for byte (a final line without ``\\n`` gets one).
"""
from __future__ import annotations

import io
import os
from collections.abc import Iterator

import numpy as np

from ...errors import InputChangedError
from ...kernels.jsonl import line_cuts
from ..compression import WriteBehind, open_write
from .base import MAX_LINE_BYTES, Fields, Format, InputSpec, Row, check_count, decode, long_line, open_input

BOM = b"\xef\xbb\xbf"


def content(i: int, raw: bytes) -> bytes:
    """A line's bytes for parsing: a UTF-8 byte-order mark at the start of the file is dropped
    (kept rows are still copied byte for byte)."""
    return raw[3:] if i == 1 and raw.startswith(BOM) else raw


def raw_lines(spec: InputSpec) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes with their ``\\n``) of a line-based input, the stream
    checked to its end; a line over :data:`~.base.MAX_LINE_BYTES` stops it (:func:`~.base.long_line`)."""
    with open_input(spec) as fh:
        readline = fh.readline
        n = 0
        while line := readline(MAX_LINE_BYTES + 1):
            n += 1
            if len(line) > MAX_LINE_BYTES:
                raise long_line(spec.label, n)
            yield n, line


BLOCK_BYTES = 1 << 22
_READ_BYTES = 1 << 16


def raw_blocks(spec: InputSpec, max_lines: int, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, bytes, int]]:
    """The lines of :func:`raw_lines` in blocks: (number of the block's first line, the bytes of its
    whole lines, how many), at most ``max_lines`` lines and about ``block_bytes`` bytes (more when
    one line is longer) each. A block is a few large reads and a newline count, against a Python
    object per line (:func:`block_lines` splits it where it is parsed). When the stream fails (a
    truncated file), the whole lines read before the fault come out first, as line by line."""
    first = 1
    pending = b""
    with open_input(spec) as fh:
        read = getattr(fh, "read1", fh.read)    # one read of the stream below: what it gave before a fault is kept
        while True:
            parts, size, eof = [pending], len(pending), False
            try:
                while True:             # at least one read: ``pending`` may be a block already
                    chunk = read(_READ_BYTES)
                    if not chunk:
                        eof = True
                        break
                    parts.append(chunk)
                    size += len(chunk)
                    if size >= block_bytes:
                        break
            except BaseException:
                buf = b"".join(parts)
                yield from _blocks(first, buf[:buf.rfind(b"\n") + 1], max_lines)
                raise
            buf = b"".join(parts)
            pending = b""
            if eof and len(buf) - buf.rfind(b"\n") - 1 > MAX_LINE_BYTES:    # (its last line, unended)
                raise long_line(spec.label, first + buf.count(b"\n"))
            if not eof:
                cut = buf.rfind(b"\n") + 1
                if cut == 0:            # one line longer than a block so far
                    if len(buf) > MAX_LINE_BYTES:
                        raise long_line(spec.label, first)
                    pending = buf
                    continue
                if cut < len(buf):
                    buf, pending = buf[:cut], buf[cut:]
            first = yield from _blocks(first, buf, max_lines)
            if eof:
                return


#: a file from this size on is cut by the kernel (0.47 ms per 4 MiB against NumPy's 2.7 ms: 0.25 s
#: saved per 450 MiB); below, NumPy spares a process that needs no other kernel (``neardup sign``'s
#: main process) numba's first-call set-up, 0.25 s
KERNEL_CUTS_FROM = 512 << 20


def _cuts(buf: bytes, end: int, max_lines: int, compiled: bool = True) -> list[tuple[int, int, int]]:
    """``buf[:end]`` (whole lines; the last may lack its ``\\n`` at the end of the input) cut into
    pieces of at most ``max_lines`` lines: (start, end, lines) per piece, in order; by
    :func:`~neardup.kernels.jsonl.line_cuts` or (``compiled=False``) NumPy, the same cuts."""
    max_lines = min(max_lines, 1 << 62)
    if compiled:
        count, cuts = line_cuts(np.frombuffer(buf, dtype=np.uint8), end, max_lines)
    else:
        ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=end) == 10) + 1
        count, cuts = ends.shape[0], ends[max_lines - 1::max_lines]
    n = count + (0 if buf[end - 1] == 10 else 1)
    out, start = [], 0
    for cut in cuts.tolist():
        if cut == end:              # the block's last line closes the last full piece
            break
        out.append((start, cut, max_lines))
        start = cut
    out.append((start, end, n - max_lines * len(out)))
    return out


def _blocks(first: int, buf: bytes, max_lines: int):
    """``buf`` (whole lines) in blocks of :func:`_cuts`; returns the number of the line after them."""
    if not buf:
        return first
    for start, end, n in _cuts(buf, len(buf), max_lines):
        yield first, (buf[start:end] if start or end < len(buf) else buf), n
        first += n
    return first


def file_blocks(spec: InputSpec, max_lines: int, block_bytes: int = BLOCK_BYTES,
                start: tuple[int, int] = (0, 1)) -> Iterator[tuple[int, int, int, int]]:
    """:func:`raw_blocks` of an uncompressed file as places, not bytes: (first line, byte offset,
    byte length, lines) per block, found by reading the file a block at a time here (a newline
    count per block: a kernel from :data:`KERNEL_CUTS_FROM` bytes on, NumPy below) so that each
    signing worker reads its own block (:func:`read_block`)
    and the bytes never pass through a pipe. (Not a memory map: its pages, once read, count in this
    process's resident memory — the whole file's worth.) ``start``: (byte offset, its line number),
    the start of a line where reading begins (a resumed run)."""
    open_input(spec).close()           # the checks of every read (compressed bytes under a plain name, …)
    with open(spec.path, "rb") as fh:
        fd = fh.fileno()
        size = os.fstat(fd).st_size
        pos, first = start
        if pos > size:
            raise _shrunk(spec)
        while pos < size:
            parts = [os.pread(fd, block_bytes, pos)]
            got = len(parts[0])
            cut = parts[0].rfind(b"\n") + 1
            while cut == 0 and got and pos + got < size:     # a line longer than a block: on to its end
                if got > MAX_LINE_BYTES:
                    raise long_line(spec.label, first)
                more = os.pread(fd, block_bytes, pos + got)
                if not more:
                    break
                parts.append(more)
                at = more.find(b"\n")
                cut = got + at + 1 if at >= 0 else 0
                got += len(more)
            if got == 0:
                raise _shrunk(spec)
            buf = b"".join(parts) if len(parts) > 1 else parts[0]
            end = got if pos + got >= size or cut == 0 else cut   # the end of the input: the rest, whole
            if end - cut > MAX_LINE_BYTES:                         # (its last line, unended)
                raise long_line(spec.label, first + buf.count(b"\n", 0, cut))
            for a, b, n in _cuts(buf, end, max_lines, size >= KERNEL_CUTS_FROM):
                yield first, pos + a, b - a, n
                first += n
            pos += end


def read_block(spec: InputSpec, offset: int, length: int) -> bytes:
    """The bytes of a block of :func:`file_blocks`."""
    with open(spec.path, "rb") as fh:
        block = os.pread(fh.fileno(), length, offset)
    if len(block) != length:
        raise _shrunk(spec)
    return block


def _shrunk(spec: InputSpec) -> InputChangedError:
    return InputChangedError(f"{spec.label}: shorter than when the run listed it: the input changed during the run "
                             "(nothing was written)")


def block_lines(first: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, raw bytes with their ``\\n``) of a block of :func:`raw_blocks`: what
    :func:`raw_lines` gave for those lines."""
    return enumerate(io.BytesIO(block), first)


def line_text(i: int, raw: bytes) -> tuple[str, bool]:
    return decode(content(i, raw).rstrip(b"\r\n"))


class LineFormat(Format):
    """Formats whose rows are the lines of a file."""

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str,
                     text_field: str) -> int:
        if touched is None:
            return self._copy_kept(spec, keep, dest)
        written = n = 0
        with open_write(dest, spec.compression) as out:
            for n, raw in raw_lines(spec):
                k = n - 1
                if k >= keep.shape[0] or not keep[k]:
                    continue
                if touched is not None and touched[k]:
                    line = self.edit_line(spec, n, raw, lambda text, k=k: edit(k, text), text_field)
                    if line is None:
                        continue
                    out.write(line)
                else:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                written += 1
        check_count(spec, keep.shape[0], n)
        return written

    def _copy_kept(self, spec: InputSpec, keep: np.ndarray, dest: str) -> int:
        """The kept lines copied byte for byte a block at a time (:func:`raw_blocks`): each run of
        consecutive kept lines is one slice of its block, found with NumPy, so the cost is per run
        of kept lines, not per line (a final line without ``\\n`` gets one)."""
        keep = np.asarray(keep, dtype=bool)
        written = n = 0
        with open_write(dest, spec.compression) as fh, WriteBehind(fh) as out:   # (writes overlap the reads)
            for first, block, m in raw_blocks(spec, 1 << 62):
                k0, n = first - 1, first - 1 + m
                kk = np.zeros(m, dtype=bool)
                have = keep[k0:n]
                kk[:have.shape[0]] = have
                if not kk.any():
                    continue
                ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + 1
                if ends.shape[0] < m:                 # the last line, without its newline
                    ends = np.append(ends, len(block))
                edge = np.diff(kk.astype(np.int8), prepend=0, append=0)
                run_start, run_end = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
                byte_end = ends[run_end - 1]
                byte_start = np.where(run_start > 0, ends[np.maximum(run_start - 1, 0)], 0)
                view = memoryview(block)
                out.write(b"".join([view[a:b] for a, b in zip(byte_start.tolist(), byte_end.tolist())]))
                if not block.endswith(b"\n") and kk[-1]:
                    out.write(b"\n")
                written += int(kk.sum())
        check_count(spec, keep.shape[0], n)
        return written

    def edit_line(self, spec: InputSpec, n: int, raw: bytes, edit, text_field: str) -> bytes | None:
        """Line ``n`` with its text edited (None: dropped)."""
        raise NotImplementedError


class Lines(LineFormat):
    name = "lines"
    suffix = ".txt"
    records = False

    def edit_line(self, spec: InputSpec, n: int, raw: bytes, edit, text_field: str) -> bytes | None:
        new = edit(line_text(n, raw)[0])
        if new is None:
            return None
        head = BOM if n == 1 and raw.startswith(BOM) else b""
        end = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
        return head + new.encode("utf-8", "surrogatepass") + end

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        self.check_fields(spec, fields)
        for i, raw in raw_lines(spec):
            text, bad = line_text(i, raw)
            yield Row(i, None, text, replaced=bad)
