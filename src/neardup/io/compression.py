"""Compressed streams (gzip, zstd, bz2) read to their verified end.

A truncated or corrupt stream is an error of the *file*, never a short read or a bad row:
* gzip — every member's CRC-32 and length trailer is checked by :mod:`gzip`; a stream cut
  anywhere before the last trailer raises ``EOFError`` there;
* bz2 and zstd — decoded here one stream (frame) at a time with a decompression object whose
  ``eof`` says whether the stream's end marker was seen: input ending inside a stream is
  "truncated", and bytes after a stream that do not start a valid next one are "corrupt" (the
  :mod:`bz2` module would ignore such trailing bytes, and ``zstandard``'s streaming reader
  returns a short read when the input stops at a block boundary). bz2 checks each block's CRC;
  zstd frames that carry a content checksum are verified by the library.

Every failure of the codec (and every ``OSError`` while reading) becomes an
:class:`~neardup.errors.InputFormatError` naming the file, so a truncated ``.gz`` never reaches the
command line as click's bare "Aborted!" (click's answer to an ``EOFError``).

The codec comes from the name (``.gz``, ``.zst``/``.zstd``, ``.bz2``). A file whose name says
"plain" but whose first bytes are a compression magic number is refused with a hint, and input
without a name (standard input, a pipe) is recognised by those bytes.
"""
from __future__ import annotations

import bz2
import gzip
import io
import queue
import sys
import threading
import zlib

import zstandard

from ..errors import InputFormatError

SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2"}
CODEC_SUFFIX = {"gzip": ".gz", "zstd": ".zst", "bz2": ".bz2"}
# gzip: ID1 ID2 CM=deflate; zstd: frame magic 0xFD2FB528 (little-endian); bz2: "BZh", a block size
# digit, then the block magic π = 0x314159265359 ("1AY&SY")
_MAGIC = (("gzip", b"\x1f\x8b\x08"), ("zstd", b"\x28\xb5\x2f\xfd"))
_CHUNK = 1 << 17


def split_suffix(name: str) -> tuple[str, str | None]:
    """``("data.jsonl", "gzip")`` for ``"data.jsonl.gz"``; the codec is None for a plain name."""
    low = name.lower()
    for ext, codec in SUFFIXES.items():
        if low.endswith(ext):
            return name[: -len(ext)], codec
    return name, None


def sniff(head: bytes) -> str | None:
    """The codec whose magic number starts ``head`` (None: not compressed, as far as we know)."""
    for codec, magic in _MAGIC:
        if head.startswith(magic):
            return codec
    if len(head) >= 10 and head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bz2"
    return None


class _StreamReader(io.RawIOBase):
    """Concatenated compressed streams (zstd frames, bz2 streams) decoded one decompression object
    at a time: input that ends inside a stream raises ``EOFError``; the decoder raises on bytes
    that do not start a valid stream."""

    def __init__(self, fh, new_decoder):
        self._fh = fh
        self._new = new_decoder
        self._obj = new_decoder()
        self._in_frame = False
        self._buf = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            self._in_frame = True
            out.append(self._obj.decompress(chunk))
            if not self._obj.eof:
                break
            chunk = self._obj.unused_data          # a further frame may follow in the same chunk
            self._obj = self._new()
            self._in_frame = False
        return b"".join(out)

    def readinto(self, b) -> int:
        while not self._buf:
            if self._done:
                return 0
            chunk = self._fh.read(_CHUNK)
            if not chunk:
                self._done = True
                if self._in_frame:
                    raise EOFError("the input ended inside a compressed stream")
                return 0
            self._buf = memoryview(self._feed(chunk))
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            super().close()


class _Checked(io.RawIOBase):
    """Reads of a decoder whose failures become :class:`InputFormatError` naming the file."""

    def __init__(self, inner, raw, codec: str | None, label: str):
        self._inner = inner
        self._raw = raw           # the file under the decoder (gzip and bz2 do not close it)
        self._read1 = getattr(inner, "read1", None) if codec == "gzip" else None
        self._codec = codec
        self._label = label

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            if self._read1 is not None:   # one decoder step: the data before a truncation comes out first
                data = self._read1(len(b))
                n = len(data)
                b[:n] = data
            else:
                n = self._inner.readinto(b)
        except EOFError as exc:
            raise InputFormatError(f"{self._label}: truncated {self._codec} stream: it ends before its "
                                   f"end-of-stream marker ({exc}); the file is incomplete") from None
        except (OSError, zlib.error, ValueError) as exc:
            what = f"corrupt {self._codec} stream" if self._codec else "read error"
            msg = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise InputFormatError(f"{self._label}: {what} ({msg})") from None
        except Exception as exc:  # zstandard.ZstdError and other codec errors
            raise InputFormatError(f"{self._label}: corrupt {self._codec} stream ({exc})") from None
        return n

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._inner.close()
        finally:
            try:
                self._raw.close()
            finally:
                super().close()


class _Prefixed(io.RawIOBase):
    """A raw stream whose first bytes were already taken (to sniff them) and are given back first:
    pipes cannot seek back."""

    def __init__(self, prefix: bytes, fh):
        self._prefix = memoryview(prefix)
        self._fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return self._fh.readinto(b)

    def read(self, size: int = -1) -> bytes:   # gzip and bz2 call read(), not readinto()
        if self._prefix:
            n = len(self._prefix) if size is None or size < 0 else min(size, len(self._prefix))
            out = bytes(self._prefix[:n])
            self._prefix = self._prefix[n:]
            return out
        return self._fh.read(size)

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            super().close()


def _read_head(fh, n: int) -> bytes:
    """Up to ``n`` first bytes (several reads: a pipe may deliver fewer at a time)."""
    parts, got = [], 0
    while got < n:
        chunk = fh.read(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class _Unclosed(io.RawIOBase):
    """Standard input, read but never closed by us."""

    def __init__(self, fh):
        self._fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._fh.readinto(b)

    def read(self, size: int = -1) -> bytes:
        return self._fh.read(size)


def open_source(path: str):
    """The raw bytes of a path; ``-`` is standard input (left open when the reader is closed)."""
    if path == "-":
        return _Unclosed(sys.stdin.buffer)
    return open(path, "rb", buffering=0)


def open_read(path: str, codec: str | None, label: str | None = None, sniffed: bool = False) -> io.BufferedReader:
    """A buffered binary reader of the decompressed bytes, integrity-checked to the end.

    ``label`` names the input in messages (default: ``path``). ``sniffed``: the input has no name
    to tell its codec (standard input, a pipe), so the codec is taken from its first bytes;
    otherwise a plain name over compressed bytes (or the reverse) is an error."""
    label = label or path
    try:
        raw = open_source(path)
    except OSError as exc:
        raise InputFormatError(f"{label}: cannot read ({exc.strerror or exc})") from None
    try:
        try:
            head = _read_head(raw, 16)
        except OSError as exc:
            raise InputFormatError(f"{label}: cannot read ({exc.strerror or exc})") from None
        src = _Prefixed(head, raw)
        found = sniff(head)
        if sniffed:
            codec = found
        if codec is None:
            if found is not None:
                raise InputFormatError(f"{label}: the file is {found}-compressed but its name has no "
                                       f"{CODEC_SUFFIX[found]} suffix; rename it (or pipe it through "
                                       f"a decompressor)")
            inner = src
        elif not head:                      # an empty file: no rows, whatever its suffix says
            inner = src
        else:
            if found != codec:
                raise InputFormatError(f"{label}: not a {codec} stream (its name ends in "
                                       f"{CODEC_SUFFIX[codec]}, but it starts with {head[:4]!r})")
            if codec == "gzip":
                inner = gzip.GzipFile(fileobj=src, mode="rb")
            elif codec == "bz2":
                inner = _StreamReader(src, bz2.BZ2Decompressor)
            else:
                inner = _StreamReader(src, zstandard.ZstdDecompressor().decompressobj)
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(_Checked(inner, src, codec, label), buffer_size=_CHUNK)


def open_write(path: str, codec: str | None):
    """A binary writer compressing with ``codec``. gzip headers carry no file name and time 0, so
    equal rows give equal bytes on every run."""
    fh = open(path, "wb")
    try:
        if codec is None:
            return fh
        if codec == "gzip":
            return _Closing(gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0), fh)
        if codec == "bz2":
            return _Closing(bz2.BZ2File(fh, mode="wb"), fh)

        return zstandard.ZstdCompressor(level=3).stream_writer(fh, closefd=True)
    except BaseException:
        fh.close()
        raise


class WriteBehind:
    """``fh.write`` in a thread of its own, up to ``depth`` chunks behind the caller: the system
    call (and a codec's compression, which releases the GIL too) overlaps the caller's reading and
    slicing of the next block. Chunks must not change after they are handed over (``bytes``). An
    error of a write is raised by the next :meth:`write` or by :meth:`close`, which waits for the
    chunks before it; nothing is written after a failed write."""

    def __init__(self, fh, depth: int = 2):
        self._fh = fh
        self._q = queue.Queue(depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="neardup-write", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._q.get()
            if data is None:
                return
            if self._error is None:
                try:
                    self._fh.write(data)
                except BaseException as exc:
                    self._error = exc

    def write(self, data) -> None:
        if self._error is not None:
            self._raise()
        if len(data):
            self._q.put(data)

    def close(self) -> None:
        """Waits for the chunks handed over, then raises the first write's error if one failed (and
        :meth:`write` has not raised it already). A Ctrl-C while it waits is raised once the thread
        has ended, so the file under it is never closed beneath a write."""
        self._stop()
        if self._error is not None and not self._raised:
            self._raise()

    def _stop(self) -> None:
        stop = None
        while self._thread.is_alive():
            try:
                if not self._sent:
                    self._q.put(None)
                    self._sent = True
                self._thread.join()
            except BaseException as exc:  # (raised below, once the thread has ended)
                stop = stop or exc
        if stop is not None:
            raise stop

    _sent = False

    _raised = False

    def _raise(self):
        self._raised = True
        raise self._error

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:                 # the body's own exception goes on; the thread is ended all the same
            self._stop()


class _Closing:
    """A compressing writer that also closes the file under it."""

    def __init__(self, writer, fh):
        self._w = writer
        self._fh = fh

    def write(self, data) -> int:
        return self._w.write(data)

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        try:
            self._w.close()
        finally:
            self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
